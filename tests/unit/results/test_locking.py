"""Lock files between real processes: a second process says once whose work it waits for, a
holder killed with SIGKILL leaves no stale lock, and no lock file stays after its work."""

from __future__ import annotations

import fcntl
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from harness.results.locking import exclusive, owner_file

ROOT = Path(__file__).resolve().parents[3]
WHAT = "fine-tuning rte-tiny"
HOLD = f"""
import sys, time
from pathlib import Path
from harness.results.locking import exclusive
with exclusive(Path(sys.argv[1]), {WHAT!r}):
    print("held", flush=True)
    time.sleep(60)
"""


def holding(lock: Path) -> subprocess.Popen:
    """A process that holds ``lock`` until it is killed (once it says so)."""
    process = subprocess.Popen([sys.executable, "-c", HOLD, str(lock)], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert process.stdout.readline() == "held\n"
    return process


def test_a_second_process_waits_naming_the_work_and_the_holder_then_takes_the_lock_of_a_killed_one(tmp_path, caplog):
    lock = tmp_path / "locks" / "run-abc.lock"
    holder = holding(lock)
    assert owner_file(lock).read_text() == str(holder.pid)
    threading.Timer(0.5, holder.kill).start()  # SIGKILL: nothing of the holder's runs, the kernel drops its lock
    started = time.monotonic()
    with caplog.at_level(logging.WARNING), exclusive(lock, WHAT):
        waited = time.monotonic() - started
        assert owner_file(lock).read_text() == str(os.getpid())
    holder.wait()
    assert 0.3 < waited < 30
    assert [record.getMessage() for record in caplog.records] == [
        f"{WHAT} is in progress in another process (pid {holder.pid}, lock {lock}); waiting for it to finish"
    ]
    assert not owner_file(lock).exists()


def test_the_lock_of_a_holder_killed_before_is_free_at_once(tmp_path, caplog):
    lock = tmp_path / "run-abc.lock"
    holder = holding(lock)
    holder.kill()
    holder.wait()
    assert owner_file(lock).read_text() == str(holder.pid)  # what SIGKILL leaves: a pid, not a held lock
    started = time.monotonic()
    with caplog.at_level(logging.WARNING), exclusive(lock, WHAT):
        assert time.monotonic() - started < 1
    assert caplog.records == []


RELEASE = f"""
import sys, time
from pathlib import Path
from harness.results.locking import exclusive
with exclusive(Path(sys.argv[1]), {WHAT!r}):
    print("held", flush=True)
    sys.stdin.readline()
print("released", flush=True)
time.sleep(60)
"""


def test_no_lock_file_stays_and_a_waiter_locks_the_file_the_path_names_after_its_holder_removed_it(tmp_path):
    """The holder removes the lock and pid files as it lets go; this process, waiting on the file
    it opened before, then holds the file the path names (made anew), and removes it in turn."""
    lock = tmp_path / "locks" / "run-abc.lock"
    holder = subprocess.Popen(
        [sys.executable, "-c", RELEASE, str(lock)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    assert holder.stdout.readline() == "held\n"
    waited = threading.Timer(0.5, lambda: (holder.stdin.write("\n"), holder.stdin.flush()))
    waited.start()
    with exclusive(lock, WHAT):
        assert holder.stdout.readline() == "released\n"  # it let go, and its files went with it
        probe = os.open(lock, os.O_RDWR)  # the file the path names now is the one this process holds
        with pytest.raises(BlockingIOError):
            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.close(probe)
        assert owner_file(lock).read_text() == str(os.getpid())
        assert sorted(path.name for path in lock.parent.iterdir()) == ["run-abc.lock", "run-abc.lock.pid"]
    holder.kill()
    holder.wait()
    assert list(lock.parent.iterdir()) == []
