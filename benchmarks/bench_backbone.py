"""Backbone speed and memory, each as a ratio against a baseline measured in the same run.

1. Fine-tuning throughput: the harness's Trainer set-up (dynamic padding, with and without
   ``--group-by-length``) against the same Trainer padding every batch to 128 tokens, on
   the same examples, model and seed.
2. Attention comparison: streaming both checkpoints' attention through the cosine analysis,
   against the bare forward passes of both models (no attention output) on the same batches.
3. Streaming memory: how far resident memory rises above its level after loading while
   the comparison streams N and 4N examples, each in a fresh process; equal rises mean
   memory does not grow with the number of examples.

    GLUE_DIR=../shared/data/glue python benchmarks/bench_backbone.py --task rte --model minilm
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import time
from dataclasses import replace
from pathlib import Path

import torch
from transformers import DataCollatorWithPadding, Trainer

from harness.analyses.base import AnalysisContext
from harness.analyses.cosine import CosineSimilarity
from harness.attention import stream_attention
from harness.config import FineTuneConfig, RunConfig
from harness.encoding import batched
from harness.finetune import EncodedExamples, sample, training_arguments
from harness.models import load_sequence_classifier, load_tokenizer
from tasks import get_task, load_examples


def train_throughput(config: RunConfig, pad_to_max: bool, output_dir: Path) -> float:
    """Training examples per second of one epoch on ``config``'s training subset (its
    ``group_by_length`` decides the batch order)."""
    task = get_task(config.task)
    tokenizer = load_tokenizer(config.model)
    train = sample(load_examples(task, "train", config.data_dir), config.finetune.max_train_examples, 0)
    torch.manual_seed(config.finetune.seed)
    collator = (DataCollatorWithPadding(tokenizer, padding="max_length", max_length=config.finetune.max_length)
                if pad_to_max else DataCollatorWithPadding(tokenizer))
    arguments = training_arguments(config, output_dir)
    arguments.save_strategy = "no"
    arguments.disable_tqdm = True
    trainer = Trainer(model=load_sequence_classifier(config.model, task), args=arguments,
                      train_dataset=EncodedExamples(tokenizer, train, config.finetune.max_length),
                      data_collator=collator)
    start = time.perf_counter()
    trainer.train()
    return len(train) / (time.perf_counter() - start)


def comparison_seconds(config: RunConfig, examples: int) -> dict[str, float]:
    """Seconds of bare forward passes of both models vs the streamed cosine comparison."""
    task = get_task(config.task)
    tokenizer = load_tokenizer(config.model)
    dev = sample(load_examples(task, task.main_eval_split, config.data_dir), examples, 0)
    torch.manual_seed(0)
    checkpoints = {"pretrained": load_sequence_classifier(config.model, task).eval(),
                   "finetuned": load_sequence_classifier(config.model, task).eval()}
    batches = list(batched(tokenizer, dev, config.analysis.eval_batch_size, config.analysis.max_length))

    start = time.perf_counter()
    with torch.inference_mode():
        for encoded in batches:
            for model in checkpoints.values():
                model(**encoded.model_inputs("cpu"))
    bare = time.perf_counter() - start

    start = time.perf_counter()
    cosine = CosineSimilarity(AnalysisContext(model.config.num_hidden_layers, model.config.num_attention_heads,
                                              tokenizer, checkpoints, task.name))
    for batch in stream_attention(checkpoints, batches):
        cosine.update(batch)
    cosine.result()
    return {"bare_forward_seconds": bare, "comparison_seconds": time.perf_counter() - start}


def streaming_rise_mb(config: RunConfig, examples: int) -> float:
    """Rise of resident memory (MB) while ``examples`` dev examples stream through the
    comparison, in a fresh process (model loading is not counted)."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(_stream_and_measure, (config, examples))


def _resident_mb() -> float:
    return int(Path("/proc/self/statm").read_text().split()[1]) * resource.getpagesize() / 2**20


def _stream_and_measure(config: RunConfig, examples: int) -> float:
    task = get_task(config.task)
    tokenizer = load_tokenizer(config.model)
    dev = sample(load_examples(task, task.main_eval_split, config.data_dir), examples, 0)
    model = load_sequence_classifier(config.model, task).eval()
    checkpoints = {"pretrained": model, "finetuned": model}
    cosine = CosineSimilarity(AnalysisContext(model.config.num_hidden_layers, model.config.num_attention_heads,
                                              tokenizer, checkpoints, task.name))
    before = peak = _resident_mb()
    batches = batched(tokenizer, dev, config.analysis.eval_batch_size, config.analysis.max_length)
    for batch in stream_attention(checkpoints, batches):
        cosine.update(batch)
        peak = max(peak, _resident_mb())  # the batch's attention is still alive here
    return peak - before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="rte")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--train-examples", type=int, default=256)
    parser.add_argument("--eval-examples", type=int, default=256)
    parser.add_argument("--out", type=Path, default=Path("outputs/bench_backbone.json"))
    args = parser.parse_args()
    config = RunConfig(task=args.task, model=args.model, device="cpu" if not torch.cuda.is_available() else None,
                       finetune=FineTuneConfig(max_train_examples=args.train_examples, epochs=1))

    out = args.out.parent / "bench_trainer"
    grouped = replace(config, finetune=replace(config.finetune, group_by_length=True))
    setups = {"dynamic_padding": (config, False), "dynamic_padding_grouped_by_length": (grouped, False),
              "pad_to_128": (config, True)}
    # Alternate the set-ups and keep each one's best epoch, so start-up costs (CUDA
    # context, kernel selection, caches) do not count against whichever runs first.
    rounds = [{name: train_throughput(setup, pad_to_max, out) for name, (setup, pad_to_max) in setups.items()}
              for _ in range(2)]
    speeds = {name: max(measured[name] for measured in rounds) for name in setups}
    timings = comparison_seconds(config, args.eval_examples)
    small, large = streaming_rise_mb(config, args.eval_examples // 4), streaming_rise_mb(config, args.eval_examples)
    report = {
        "device": "cuda" if torch.cuda.is_available() else f"cpu ({torch.get_num_threads()} threads)",
        "train_examples_per_second": speeds,
        "train_speedup_vs_pad128": {name: speed / speeds["pad_to_128"] for name, speed in speeds.items()},
        **timings,
        "comparison_vs_bare_forward": timings["comparison_seconds"] / timings["bare_forward_seconds"],
        "streaming_memory_rise_mb": {f"{args.eval_examples // 4}_examples": small,
                                     f"{args.eval_examples}_examples": large},
        "streaming_memory_ratio_4x_examples": large / small,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
