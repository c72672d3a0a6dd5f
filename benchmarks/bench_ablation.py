"""Cost of the ablation (single heads, single layers, importance, pruning) per mask, against one
plain forward pass of the fine-tuned checkpoint over the same dev examples.

The ablation evaluates hundreds of masked variants of the model, many per forward pass
(`harness.model.forward.forward_variants`); its cost per mask is compared with what one mask would
cost alone: one forward pass over the examples. A ratio of 1 means stacking masks saves
nothing and costs nothing; below 1, the stacked passes are cheaper per mask. Each phase is
repeated ``--rounds`` times in this process; the ratio is of the medians.

    GLUE_DIR=../shared/data/glue python -m benchmarks.bench_ablation --task rte --model minilm --examples 64
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import torch

from benchmarks.common import Bench, dev_batches, peak_memory_mb, prepare_bench, run_config, synchronise
from harness.analyses.ablation import Ablation
from harness.model.forward import forward
from harness.model.loading import Checkpoint
from harness.results.checkpoints import FINETUNED, PAIRS
from harness.results.store import ResultStore
from harness.run.engine import analyse
from harness.views.base import per_checkpoint_results


def forward_seconds(bench: Bench, checkpoint: Checkpoint) -> float:
    """One plain forward pass (nothing captured) of ``checkpoint`` over the bench's dev examples."""
    batches = dev_batches(bench)
    synchronise()
    start = time.perf_counter()
    for encoded in batches:
        forward(checkpoint.model, encoded)
    synchronise()
    return time.perf_counter() - start


def ablation_seconds(bench: Bench) -> tuple[float, int]:
    """The whole ablation analysis into an empty store: its seconds and the masks it evaluated."""
    with tempfile.TemporaryDirectory() as folder:
        synchronise()
        start = time.perf_counter()
        entry = analyse([Ablation], bench.checkpoints, PAIRS, bench.sources, ResultStore(Path(folder)))["ablation"]
        synchronise()
        seconds = time.perf_counter() - start
    return seconds, per_checkpoint_results(entry)[FINETUNED]["variants"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="rte")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--finetuned", help="fine-tuned checkpoint folder (default: the cache, else a stand-in)")
    parser.add_argument("--examples", type=int, default=64, help="dev examples the ablation scores")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    config = run_config(args.task, args.model, args.examples)
    config = replace(config, analysis=replace(config.analysis, ablation_examples=args.examples))
    bench = prepare_bench(config, args.finetuned)
    tuned = next(c for c in bench.checkpoints if c.name == FINETUNED)
    passes = [forward_seconds(bench, tuned) for _ in range(args.rounds)]
    sweeps = [ablation_seconds(bench) for _ in range(args.rounds)]
    forward_median = statistics.median(passes)
    sweep_median = statistics.median(seconds for seconds, _ in sweeps)
    masks = sweeps[0][1]
    device = "cuda" if torch.cuda.is_available() else f"cpu ({torch.get_num_threads()} threads)"
    result = {
        "task": args.task,
        "model": args.model,
        "device": device,
        "examples": len(bench.dev),
        "finetuned": bench.finetuned,
        "masks": masks,
        "forward_seconds": forward_median,
        "ablation_seconds": sweep_median,
        "ratio_per_mask": sweep_median / (masks * forward_median),
        "rounds": {"forward": passes, "ablation": [seconds for seconds, _ in sweeps]},
        **peak_memory_mb(),
    }
    print(f"{args.model} on {args.task}, {device}, {len(bench.dev)} examples, fine-tuned: {bench.finetuned}")
    print(
        f"one forward pass {forward_median:.2f} s; ablation {sweep_median:.1f} s for {masks} masks: "
        f"{sweep_median / masks:.3f} s per mask, ratio per mask {result['ratio_per_mask']:.2f}; "
        f"peak RSS {result['peak_rss_mb']:.0f} MB"
    )
    if args.out:
        args.out.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
