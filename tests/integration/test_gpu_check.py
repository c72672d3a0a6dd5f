"""The GPU check (`benchmarks.gpu_check`) with --tiny on this machine: every row filled or skipped with
its reason, the table it printed written to its folder, and the raw numbers reading back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from harness.present.parallel import allowed_cores
from tests.fixtures import GLUE_DIR

pytestmark = [
    pytest.mark.slow,  # five tiny harness commands in a process: 2.5 min on 2 shared, busy cores
    pytest.mark.skipif(not GLUE_DIR.is_dir(), reason=f"real GLUE data not found at {GLUE_DIR}"),
]

REPOSITORY = Path(__file__).resolve().parents[2]
# A fragment of each row's "what" that says which measurement it is.
ROWS = (
    "end to end on RTE",
    "random weights: cosine and syntax",
    "phase: task",
    "phase: figures",
    "phase: MLflow",
    "PNG) in 1 process",
    "one variant a pass",
    "stacked 1024 rows a pass",
    "torchrun --nproc_per_node 2",
)


def table_rows(printed: str) -> list[list[str]]:
    """The cells of each row of the Markdown table in ``printed`` (its header and rule left out)."""
    lines = [line for line in printed.splitlines() if line.startswith("| ")]
    return [[cell.strip() for cell in line.strip("| ").split(" | ")] for line in lines[2:]]


# What the check must set itself (HF_HUB_OFFLINE), or reads as the cores it may use (OMP_NUM_THREADS,
# which the suite sets to each worker's share): without it, the check draws on every core of the machine.
LEFT_OUT = ("HF_HUB_OFFLINE", "OMP_NUM_THREADS")


def check_environment() -> dict[str, str]:
    """This environment without `LEFT_OUT`: the check sets HF_HUB_OFFLINE for everything it runs,
    and draws its parallel figures row on the machine's cores, not a test worker's share of them."""
    return {name: value for name, value in os.environ.items() if name not in LEFT_OUT}


@pytest.fixture(scope="module")
def tiny_check(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess, Path]:
    out = tmp_path_factory.mktemp("gpu_check")
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.gpu_check", "--tiny", "--out", str(out), "--data-dir", str(GLUE_DIR)],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=REPOSITORY,
        env=check_environment(),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done, out


def test_every_row_has_a_number_or_says_why_it_was_skipped(tiny_check):
    done, _ = tiny_check
    assert done.stdout.startswith("machine: ") and f"torch {torch.__version__}" in done.stdout.splitlines()[0]
    rows = table_rows(done.stdout)
    cores = allowed_cores()  # the check's, which runs without the worker's OMP_NUM_THREADS
    parallel = [f"PNG) in {cores} processes"] if cores > 1 else []  # the figures drawn on every core
    for fragment in [*ROWS, *parallel]:
        assert any(fragment in row[0] for row in rows), fragment
    assert sorted(row[2] for row in rows if "end to end" in row[0]) == ["bf16", "fp32"]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    for what, row_device, _, seconds, rate, _, result in rows:
        assert not result.startswith("error"), (what, result)
        if result.startswith("skipped: "):
            continue
        assert row_device == device and float(seconds) >= 0, what
        assert rate == "-" or float(rate.split()[0].replace(",", "")) > 0, what


def test_the_table_and_the_raw_numbers_are_written_to_the_folder(tiny_check):
    done, out = tiny_check
    assert (out / "gpu-check.md").read_text() in done.stdout
    report = json.loads((out / "gpu-check.json").read_text())
    rows = table_rows(done.stdout)
    assert [row["what"] for row in report["rows"]] == [row[0] for row in rows]
    for stored, printed in zip(report["rows"], rows):
        assert printed[3] == ("-" if stored["seconds"] is None else f"{stored['seconds']:.1f}")
    assert report["sizes"]["minilm"] is False and report["machine"]["cpus"] == os.cpu_count()
    measured = [row for row in report["rows"] if not row["result"].startswith("skipped: ")]
    assert all(row["rate"] is None or row["rate"] > 0 for row in measured)
    assert all(row["peak_mb"] > 0 for row in measured if not row["what"].startswith("... phase"))
