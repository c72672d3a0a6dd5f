"""What freezing a run's long-lived objects saves its figures (`tasks.collector.frozen_heap`).

A run of the bundled MiniLM (RTE, every default analysis on a quick sample) is made once; then, in
the process that made it, which holds what a run holds (torch, transformers, MLflow, the
checkpoints it loaded), its figures are drawn again and again (`harness.present.redraw.redraw`,
forced), alternating: as the harness draws them, with the objects that existed before drawing
frozen, and with `frozen_heap` replaced by a block that does nothing, so every collection scans
the whole process. Each round prints its seconds and the full collections in it.

    GLUE_DIR=../shared/data/glue python -m benchmarks.bench_collector --rounds 3
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from harness.cli import main as harness
from harness.present import redraw as redraw_module
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


def timed_redraw(summary: dict[str, Any], out_dir: Path, freeze: Callable[[], Any]) -> tuple[float, FullCollections]:
    """Seconds of one forced redraw with ``freeze`` as the drawing's collector block."""
    redraw_module.frozen_heap = freeze  # the one difference between the two kinds of round
    collections = FullCollections()
    gc.callbacks.append(collections)
    try:
        start = time.perf_counter()
        redraw_module.redraw(summary, out_dir, force=True)
        return time.perf_counter() - start, collections
    finally:
        gc.callbacks.remove(collections)
        redraw_module.frozen_heap = frozen_heap


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="redraws of each kind, alternating")
    parser.add_argument("--model", default="minilm")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        flags = ["--task", "rte", "--model", args.model, "--max-train-examples", "64", "--epochs", "1", "--quick"]
        places = ["--output-dir", str(root / "out"), "--cache-dir", str(root / "cache")]
        assert harness(["run", *flags, *places, "--tracking-uri", f"sqlite:///{root}/mlflow.db"]) == 0
        (summary_path,) = (root / "out").glob("*/summary.json")
        summary = json.loads(summary_path.read_text())
        kinds = {"frozen (the harness)": frozen_heap, "collector scans everything": nullcontext}
        seconds: dict[str, list[float]] = {kind: [] for kind in kinds}
        for round_index in range(args.rounds):
            for kind, freeze in kinds.items():
                spent, collections = timed_redraw(summary, root / "redrawn", freeze)
                seconds[kind].append(spent)
                print(
                    f"round {round_index + 1}, {kind}: {spent:.1f} s, "
                    f"{collections.count} full collections taking {collections.seconds:.1f} s",
                    flush=True,
                )
    frozen, scanned = (statistics.median(values) for values in seconds.values())
    print(f"median redraw: frozen {frozen:.1f} s, scanning everything {scanned:.1f} s: {scanned / frozen:.2f}x")


if __name__ == "__main__":
    main()
