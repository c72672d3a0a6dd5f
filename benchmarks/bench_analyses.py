"""Cost of the analyses against the bare model passes they ride on, and their peak memory.

Each phase runs in a fresh process (so its peak memory is its own): the bare passes of both
checkpoints over the dev sample (no attention captured): forward only, and, when an analysis
needs attention gradients, a forward and the backward pass to the input embeddings; then
`harness.run.engine.analyse` exactly as ``harness run`` calls it (sources tokenised, attention and
gradients captured through the forward API, analyses updated, results stored) for the chosen
analyses, into an empty results store. Two ratios: the analysis phase over the bare forward
passes, and over the bare model work it needs (forward, plus backward for gradients); each
phase is repeated ``--rounds`` times and the ratios are of the medians.

    GLUE_DIR=../shared/data/glue python benchmarks/bench_analyses.py --task rte --model minilm \\
        --analyses cosine patterns surface gradients clustering --examples 250 1000
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import tempfile
import time
from pathlib import Path

import torch

from benchmarks.common import bare_model_seconds, peak_memory_mb, prepare_bench, run_config, synchronise
from harness.analyses import ANALYSES
from harness.analyses.base import GRADIENTS
from harness.results.checkpoints import PAIRS
from harness.results.store import ResultStore
from harness.run.engine import analyse

TASK_SOURCE_ANALYSES = ["cosine", "patterns", "surface", "gradients", "clustering", "vig"]


def measure(task: str, model: str, examples: int, finetuned: str | None, analyses: list[str]) -> dict[str, object]:
    """One phase in this (fresh) process: bare forward passes, or the given analyses."""
    bench = prepare_bench(run_config(task, model, examples), finetuned)
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    bare = bare_model_seconds(bench)
    needs_backward = any(GRADIENTS in ANALYSES[name].needs for name in analyses)
    model = bare_model_seconds(bench, backward=True) if needs_backward else bare
    seconds = 0.0
    if analyses:
        with tempfile.TemporaryDirectory() as folder:
            synchronise()
            start = time.perf_counter()
            analyse(
                [ANALYSES[name] for name in analyses],
                bench.checkpoints,
                PAIRS,
                bench.sources,
                ResultStore(Path(folder)),
            )
            synchronise()
            seconds = time.perf_counter() - start
    return {
        "analyses": analyses,
        "examples": len(bench.dev),
        "bare_forward_seconds": bare,
        "bare_model_seconds": model,
        "analysis_seconds": seconds,
        "ratio_over_forward": seconds / bare,
        "ratio_over_model": seconds / model,
        "finetuned": bench.finetuned,
        **peak_memory_mb(),
    }


def median_of(rounds: list[dict[str, object]]) -> dict[str, object]:
    """One result with the median of every timing and ratio over the rounds (a shared machine's
    load comes and goes: one round can be off by a quarter), the largest peak memory, and the
    rounds themselves."""
    timed = ("bare_forward_seconds", "bare_model_seconds", "analysis_seconds")
    medians = {key: statistics.median(r[key] for r in rounds) for key in timed}
    gpu = [r["peak_gpu_mb"] for r in rounds if r["peak_gpu_mb"] is not None]
    peaks = {"peak_rss_mb": max(r["peak_rss_mb"] for r in rounds), "peak_gpu_mb": max(gpu) if gpu else None}
    return {
        **rounds[0],
        **medians,
        **peaks,
        "ratio_over_forward": medians["analysis_seconds"] / medians["bare_forward_seconds"],
        "ratio_over_model": medians["analysis_seconds"] / medians["bare_model_seconds"],
        "rounds": [{key: r[key] for key in timed} for r in rounds],
    }


def in_fresh_process(*arguments: object) -> dict[str, object]:
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(measure, arguments)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="rte")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--finetuned", help="fine-tuned checkpoint folder (default: the cache, else a stand-in)")
    parser.add_argument("--examples", type=int, nargs="+", default=[250])
    parser.add_argument("--analyses", nargs="+", default=TASK_SOURCE_ANALYSES)
    parser.add_argument("--each", action="store_true", help="also measure every analysis on its own")
    parser.add_argument("--rounds", type=int, default=3, help="fresh-process repeats; medians are reported")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    phases = [args.analyses] + ([[name] for name in args.analyses] if args.each else [])
    results = [
        median_of([in_fresh_process(args.task, args.model, count, args.finetuned, phase) for _ in range(args.rounds)])
        for count in args.examples
        for phase in phases
    ]
    device = "cuda" if torch.cuda.is_available() else f"cpu ({torch.get_num_threads()} threads)"
    print(f"{args.model} on {args.task}, device {device}, fine-tuned: {results[0]['finetuned']}")
    print(
        f"{'analyses':<48}{'examples':>9}{'forward s':>10}{'model s':>8}{'total s':>9}{'/forward':>9}{'/model':>7}"
        f"{'peak RSS MB':>12}{'peak GPU MB':>12}"
    )
    for result in results:
        gpu = f"{result['peak_gpu_mb']:>12.0f}" if result["peak_gpu_mb"] is not None else f"{'-':>12}"
        print(
            f"{' '.join(result['analyses']):<48}{result['examples']:>9}{result['bare_forward_seconds']:>10.1f}"
            f"{result['bare_model_seconds']:>8.1f}{result['analysis_seconds']:>9.1f}{result['ratio_over_forward']:>9.2f}"
            f"{result['ratio_over_model']:>7.2f}{result['peak_rss_mb']:>12.0f}{gpu}"
        )
    if args.out:
        args.out.write_text(json.dumps({"device": device, "results": results}, indent=2))


if __name__ == "__main__":
    main()
