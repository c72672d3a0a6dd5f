"""What each checkpoint kept along fine-tuning costs a run: time and peak memory per extra checkpoint.

A run with ``--trajectory`` streams its sources once with every checkpoint (`harness.run.trajectory`).
Here the run's analyses are timed as `harness.run.trajectory.trajectory` runs them, with 0, 1, ...
``--extra`` checkpoints beside the pre-trained and fine-tuned ones (the fine-tuned weights loaded
again under each step's name: the same cost as a real checkpoint), each count in a fresh process
(its peak memory its own), into an empty results store; the seconds per extra checkpoint are the
slope over the counts, and the ratio is each count's seconds over the run's own (0 extra).

    GLUE_DIR=../shared/data/glue python -m benchmarks.bench_trajectory --task rte --model minilm \\
        --examples 200 --extra 0 1 3 5
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.common import peak_memory_mb, prepare_bench, run_config, synchronise
from harness.model.finetune import FineTuneResult
from harness.model.loading import Checkpoint
from harness.results.checkpoints import FINETUNED, PRETRAINED
from harness.results.store import ResultStore
from harness.run.plan import select_analyses
from harness.run.trajectory import step_name, trajectory


def measure(task: str, model: str, examples: int, extra: int, quick: bool = False) -> dict[str, object]:
    """The run's default analyses (the ablation aside) with ``extra`` checkpoints along the way, in this process."""
    bench = prepare_bench(run_config(task, model, examples, quick=quick))
    named = {checkpoint.name: checkpoint for checkpoint in bench.checkpoints}
    along = [
        Checkpoint(
            step_name(step),
            named[FINETUNED].model,
            {**named[FINETUNED].encoder_identity, "step": step},
            {"trained": True, "step": step},
        )
        for step in range(1, extra + 1)
    ]
    records = [
        {"step": step, "fractions": [step / (extra + 1)], "examples_seen": 0, "of_steps": extra + 1}
        for step in range(1, extra + 1)
    ]
    tuned = FineTuneResult(Path("."), "bench", [], 0, 0.0, {}, trajectory=records)
    with tempfile.TemporaryDirectory() as folder:
        synchronise()
        start = time.perf_counter()
        trajectory(
            select_analyses(None),
            named[PRETRAINED],
            named[FINETUNED],
            along,
            tuned,
            bench.sources,
            ResultStore(Path(folder)),
        )
        synchronise()
        seconds = time.perf_counter() - start
    return {"extra": extra, "examples": len(bench.dev), "seconds": seconds, **peak_memory_mb()}


def in_fresh_process(*arguments: object) -> dict[str, object]:
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(measure, arguments)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="rte")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--examples", type=int, default=200)
    parser.add_argument("--extra", type=int, nargs="+", default=[0, 1, 3, 5])
    parser.add_argument("--quick", action="store_true", help="cap every source as `harness run --quick` does")
    parser.add_argument("--out", type=Path, help="also write the results as JSON here")
    args = parser.parse_args()
    rows = [in_fresh_process(args.task, args.model, args.examples, extra, args.quick) for extra in args.extra]
    base = next((row for row in rows if row["extra"] == 0), rows[0])
    slope = np.polyfit([row["extra"] for row in rows], [row["seconds"] for row in rows], 1)[0] if len(rows) > 1 else 0
    capped = ", every source capped (--quick)" if args.quick else ""
    print(
        f"{args.model} on {args.task}, {base['examples']} dev examples{capped}, every default analysis but the ablation"
    )
    print("| extra checkpoints | seconds | over the run's own | peak RSS, MB | peak GPU, MB |")
    print("|---|---|---|---|---|")
    for row in rows:
        gpu = "-" if row["peak_gpu_mb"] is None else f"{row['peak_gpu_mb']:.0f}"
        print(
            f"| {row['extra']} | {row['seconds']:.1f} | {row['seconds'] / base['seconds']:.2f} | "
            f"{row['peak_rss_mb']:.0f} | {gpu} |"
        )
    print(f"seconds per extra checkpoint (slope): {slope:.1f}")
    if args.out:
        args.out.write_text(json.dumps({"rows": rows, "seconds_per_checkpoint": slope}, indent=1))


if __name__ == "__main__":
    main()
