"""Fine-tuning with the Hugging Face `Trainer`, cached by (model, task, hyper-parameters, seed).

The cache folder ``<cache_dir>/<task>-<model>-<key>/`` holds Trainer checkpoints while
training (an interrupted run resumes from the last epoch) and ``final/`` with the model,
tokenizer and ``result.json`` (dev metrics before and after, training curve) once done; a
second ``run`` with the same key loads ``final/`` and trains nothing.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import DataCollatorWithPadding, PreTrainedModel, Trainer, TrainingArguments
from transformers.tokenization_utils_base import PreTrainedTokenizerBase
from transformers.trainer_utils import get_last_checkpoint

from harness.config import RunConfig
from harness.models import load_sequence_classifier, load_tokenizer
from tasks import Example, GlueTask, load_examples
from tasks.metrics import compute_metrics


@dataclass
class FineTuneResult:
    """Where the fine-tuned checkpoint lies and what training measured."""

    checkpoint_dir: Path
    dev_metrics: dict[str, dict[str, float]]  # "pretrained"/"finetuned" -> split/metric -> value
    log_history: list[dict[str, Any]]
    train_examples: int
    train_seconds: float
    reused: bool


class EncodedExamples(torch.utils.data.Dataset):
    """Tokenised, unpadded examples; `DataCollatorWithPadding` pads each batch to its longest."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase, examples: list[Example], max_length: int) -> None:
        pairs = examples[0].text_b is not None if examples else False
        self.features = tokenizer(
            [example.text_a for example in examples],
            [example.text_b for example in examples] if pairs else None,
            truncation=True, max_length=max_length,
        )
        self.labels = [example.label for example in examples]

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> dict[str, Any]:
        item = {key: values[index] for key, values in self.features.items()}
        item["labels"] = self.labels[index]
        return item


def sample(examples: list[Example], limit: int | None, seed: int) -> list[Example]:
    """A seeded random subset of at most ``limit`` examples (all of them when ``limit`` is None)."""
    if limit is None or limit >= len(examples):
        return examples
    return random.Random(seed).sample(examples, limit)


def checkpoint_dir(config: RunConfig) -> Path:
    key = config.finetune.cache_key(config.model, config.task, config.precision)
    return config.cache_dir / f"{config.task}-{Path(config.model).name}-{key}"


def training_arguments(config: RunConfig, output_dir: Path) -> TrainingArguments:
    settings = config.finetune
    return TrainingArguments(
        output_dir=str(output_dir),
        per_device_train_batch_size=settings.batch_size,
        per_device_eval_batch_size=config.analysis.eval_batch_size * 4,
        num_train_epochs=settings.epochs,
        learning_rate=settings.learning_rate,
        warmup_steps=settings.warmup_ratio,  # a float in [0, 1) is a ratio of the total steps
        weight_decay=settings.weight_decay,
        seed=settings.seed,
        train_sampling_strategy="group_by_length" if settings.group_by_length else "random",
        logging_strategy="steps",
        logging_steps=0.02,  # a ratio: about 50 points on the training curve, however short the run
        save_strategy="epoch",
        save_total_limit=1,
        report_to="none",  # the harness logs to MLflow itself, in its own run
        bf16=config.precision == "bf16",
        fp16=config.precision == "fp16",
        use_cpu=config.device == "cpu",
        dataloader_pin_memory=torch.cuda.is_available(),
    )


def evaluate_splits(trainer: Trainer, task: GlueTask, splits: dict[str, EncodedExamples]) -> dict[str, float]:
    """Dev metrics as ``{"<split>/<metric>": value}`` for every evaluation split."""
    scores = {}
    for split, dataset in splits.items():
        output = trainer.predict(dataset)
        for name, value in compute_metrics(task, output.predictions, output.label_ids).items():
            scores[f"{split}/{name}"] = value
    return scores


def finetune(config: RunConfig, task: GlueTask) -> FineTuneResult:
    """Fine-tune ``config.model`` on ``task`` (or reuse the cached result of an identical run)."""
    root = checkpoint_dir(config)
    final = root / "final"
    if (final / "result.json").is_file():
        stored = json.loads((final / "result.json").read_text())
        return FineTuneResult(checkpoint_dir=final, reused=True, **stored)

    tokenizer = load_tokenizer(config.model)
    settings = config.finetune
    train = sample(load_examples(task, "train", config.data_dir), settings.max_train_examples, settings.seed)
    dev = {split: EncodedExamples(tokenizer, load_examples(task, split, config.data_dir), settings.max_length)
           for split in task.eval_splits}
    torch.manual_seed(settings.seed)  # the new head's initialisation is part of the run
    model: PreTrainedModel = load_sequence_classifier(config.model, task)
    trainer = Trainer(
        model=model,
        args=training_arguments(config, root),
        train_dataset=EncodedExamples(tokenizer, train, settings.max_length),
        data_collator=DataCollatorWithPadding(tokenizer),
    )
    before = evaluate_splits(trainer, task, dev)
    output = trainer.train(resume_from_checkpoint=get_last_checkpoint(str(root)) if root.is_dir() else None)
    after = evaluate_splits(trainer, task, dev)

    stored = {
        "dev_metrics": {"pretrained": before, "finetuned": after},
        "log_history": trainer.state.log_history,
        "train_examples": len(train),
        "train_seconds": float(output.metrics.get("train_runtime", 0.0)),
    }
    trainer.save_model(str(final))
    tokenizer.save_pretrained(str(final))
    (final / "result.json").write_text(json.dumps(stored, indent=2, default=_jsonable))
    return FineTuneResult(checkpoint_dir=final, reused=False, **stored)


def _jsonable(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else str(value)
