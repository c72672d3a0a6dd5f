"""Time and peak memory of Clark's analyses against the bare forward passes they ride on.

Each phase runs in a fresh process so its peak resident memory (and peak GPU memory) is its
own: ``forward`` streams the dev sample through both checkpoints with attention output and
nothing else; every other phase does the same and feeds the batches to one analysis (or to
all of them), timing the forward passes and the analysis separately in the same run.

    python benchmarks/bench_surface.py --task rte --model minilm --finetuned CHECKPOINT_DIR \
        --examples 1000 --out bench_surface.json

Without ``--finetuned`` the pre-trained model stands in for both checkpoints (said in the output).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

PHASES = ("forward", "surface", "clustering", "gradients", "all")


@dataclass
class Setting:
    task: str
    model: str
    finetuned: str | None
    examples: int
    batch_size: int
    data_dir: str | None
    seed: int


@dataclass
class Measurement:
    phase: str
    examples: int
    forward_seconds: float
    analysis_seconds: float
    peak_rss_mb: float
    peak_gpu_mb: float | None


def load(setting: Setting):
    from harness.finetune import sample
    from harness.models import load_finetuned, load_sequence_classifier, load_tokenizer
    from tasks import get_task, load_examples

    task = get_task(setting.task)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    pretrained = load_sequence_classifier(setting.model, task)
    finetuned = (load_finetuned(setting.finetuned) if setting.finetuned else pretrained)
    checkpoints = {"pretrained": pretrained.to(device).eval(), "finetuned": finetuned.to(device).eval()}
    dev = load_examples(task, task.main_eval_split, Path(setting.data_dir) if setting.data_dir else None)
    return task, load_tokenizer(setting.model), checkpoints, sample(dev, setting.examples, setting.seed)


def measure(setting: Setting, phase: str) -> Measurement:
    """One phase, in this (fresh) process."""
    from harness.analyses import ANALYSES, AnalysisContext
    from harness.attention import AttentionBatch, attention_of
    from harness.config import AnalysisConfig
    from harness.sources import SOURCES, SourceContext

    task, tokenizer, checkpoints, examples = load(setting)
    config = checkpoints["pretrained"].config
    context = AnalysisContext(config.num_hidden_layers, config.num_attention_heads, tokenizer, checkpoints,
                              task.name, seed=setting.seed)
    names = [] if phase == "forward" else ["surface", "clustering", "gradients"] if phase == "all" else [phase]
    analyses = [ANALYSES[name](context) for name in names]
    settings = AnalysisConfig(eval_batch_size=setting.batch_size)
    stream = SOURCES["corpus"](SourceContext(tokenizer, settings, examples, setting.seed))
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    forward = analysis = 0.0
    for encoded in stream.batches:
        start = time.perf_counter()
        batch = AttentionBatch(encoded, {name: attention_of(model, encoded) for name, model in checkpoints.items()})
        forward += time.perf_counter() - start
        start = time.perf_counter()
        for item in analyses:
            item.update(batch)
        analysis += time.perf_counter() - start
    start = time.perf_counter()
    for item in analyses:
        item.result()
    analysis += time.perf_counter() - start
    peak_gpu = torch.cuda.max_memory_allocated() / 2**20 if torch.cuda.is_available() else None
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux
    return Measurement(phase, stream.num_items, forward, analysis, peak_rss, peak_gpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="rte")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--finetuned", help="fine-tuned checkpoint folder (default: the pre-trained model twice)")
    parser.add_argument("--examples", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--data-dir")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--phases", nargs="+", default=list(PHASES), choices=PHASES)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    setting = Setting(args.task, args.model, args.finetuned, args.examples, args.batch_size, args.data_dir, args.seed)
    spawn = multiprocessing.get_context("spawn")  # a fresh process per phase: its own peak memory
    results = []
    for phase in args.phases:
        with spawn.Pool(1) as pool:
            results.append(pool.apply(measure, (setting, phase)))
    baseline = next((r for r in results if r.phase == "forward"), None)
    print(f"{setting.model} on {setting.task}, {results[0].examples} examples, finetuned={setting.finetuned or 'same as pre-trained'}, "
          f"device={'cuda' if torch.cuda.is_available() else 'cpu'}, threads={torch.get_num_threads()}")
    print(f"{'phase':<11}{'forward s':>10}{'analysis s':>11}{'ratio':>7}{'peak RSS MB':>13}{'+ vs forward':>13}{'peak GPU MB':>12}")
    for r in results:
        extra = f"{r.peak_rss_mb - baseline.peak_rss_mb:+.0f}" if baseline else "-"
        gpu = f"{r.peak_gpu_mb:.0f}" if r.peak_gpu_mb is not None else "-"
        print(f"{r.phase:<11}{r.forward_seconds:>10.1f}{r.analysis_seconds:>11.1f}{r.analysis_seconds / r.forward_seconds:>7.2f}"
              f"{r.peak_rss_mb:>13.0f}{extra:>13}{gpu:>12}")
    if args.out:
        args.out.write_text(json.dumps({"setting": asdict(setting), "results": [asdict(r) for r in results]}, indent=2))


if __name__ == "__main__":
    main()
