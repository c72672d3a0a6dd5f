"""Cost of classifying attention maps: the shipped boosted trees against the CNN baseline.

Both classify the same padded batches of row-stochastic maps (both checkpoints' worth of heads,
as the `patterns` analysis calls them), each in its whole path: the trees measure the maps,
the CNN resizes them and measures them. Reported per sequence length: the median seconds of
``--rounds`` calls and the ratio trees / CNN (below 1: the trees are cheaper). The CNN's
weights are untrained (its cost does not depend on them).

    python -m benchmarks.bench_patterns --lengths 64 128 --batch 16
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from benchmarks.common import synchronise
from classifier.model import PatternClassifier, PatternCNN, load_classifier
from classifier.resize import MAX_TOKENS


def seconds_per_call(
    classifier: PatternClassifier,
    attentions: list[torch.Tensor],
    lengths: torch.Tensor,
    second_segments: torch.Tensor,
    rounds: int,
) -> float:
    """Median wall time of ``classifier.predict_batch`` on these batches."""
    times = []
    for _ in range(rounds):
        synchronise()
        start = time.perf_counter()
        classifier.predict_batch(attentions, lengths, second_segments)
        synchronise()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[64, 128])
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    generator = torch.Generator().manual_seed(0)
    kinds = {"trees": load_classifier().to(args.device), "cnn": PatternClassifier(PatternCNN()).to(args.device)}
    print("| tokens | maps | trees (s) | CNN (s) | trees / CNN |\n|---|---|---|---|---|")
    for length in args.lengths:
        if not 2 <= length <= MAX_TOKENS:
            parser.error(f"--lengths: {length} is outside 2..{MAX_TOKENS}")
        shape = (args.batch, args.layers, args.heads, length, length)
        attentions = [torch.randn(shape, generator=generator).softmax(dim=-1).to(args.device) for _ in range(2)]
        lengths = torch.randint(length // 2, length + 1, (args.batch,), generator=generator)
        lengths[0] = length
        second_segments = lengths // 2
        timed = {
            kind: seconds_per_call(classifier, attentions, lengths, second_segments, args.rounds)
            for kind, classifier in kinds.items()
        }
        print(
            f"| {length} | {2 * args.batch * args.layers * args.heads} | {timed['trees']:.3f} | {timed['cnn']:.3f} "
            f"| {timed['trees'] / timed['cnn']:.2f} |"
        )


if __name__ == "__main__":
    main()
