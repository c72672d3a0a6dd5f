"""What freezing a run's long-lived objects saves its figures (`tasks.collector.frozen_heap`), what
collecting young garbage less often saves a command (`collect_less_often`), and what a command's exit
saves (`exit_uncollected`).

A run of the bundled MiniLM (RTE, every default analysis on a quick sample) is made once; then, in
the process that made it, which holds what a run holds (torch, transformers, MLflow, the
checkpoints it loaded), its figures are drawn again and again (`harness.present.redraw.redraw`,
forced), alternating: as the harness draws them, with the objects that existed before drawing
frozen, and with `frozen_heap` replaced by a block that does nothing, so every collection scans
the whole process. Each round prints its seconds and the full collections in it.

The exit: a fresh process imports what a command that loads a model imports (torch, transformers,
MLflow, the analyses) and exits, alternating: as the `harness` executable does (`exit_uncollected`)
and as Python does by itself; each round prints both processes' seconds, whole (start, imports, exit).

The young collections: a tiny run of the model (32 RTE examples, 16 dev, 12 corpus items, no figures)
fine-tuned once, then its analyses in fresh processes, each in an output folder of its own from the
stored checkpoint, alternating: the `harness` executable (`python -m harness`) and `harness.cli.main`
with Python's default thresholds and the same exit; each round prints both processes' CPU seconds.

    GLUE_DIR=../shared/data/glue python -m benchmarks.bench_collector --rounds 3
    GLUE_DIR=../shared/data/glue python -m benchmarks.bench_collector --what collect --rounds 5
    python -m benchmarks.bench_collector --what exit --rounds 5
"""

from __future__ import annotations

import argparse
import gc
import itertools
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from functools import partial
from pathlib import Path
from typing import Any

from harness.cli import main as harness
from harness.present import redraw as redraw_module
from harness.results.run_record import RunSummary
from harness.results.summary import SUMMARY, whole_summary
from tasks.collector import frozen_heap


class FullCollections:
    """The count and seconds of the full (oldest-generation) collections while it is installed."""

    def __init__(self) -> None:
        self.count, self.seconds, self.started = 0, 0.0, 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            self.started = time.perf_counter()
        else:
            self.count += 1
            self.seconds += time.perf_counter() - self.started


# A measurement of one round: its value and the words printed after it (its unit, what else it saw).
Measured = tuple[float, str]


# The drawing's collector block in each kind of redraw round: as runs draw, or a block that does nothing.
COLLECTOR_BLOCKS: dict[str, Callable[[], Any]] = {
    "frozen (the harness)": frozen_heap,
    "collector scans everything": nullcontext,
}


def timed_redraw(summary: RunSummary, out_dir: Path, freeze: Callable[[], Any]) -> Measured:
    """Seconds of one forced redraw with ``freeze`` as the drawing's collector block, and its full collections."""
    redraw_module.frozen_heap = freeze  # the one difference between the two kinds of round
    collections = FullCollections()
    gc.callbacks.append(collections)
    try:
        start = time.perf_counter()
        redraw_module.redraw(summary, out_dir, force=True)
        spent = time.perf_counter() - start
        return spent, f"s, {collections.count} full collections taking {collections.seconds:.1f} s"
    finally:
        gc.callbacks.remove(collections)
        redraw_module.frozen_heap = frozen_heap


def alternating_medians(rounds: int, measures: Mapping[str, Callable[[], Measured]]) -> list[float]:
    """Each of ``measures`` once a round, in turn, each result printed; the medians, in ``measures``' order."""
    values: dict[str, list[float]] = {kind: [] for kind in measures}
    for round_index in range(rounds):
        for kind, measure in measures.items():
            value, said = measure()
            values[kind].append(value)
            print(f"round {round_index + 1}, {kind}: {value:.2f} {said}", flush=True)
    return [statistics.median(kind_values) for kind_values in values.values()]


# A command's imports, then its exit: as the `harness` executable exits, or as Python does by itself.
COMMAND_IMPORTS = "import harness.commands.compute\n"
EXITS = {
    "exit_uncollected (the harness)": COMMAND_IMPORTS
    + "from tasks.collector import exit_uncollected\nexit_uncollected(0)",
    "Python's own exit": COMMAND_IMPORTS + "raise SystemExit(0)",
}


def process_seconds(script: str) -> Measured:
    """The wall seconds of a fresh process running ``script``, start and exit included."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", script], check=True)
    return time.perf_counter() - start, "s"


def exit_rounds(rounds: int) -> None:
    """Alternating fresh processes of each kind of exit; prints each, then the medians and what is saved."""
    measures = {kind: partial(process_seconds, script) for kind, script in EXITS.items()}
    uncollected, own = alternating_medians(rounds, measures)
    saved = own - uncollected
    print(f"median process: exit_uncollected {uncollected:.2f} s, Python's own exit {own:.2f} s: {saved:.2f} s saved")


# The same command, collecting as the executable does or with Python's defaults (the same exit).
COLLECTING = {
    "collect_less_often (the harness)": ["-m", "harness"],
    "Python's default thresholds": [
        "-c",
        "import sys\nfrom harness.cli import main\nfrom tasks.collector import exit_uncollected\n"
        "exit_uncollected(main(sys.argv[1:]))",
    ],
}
TINY_RUN = [
    *("run", "--task", "rte", "--max-train-examples", "32", "--epochs", "1", "--quick", "--no-figures"),
    *("--max-dev-examples", "16", "--max-eval-examples", "8", "--max-corpus-items", "12", "--max-length", "64"),
    *("--probe-train-sentences", "24"),
]


def children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def collect_rounds(rounds: int, model: str) -> None:
    """The tiny run fine-tuned once, then its analyses in alternating fresh processes (the module's docstring)."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        outputs = (root / f"run-{number}" for number in itertools.count())  # each process's own folder

        def run_cpu_seconds(kind: str) -> Measured:
            out = next(outputs)
            places = ["--output-dir", str(out), "--cache-dir", str(root / "cache")]
            argv = [*TINY_RUN, "--model", model, *places, "--tracking-uri", f"sqlite:///{out}/mlflow.db"]
            before = children_cpu_seconds()
            subprocess.run([sys.executable, *COLLECTING[kind], *argv], check=True, capture_output=True)
            return children_cpu_seconds() - before, "CPU s"

        run_cpu_seconds(next(iter(COLLECTING)))  # the fine-tuning, stored for every later process
        measures = {kind: partial(run_cpu_seconds, kind) for kind in COLLECTING}
        less, default = alternating_medians(rounds, measures)
    saved = default - less
    print(f"median CPU: collect_less_often {less:.2f} s, Python's defaults {default:.2f} s: {saved:.2f} s saved")


def redraw_rounds(rounds: int, model: str) -> None:
    """A run of ``model`` made once, then its figures redrawn in this process, alternating (the module's docstring)."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        flags = ["--task", "rte", "--model", model, "--max-train-examples", "64", "--epochs", "1", "--quick"]
        places = ["--output-dir", str(root / "out"), "--cache-dir", str(root / "cache")]
        assert harness(["run", *flags, *places, "--tracking-uri", f"sqlite:///{root}/mlflow.db"]) == 0
        (summary_path,) = (root / "out").glob(f"*/{SUMMARY}")
        summary = whole_summary(summary_path.parent)
        redraws = {
            kind: partial(timed_redraw, summary, root / "redrawn", freeze) for kind, freeze in COLLECTOR_BLOCKS.items()
        }
        frozen, scanned = alternating_medians(rounds, redraws)
    print(f"median redraw: frozen {frozen:.1f} s, scanning everything {scanned:.1f} s: {scanned / frozen:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each kind, alternating")
    parser.add_argument("--model", default="minilm", help="the model of the runs (redraw, collect)")
    parser.add_argument(
        "--what", nargs="+", choices=("redraw", "collect", "exit"), default=["redraw", "collect", "exit"]
    )
    args = parser.parse_args()
    if "redraw" in args.what:
        redraw_rounds(args.rounds, args.model)
    if "collect" in args.what:
        collect_rounds(args.rounds, args.model)
    if "exit" in args.what:
        exit_rounds(args.rounds)


if __name__ == "__main__":
    main()
