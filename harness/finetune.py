"""Fine-tuning with the Hugging Face `Trainer`, cached by everything that changes the weights.

The cache folder ``<cache_dir>/<task>-<model>-<key>/`` holds Trainer checkpoints while
training (an interrupted run resumes from the last epoch) and ``final/`` with the model,
tokenizer and ``result.json`` (dev metrics before and after, training curve) once done.
The key hashes the model, the task, the content of the train and dev files, the
hyper-parameters, the seed and the precision, so a second run with the same key loads
``final/`` and trains nothing, and a changed data file trains anew.

``harness finetune`` runs this alone, also under ``torchrun`` / ``accelerate launch`` with
several processes: the Trainer then trains data-parallel, the per-process batch is the
user's batch divided by the number of processes (so the effective batch stays what was
asked for), and only the first process writes files. The layout is recorded with the
checkpoint and in its identity; ``harness run`` picks the checkpoint up from the cache.
"""

from __future__ import annotations

import os
import random
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import DataCollatorWithPadding, Trainer, TrainingArguments
from transformers.tokenization_utils_base import PreTrainedTokenizerBase

from harness.config import FineTuneConfig, RunConfig
from harness.models import load_sequence_classifier, load_tokenizer
from harness.store import key_of, read_json, write_json
from tasks.errors import InputError
from tasks.examples import Example
from tasks.metrics import compute_metrics
from tasks.registry import GlueTask

RESULT_FILE = "result.json"


@dataclass(frozen=True)
class TaskData:
    """The examples of a run's task and what identifies them (files and content hashes, or the hub)."""

    task: GlueTask
    train: list[Example]
    dev: dict[str, list[Example]]  # eval split -> examples
    identity: dict[str, Any]


@dataclass(frozen=True)
class Layout:
    """How the effective batch is spread over processes: world size x per-process batch."""

    world_size: int
    per_device_batch: int

    @classmethod
    def of(cls, settings: FineTuneConfig, world_size: int | None = None) -> Layout:
        world = world_size or int(os.environ.get("WORLD_SIZE", "1"))
        if settings.batch_size % world:
            raise InputError(f"--batch-size {settings.batch_size} cannot be split evenly over {world} processes; "
                             f"use a multiple of {world} so the effective batch stays what you set")
        return cls(world, settings.batch_size // world)


def is_main_process() -> bool:
    """Rank 0 of a torchrun / accelerate launch (or the only process): the one that reports."""
    return int(os.environ.get("RANK", "0")) == 0


@dataclass
class FineTuneResult:
    """Where the fine-tuned checkpoint lies, its cache key, and what training measured."""

    checkpoint_dir: Path
    key: str
    dev_metrics: dict[str, dict[str, float]]  # "pretrained"/"finetuned" -> "split/metric" -> value
    log_history: list[dict[str, Any]]
    train_examples: int
    train_seconds: float
    layout: dict[str, int]


class EncodedExamples(torch.utils.data.Dataset):
    """Tokenised, unpadded examples; `DataCollatorWithPadding` pads each batch to its longest."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase, task: GlueTask, examples: list[Example],
                 max_length: int) -> None:
        self.features = tokenizer(
            [example.text_a for example in examples],
            [example.text_b for example in examples] if task.is_pair else None,
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


def cache_key(config: RunConfig, data: TaskData) -> str:
    """Stable key of everything that changes the fine-tuned weights (the layout aside: the
    effective batch is the same whatever the number of processes)."""
    settings = {"model": config.task.model, "task": config.task.task, "max_length": config.task.max_length,
                "data": data.identity, "precision": config.environment.precision, **asdict(config.finetune)}
    return key_of(settings)


def checkpoint_root(config: RunConfig, key: str) -> Path:
    return config.environment.cache_dir / f"{config.task.task}-{config.model_name}-{key}"


def stored_result(config: RunConfig, data: TaskData) -> FineTuneResult | None:
    """The cached fine-tune of this configuration, if it finished."""
    key = cache_key(config, data)
    final = checkpoint_root(config, key) / "final"
    stored = read_json(final / RESULT_FILE)
    return FineTuneResult(checkpoint_dir=final, key=key, **stored) if isinstance(stored, dict) else None


def training_arguments(config: RunConfig, output_dir: Path, layout: Layout) -> TrainingArguments:
    settings = config.finetune
    precision = config.environment.precision
    return TrainingArguments(
        output_dir=str(output_dir),
        per_device_train_batch_size=layout.per_device_batch,
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
        bf16=precision == "bf16",
        fp16=precision == "fp16",
        use_cpu=config.environment.device == "cpu",
        dataloader_pin_memory=torch.cuda.is_available(),
        ddp_backend="gloo" if not torch.cuda.is_available() and layout.world_size > 1 else None,
    )


def evaluate_splits(trainer: Trainer, task: GlueTask, splits: dict[str, EncodedExamples]) -> dict[str, float]:
    """Dev metrics as ``{"<split>/<metric>": value}`` for every evaluation split."""
    scores = {}
    for split, dataset in splits.items():
        output = trainer.predict(dataset)
        for name, value in compute_metrics(task, output.predictions, output.label_ids).items():
            scores[f"{split}/{name}"] = value
    return scores


def last_checkpoint(root: Path) -> str | None:
    """The newest Trainer checkpoint folder to resume from, if any."""
    checkpoints = sorted(root.glob("checkpoint-*"), key=lambda path: int(path.name.split("-")[-1]))
    return str(checkpoints[-1]) if checkpoints else None


def finetune(config: RunConfig, data: TaskData) -> FineTuneResult:
    """Fine-tune ``config.task.model`` on the task (or reuse the cached result of an identical run)."""
    cached = stored_result(config, data)
    if cached is not None:
        return cached
    key = cache_key(config, data)
    root = checkpoint_root(config, key)
    layout = Layout.of(config.finetune)
    tokenizer = load_tokenizer(config.task.model)
    settings = config.finetune
    train = sample(data.train, settings.max_train_examples, settings.seed)
    dev = {split: EncodedExamples(tokenizer, data.task, examples, config.task.max_length)
           for split, examples in data.dev.items()}
    model = load_sequence_classifier(config.task.model, data.task, head_seed=settings.seed)
    trainer = Trainer(
        model=model,
        args=training_arguments(config, root, layout),
        train_dataset=EncodedExamples(tokenizer, data.task, train, config.task.max_length),
        data_collator=DataCollatorWithPadding(tokenizer),
    )
    before = evaluate_splits(trainer, data.task, dev)
    output = trainer.train(resume_from_checkpoint=last_checkpoint(root))
    after = evaluate_splits(trainer, data.task, dev)
    stored = {
        "dev_metrics": {"pretrained": before, "finetuned": after},
        "log_history": trainer.state.log_history,
        "train_examples": len(train),
        "train_seconds": float(output.metrics.get("train_runtime", 0.0)),
        "layout": asdict(layout),
    }
    final = root / "final"
    trainer.save_model(str(final))  # the Trainer writes on the first process only
    if trainer.is_world_process_zero():
        tokenizer.save_pretrained(str(final))
        write_json(final / RESULT_FILE, _jsonable(stored))
    trainer.accelerator.wait_for_everyone()
    return FineTuneResult(checkpoint_dir=final, key=key, **stored)


def _jsonable(value: Any) -> Any:
    """Trainer logs as plain JSON values (numpy scalars become numbers)."""
    if isinstance(value, dict):
        return {key: _jsonable(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [_jsonable(inner) for inner in value]
    return value.item() if isinstance(value, np.generic) else value
