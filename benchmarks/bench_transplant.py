"""Cost of the attention transplant per variant, against one plain forward pass of the fine-tuned
checkpoint over the same dev examples (one run).

The transplant scores every variant (one head, one layer, layers k and up, all but layer k, the
first two layers, the intact model) on every example, each starting at its first changed layer
from one intact pass's hidden states, with the pre-trained model run once per batch for its maps
(`harness.model.forward.forward_variants`). The expected cost of a variant of layer k is
(L - k) / L of a pass; ``expected`` is that mean over the variants plus the two whole passes per
batch (the intact model's and the pre-trained model's), shared by the variants. The measured
ratio includes the statistics (Holm, simultaneous intervals, the share's bootstrap).

    GLUE_DIR=../shared/data/glue python -m benchmarks.bench_transplant --task sst2 --model minilm --examples 200
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import torch

from benchmarks.common import Bench, peak_memory_mb, prepare_bench, run_config, synchronise
from harness.analyses.transplant import Transplant, transplant_masks
from harness.inputs.sources.dev import AblationSource
from harness.model.forward import Interventions, first_intervened_layers, forward
from harness.results.checkpoints import FINETUNED, PAIRS
from harness.results.store import ResultStore
from harness.run.engine import analyse


def plain_pass_seconds(bench: Bench) -> float:
    """One plain forward pass (nothing captured) of the fine-tuned checkpoint over the examples the
    transplant scores (the ablation source's batches)."""
    model = next(c for c in bench.checkpoints if c.name == FINETUNED).model
    batches = list(AblationSource(bench.sources).stream().batches)
    synchronise()
    start = time.perf_counter()
    for encoded in batches:
        forward(model, encoded)
    synchronise()
    return time.perf_counter() - start


def transplant_seconds(bench: Bench) -> float:
    """The whole transplant analysis into an empty store, in seconds."""
    with tempfile.TemporaryDirectory() as folder:
        synchronise()
        start = time.perf_counter()
        analyse([Transplant], bench.checkpoints, PAIRS, bench.sources, ResultStore(Path(folder)))
        synchronise()
        return time.perf_counter() - start


def expected_passes(layers: int, heads: int) -> tuple[int, float]:
    """The variants and the passes they cost by the arithmetic of the prefix: each variant (L - k) / L
    of a pass from its first changed layer k, plus the intact and the pre-trained model's whole passes."""
    masks = transplant_masks(layers, heads)
    starts = first_intervened_layers(Interventions(given_heads=masks), layers).double()
    return len(masks), float(((layers - starts) / layers).sum()) + 2.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="sst2")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--finetuned", help="fine-tuned checkpoint folder (default: the cache, else a stand-in)")
    parser.add_argument("--examples", type=int, default=200, help="dev examples the transplant scores")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    config = run_config(args.task, args.model, args.examples)
    config = replace(config, analysis=replace(config.analysis, ablation_examples=args.examples))
    bench = prepare_bench(config, args.finetuned)
    model = bench.checkpoints[0].model.config
    variants, passes = expected_passes(model.num_hidden_layers, model.num_attention_heads)
    plain = plain_pass_seconds(bench)
    sweep = transplant_seconds(bench)
    device = "cuda" if torch.cuda.is_available() else f"cpu ({torch.get_num_threads()} threads)"
    result = {
        "task": args.task,
        "model": args.model,
        "device": device,
        "examples": args.examples,
        "finetuned": bench.finetuned,
        "variants": variants,
        "plain_pass_seconds": plain,
        "transplant_seconds": sweep,
        "ratio_per_variant": sweep / (variants * plain),
        "expected_per_variant": passes / variants,
        **peak_memory_mb(),
    }
    print(f"{args.model} on {args.task}, {device}, {args.examples} examples, fine-tuned: {bench.finetuned}")
    print(
        f"one plain pass {plain:.2f} s; transplant {sweep:.1f} s for {variants} variants: "
        f"{sweep / variants:.3f} s per variant, {result['ratio_per_variant']:.2f} of a pass "
        f"(the prefix's arithmetic: {result['expected_per_variant']:.2f}); peak RSS {result['peak_rss_mb']:.0f} MB"
    )
    if args.out:
        args.out.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
