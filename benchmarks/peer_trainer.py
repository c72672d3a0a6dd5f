"""The peer baseline for fine-tuning speed: the plain Hugging Face recipe (``run_glue.py``
style) on the same model and examples as ``harness run``: every example padded to 128
tokens, fp32, the model's default attention, random batches, dev evaluated before and after.

    GLUE_DIR=../shared/data/glue python -m benchmarks.peer_trainer --task rte --model minilm --train-examples 1024
"""

from __future__ import annotations

import argparse
import os
import tempfile

import numpy as np
from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments, default_data_collator

from harness.inputs.sampling import sample
from harness.model.loading import load_tokenizer
from harness.model.source import resolve_model
from tasks.loading import load_examples
from tasks.registry import get_task

MAX_LENGTH = 128


def encoded(tokenizer, task, examples) -> list[dict]:
    features = tokenizer(
        [e.text_a for e in examples],
        [e.text_b for e in examples] if task.is_pair else None,
        truncation=True,
        max_length=MAX_LENGTH,
        padding="max_length",
    )
    return [{**{key: values[i] for key, values in features.items()}, "labels": e.label} for i, e in enumerate(examples)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="rte")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--train-examples", type=int, default=1024)
    args = parser.parse_args()
    task = get_task(args.task)
    data_dir = os.environ.get("GLUE_DIR")
    train = sample(load_examples(task, "train", data_dir), args.train_examples, 42)
    dev = load_examples(task, task.main_eval_split, data_dir)
    tokenizer = load_tokenizer(args.model)
    model = AutoModelForSequenceClassification.from_pretrained(resolve_model(args.model), num_labels=task.num_labels)
    with tempfile.TemporaryDirectory() as folder:
        trainer = Trainer(
            model=model,
            data_collator=default_data_collator,
            train_dataset=encoded(tokenizer, task, train),
            args=TrainingArguments(
                output_dir=folder,
                per_device_train_batch_size=32,
                per_device_eval_batch_size=64,
                num_train_epochs=1,
                learning_rate=2e-5,
                warmup_steps=0.1,
                weight_decay=0.01,
                seed=42,
                save_strategy="no",
                report_to="none",
                disable_tqdm=True,
            ),
        )
        dev_set = encoded(tokenizer, task, dev)
        for moment in ("before", "after"):
            if moment == "after":
                trainer.train()
            output = trainer.predict(dev_set)
            print(f"dev accuracy {moment}: {np.mean(output.predictions.argmax(-1) == output.label_ids):.4f}")


if __name__ == "__main__":
    main()
