"""Fine-tuning throughput of the harness's Trainer set-up against the same Trainer padding
every batch to 128 tokens, on the same examples, model and seed, in the same run.

    GLUE_DIR=../shared/data/glue python -m benchmarks.bench_training --task rte --model minilm
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import torch
from transformers import DataCollatorWithPadding, Trainer

from benchmarks.common import run_config
from harness.config import RunConfig
from harness.inputs.sampling import sample
from harness.model.finetune import EncodedExamples, Layout, training_arguments, training_model
from harness.model.loading import load_tokenizer
from harness.run.plan import plan_run


def train_throughput(config: RunConfig, pad_to_max: bool) -> float:
    """Training examples per second of one epoch on ``config``'s training subset (its
    ``group_by_length`` decides the batch order)."""
    plan = plan_run(config)
    tokenizer = load_tokenizer(config.task.model)
    train = sample(plan.data.train, config.finetune.max_train_examples, config.finetune.seed)
    length = config.task.max_length
    collator = (
        DataCollatorWithPadding(tokenizer, padding="max_length", max_length=length)
        if pad_to_max
        else DataCollatorWithPadding(tokenizer)
    )
    with tempfile.TemporaryDirectory() as folder:
        arguments = training_arguments(config, Path(folder), Layout.of(config.finetune))
        arguments.save_strategy = "no"
        arguments.disable_tqdm = True
        model = training_model(config, plan.data.task)
        trainer = Trainer(
            model=model,
            args=arguments,
            data_collator=collator,
            train_dataset=EncodedExamples(tokenizer, plan.data.task, train, length),
        )
        start = time.perf_counter()
        trainer.train()
        return len(train) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="rte")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--train-examples", type=int, default=256)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    config = run_config(args.task, args.model, 1, max_train_examples=args.train_examples, epochs=1)
    grouped = replace(config, finetune=replace(config.finetune, random_order=False))
    setups = {
        "dynamic_padding": (config, False),
        "dynamic_padding_grouped_by_length": (grouped, False),
        "pad_to_128": (config, True),
    }
    # Alternate the set-ups and keep each one's best epoch, so start-up costs (CUDA
    # context, kernel selection, caches) do not count against whichever runs first.
    rounds = [{name: train_throughput(setup, pad) for name, (setup, pad) in setups.items()} for _ in range(2)]
    speeds = {name: max(measured[name] for measured in rounds) for name in setups}
    report = {
        "device": "cuda" if torch.cuda.is_available() else f"cpu ({torch.get_num_threads()} threads)",
        "train_examples_per_second": speeds,
        "speedup_vs_pad_to_128": {name: speed / speeds["pad_to_128"] for name, speed in speeds.items()},
    }
    print(json.dumps(report, indent=2))
    if args.out:
        args.out.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
