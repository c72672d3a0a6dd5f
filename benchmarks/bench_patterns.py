"""Cost of classifying every attention map against the forward passes that produce them.

Streams a dev sample through both checkpoints exactly as ``harness run`` does and, per batch,
times the forward passes with attention output and then the patterns analysis (resizing every
head's map of both checkpoints and one CNN call), in the same run on the same batches.

    GLUE_DIR=../shared/data/glue python benchmarks/bench_patterns.py --task stsb --model minilm \
        --finetuned CHECKPOINT_DIR --examples 1000

Without ``--finetuned`` the pre-trained model stands in for the fine-tuned one (same
architecture and cost; said in the output).
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from harness.analyses.base import AnalysisContext
from harness.analyses.patterns import AttentionPatterns
from harness.attention import FINETUNED, PRETRAINED, AttentionBatch, attention_of
from harness.encoding import batched
from harness.finetune import sample
from harness.models import load_finetuned, load_sequence_classifier, load_tokenizer
from tasks import get_task, load_examples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="stsb")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--finetuned", help="fine-tuned checkpoint folder (default: the pre-trained model again)")
    parser.add_argument("--examples", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--threads", type=int, help="torch CPU threads (default: torch's choice)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    task = get_task(args.task)
    tokenizer = load_tokenizer(args.model)
    finetuned = (load_finetuned(args.finetuned) if args.finetuned else load_sequence_classifier(args.model, task))
    checkpoints = {PRETRAINED: load_sequence_classifier(args.model, task).eval(), FINETUNED: finetuned.eval()}
    config = checkpoints[PRETRAINED].config
    examples = sample(load_examples(task, task.main_eval_split), args.examples, 0)
    analysis = AttentionPatterns(AnalysisContext(config.num_hidden_layers, config.num_attention_heads,
                                                 tokenizer, checkpoints, task.name))

    forward_seconds = classify_seconds = 0.0
    maps = 0
    for encoded in batched(tokenizer, examples, args.batch_size, args.max_length):
        start = time.perf_counter()
        batch = AttentionBatch(encoded, {name: attention_of(model, encoded) for name, model in checkpoints.items()})
        middle = time.perf_counter()
        analysis.update(batch)
        forward_seconds += middle - start
        classify_seconds += time.perf_counter() - middle
        maps += 2 * len(encoded.items) * config.num_hidden_layers * config.num_attention_heads
    report = {
        "task": task.name, "model": args.model, "examples": len(examples),
        "finetuned": args.finetuned or "pre-trained model stands in (same cost)",
        "maps_classified": maps, "threads": torch.get_num_threads(),
        "forward_seconds": round(forward_seconds, 2), "classify_seconds": round(classify_seconds, 2),
        "classify_over_forward": round(classify_seconds / forward_seconds, 3),
        "classify_share_of_total": round(classify_seconds / (forward_seconds + classify_seconds), 3),
        "maps_per_second": round(maps / classify_seconds),
        "pattern_proportions": analysis.result()["pattern_proportions"],
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
