"""Progress bars with standard error redirected to a file: whole lines only, a line at least every
interval while a stage runs (during one long step with no update too), and one when it ends."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from tasks.progress import LogBar, progress_bar

INTERVAL = 0.2  # seconds between two lines, for the test; a minute in a run
PATIENCE = 60.0  # how long a test waits for a line before it fails (a loaded machine is slow, not wrong)


def wait_for_lines(log: Path, count: int) -> str:
    """The log once it holds ``count`` lines (or after `PATIENCE` seconds)."""
    deadline = time.monotonic() + PATIENCE
    while log.read_text().count("\n") < count and time.monotonic() < deadline:
        time.sleep(INTERVAL / 4)
    return log.read_text()


def test_a_long_step_writes_lines_before_the_stage_ends(tmp_path, monkeypatch):
    log = tmp_path / "stderr.log"
    with log.open("w") as redirected:
        monkeypatch.setattr(sys, "stderr", redirected)
        bar = progress_bar(total=10, desc="fine-tuning", unit="ex", mininterval=INTERVAL)
        assert isinstance(bar, LogBar)
        bar.update(1)
        during = wait_for_lines(log, 3)  # one long step: no update while these are written
        bar.update(9)
        bar.close()
    lines = log.read_text().splitlines()
    assert during.count("\n") >= 3 and lines[:3] == during.splitlines()[:3]
    assert all(line.startswith("fine-tuning:  10%") and " 1/10 " in line for line in during.splitlines())
    assert lines[-1].startswith("fine-tuning: 100%") and " 10/10 " in lines[-1]
    assert "\r" not in log.read_text()


def test_a_closed_bar_writes_nothing_more_and_a_short_one_writes_one_line(tmp_path):
    log = tmp_path / "stderr.log"
    with log.open("w") as redirected:
        bar = LogBar(total=3, desc="task", unit="ex", mininterval=INTERVAL, file=redirected)
        bar.update(1)
        wait_for_lines(log, 1)
        bar.update(2)
        bar.close()
        written = log.read_text()
        time.sleep(3 * INTERVAL)
        assert log.read_text() == written and not bar.timer.is_alive()
        quick = LogBar(total=2, desc="syntax", unit="ex", file=redirected)  # done within its minute
        quick.update(2)
        quick.close()
    (last,) = log.read_text()[len(written) :].splitlines()
    assert last.startswith("syntax: 100%") and written.splitlines()[-1].startswith("task: 100%")
