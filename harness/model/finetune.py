"""Fine-tuning with the Hugging Face `Trainer`, cached by everything that changes the weights.

The cache folder ``<cache_dir>/<task>-<model>-<key>/`` holds Trainer checkpoints while
training (an interrupted run resumes from the last epoch) and ``final/`` with the model,
tokenizer and ``result.json`` (training curve and time) once done. The dev metrics of both
checkpoints come from the analysis pass (`harness.analyses.evaluation`), not from here.
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

import json
import logging
import math
import os
import shutil
import time
import zipfile
from collections.abc import Sized
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, TypedDict, cast

import numpy as np
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from transformers import (
    DataCollatorForTokenClassification,
    DataCollatorWithPadding,
    PreTrainedModel,
    Trainer,
    TrainerCallback,
    TrainingArguments,
)
from transformers.tokenization_utils_base import PreTrainedTokenizerBase
from transformers.trainer_callback import (
    ExportableState,
    PrinterCallback,
    ProgressCallback,
    TrainerState,
)

from harness.config import FineTuneConfig, RunConfig
from harness.inputs.sampling import sample
from harness.inputs.tagging import token_labels
from harness.model.dropout import use_fast_dropout
from harness.model.forward import encoder_layers, use_harness_attention
from harness.model.loading import load_sequence_classifier, load_tokenizer
from harness.results.checkpoints import FINETUNED, FROZEN_ENCODER, RANDOM_INIT
from harness.results.locking import exclusive
from harness.results.store import JsonObject, SourceIdentity, key_of, read_json, read_sealed, write_sealed
from tasks.errors import InputError
from tasks.examples import Example
from tasks.files import DiskFull, writing
from tasks.progress import progress_bar
from tasks.spec import Task

RESULT_FILE = "result.json"
# Settings that do not change the fine-tuned weights, so not in its cache key: which extra
# models to train, and the recipe's name (its learning rate and epochs are in the key).
NOT_IN_WEIGHTS = ("baselines", "recipe")
# Added after checkpoints were cached: in the key only when set, so those keep theirs.
UNSET_NOT_IN_KEY = ("reinit_layers", "trajectory")
TRAJECTORY = "trajectory"  # <checkpoint folder>/trajectory/step-<N>: the model part-way through training
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TaskData:
    """The examples of a run's task and what identifies them (files and content hashes, or the hub)."""

    task: Task
    train: list[Example]
    dev: dict[str, list[Example]]  # eval split -> examples
    identity: SourceIdentity


@dataclass(frozen=True)
class Layout:
    """How the effective batch is spread over processes: world size x per-process batch."""

    world_size: int
    per_device_batch: int

    @classmethod
    def of(cls, settings: FineTuneConfig, world_size: int | None = None) -> Layout:
        world = world_size or int(os.environ.get("WORLD_SIZE", "1"))
        if settings.batch_size % world:
            raise InputError(
                f"--batch-size {settings.batch_size} cannot be split evenly over {world} processes; "
                f"use a multiple of {world} so the effective batch stays what you set"
            )
        return cls(world, settings.batch_size // world)


def is_main_process() -> bool:
    """Rank 0 of a torchrun / accelerate launch (or the only process): the one that reports."""
    return int(os.environ.get("RANK", "0")) == 0


class KeptStep(TypedDict):
    """A checkpoint `TrajectoryCheckpoints` kept part-way through training: its step, the fractions of
    the training steps it stands for, the examples seen by then, the training's total steps, its folder."""

    step: int
    fractions: list[float]
    examples_seen: int
    of_steps: int
    folder: str


class TrainingRecord(TypedDict):
    """What training measured, stored beside the checkpoint (`FineTuneResult`'s fields of the same names)."""

    log_history: list[JsonObject]  # the Trainer's log lines, each of its own keys
    train_examples: int
    train_seconds: float
    layout: dict[str, int]
    trajectory: list[KeptStep]


@dataclass
class FineTuneResult:
    """Where the fine-tuned checkpoint lies, its cache key, and what training measured."""

    checkpoint_dir: Path
    key: str
    log_history: list[JsonObject]  # as `TrainingRecord`
    train_examples: int
    train_seconds: float
    layout: dict[str, int]
    trained_now: bool = False  # False when the checkpoint came from the cache
    trajectory: list[KeptStep] = field(default_factory=list)  # `TrajectoryCheckpoints`' records, by step

    def trajectory_dirs(self) -> list[Path]:
        """The folders of the checkpoints kept part-way through training, earliest first."""
        return [self.checkpoint_dir.parent / TRAJECTORY / point["folder"] for point in self.trajectory]


class QuietProgress(ProgressCallback):
    """The Trainer's progress bars, the training bar counted in examples (so it shows examples/s
    and the time left), with the latest loss on it instead of a printed log dictionary per
    logging step (the whole curve goes to MLflow)."""

    training_bar: Any  # a tqdm bar from the first step (transformers declares it None until then)

    def on_train_begin(self, args, state, control, train_dataloader=None, **kwargs) -> None:
        self.examples_per_step = args.per_device_train_batch_size * args.gradient_accumulation_steps * args.world_size
        if state.is_world_process_zero:
            self.training_bar = progress_bar(
                total=trained_examples(args, state, train_dataloader), unit="ex", desc="fine-tuning", dynamic_ncols=True
            )
        self.current_step = 0

    def on_step_end(self, args, state, control, **kwargs) -> None:
        if state.is_world_process_zero:  # an epoch's last batch may be short: the count stops at the total
            done = (state.global_step - self.current_step) * self.examples_per_step
            self.training_bar.update(min(done, self.training_bar.total - self.training_bar.n))
            self.current_step = state.global_step

    def on_log(self, args, state, control, logs=None, **kwargs) -> None:
        if self.training_bar is not None and logs and "loss" in logs:
            self.training_bar.set_postfix(loss=f"{logs['loss']:.4f}", refresh=False)


def trained_examples(args: TrainingArguments, state: TrainerState, loader: torch.utils.data.DataLoader | None) -> int:
    """How many examples the training passes over: the training set's size times the epochs (an
    epoch's last batch is short, so steps times the batch size would overcount), or the steps'
    batches where ``max_steps`` bounds the training."""
    by_steps = state.max_steps * args.per_device_train_batch_size * args.gradient_accumulation_steps * args.world_size
    if loader is None or args.max_steps > 0 or not isinstance(loader.dataset, Sized):
        return by_steps
    return min(by_steps, round(len(loader.dataset) * args.num_train_epochs))


class EncodedExamples(torch.utils.data.Dataset):
    """Tokenised, unpadded examples; `collator` pads each batch to its longest. A tagging task's
    labels are its words' tags on their first sub-tokens (`harness.inputs.tagging`)."""

    def __init__(
        self, tokenizer: PreTrainedTokenizerBase, task: Task, examples: list[Example], max_length: int
    ) -> None:
        self.features = tokenizer(
            [example.text_a for example in examples],
            [example.text_b for example in examples] if task.is_pair else None,
            truncation=True,
            max_length=max_length,
        )
        self.labels: list[Any] = (  # Any: a class id per example, or a list of token labels (tagging)
            [token_labels(tokenizer, example, max_length) for example in examples]
            if task.is_tagging
            else [example.label for example in examples]
        )

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> dict[str, Any]:  # the Trainer's example: each feature's value, its label
        item = {key: values[index] for key, values in self.features.items()}
        item["labels"] = self.labels[index]
        return item


def cache_key(config: RunConfig, data: TaskData, variant: str = FINETUNED) -> str:
    """Stable key of everything that changes the fine-tuned weights (the layout aside: the
    effective batch is the same whatever the number of processes); a baseline ``variant``
    (`BASELINES`) adds its name."""
    recipe = {
        name: value
        for name, value in asdict(config.finetune).items()
        if name not in NOT_IN_WEIGHTS and not (name in UNSET_NOT_IN_KEY and not value)
    }
    settings = {
        "model": config.task.model,
        "task": data.task.name,
        "max_length": config.task.max_length,
        "data": data.identity,
        "precision": config.environment.precision,
        **recipe,
    }
    return key_of(settings if variant == FINETUNED else {**settings, "variant": variant})


def checkpoint_root(config: RunConfig, key: str, variant: str = FINETUNED) -> Path:
    """The cache folder of the checkpoint of ``key`` (a baseline ``variant``'s name in front)."""
    prefix = "" if variant == FINETUNED else f"{variant}-"
    return config.environment.cache_dir / f"{prefix}{config.task.name}-{config.model_name}-{key}"


def stored_result(config: RunConfig, data: TaskData, variant: str = FINETUNED) -> FineTuneResult | None:
    """The cached fine-tune of this configuration (or of its baseline ``variant``), if it finished."""
    key = cache_key(config, data, variant)
    final = checkpoint_root(config, key, variant) / "final"
    stored = read_sealed(final / RESULT_FILE, f"delete {final.parent} to fine-tune again, or put back what it wrote")
    if stored is None:
        return None
    known = {item.name for item in fields(FineTuneResult)}
    recorded = {name: value for name, value in stored.items() if name in known}  # older files hold dev metrics too
    return FineTuneResult(checkpoint_dir=final, key=key, **recorded)


# Attention kernels while training, cuDNN's left out: it builds an execution plan for each new
# sequence length, and batches padded to their longest bring them by the hundred. On an H200
# (`benchmarks.bench_attention_backends`, each configuration in a fresh process), bf16 with PyTorch's
# choice ran cuDNN's attention at 118 examples/s on its first pass over 60 lengths, and the
# memory-efficient kernel at 891; MiniLM's bf16 fine-tuning on RTE went from 210 to 1,331 examples/s
# with this list (`benchmarks.gpu_check`, fp32 1,130).
TRAINING_ATTENTION = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]


def training_model(config: RunConfig, task: Task, variant: str = FINETUNED) -> PreTrainedModel:
    """The pre-trained model with its new head, set up to train fast (nothing is captured while
    training). On a CPU: the harness's eager attention and `FastDropout` throughout, measured on
    MiniLM/RTE with 2 cores at 39 vs 33 examples/s (bf16, against transformers' eager) and 22
    vs 19 (fp32, against SDPA, whose CPU dropout falls back to torch's slow one). On a GPU, or
    with ``torch_dropout``: transformers' kernels (SDPA; eager under CPU bf16, where it is faster).

    Baselines: `FROZEN_ENCODER` trains the head alone (the encoder, pooler included, keeps its
    pre-trained weights: Kovaleva et al.'s "pre-trained, frozen"); `RANDOM_INIT` starts every
    weight from the seed."""
    on_cpu = trains_on_cpu(config)
    fast = on_cpu and not config.finetune.torch_dropout
    attention = "eager" if fast or (on_cpu and config.environment.precision == "bf16") else "sdpa"
    model = load_sequence_classifier(
        config.task.model, task, head_seed=config.finetune.seed, attention=attention, random_init=variant == RANDOM_INIT
    )
    if variant == FROZEN_ENCODER:
        model.base_model.requires_grad_(False)
    if config.finetune.reinit_layers:
        reinitialise_top(model, config.finetune.reinit_layers, config.finetune.seed)
    return use_fast_dropout(use_harness_attention(model)) if fast else model


def reinitialise_top(model: PreTrainedModel, layers: int, seed: int) -> None:
    """The pooler (where the model has one) and the top ``layers`` encoder layers drawn afresh
    from the model's own initialisation, seeded (Mosbach et al. 2021, Zhang et al. 2021: the
    pre-trained top layers specialise to the pre-training objective). transformers marks loaded
    weights as initialised and its initialisers skip those, so the marks are cleared first."""
    modules = [*encoder_layers(model)[-layers:], *filter(None, [getattr(model.base_model, "pooler", None)])]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        for module in modules:
            for tensor in [*module.parameters(), *module.buffers()]:
                tensor._is_hf_initialized = False
            module.apply(model._init_weights)


def trains_on_cpu(config: RunConfig) -> bool:
    return config.environment.device == "cpu" or not torch.cuda.is_available()


def training_arguments(config: RunConfig, output_dir: Path, layout: Layout) -> TrainingArguments:
    """The Trainer's arguments for the run's recipe, precision and process layout."""
    settings = config.finetune
    if settings.epochs is None or settings.learning_rate is None:
        raise ValueError("training needs the recipe resolved for the task (FineTuneConfig.resolved)")
    precision = config.environment.precision
    return TrainingArguments(
        output_dir=str(output_dir),
        per_device_train_batch_size=layout.per_device_batch,
        num_train_epochs=settings.epochs,
        learning_rate=settings.learning_rate,
        warmup_steps=settings.warmup_ratio,  # a float in [0, 1) is a ratio of the total steps
        weight_decay=settings.weight_decay,
        seed=settings.seed,
        # Length-grouped batches are still random (shuffled mega-batches of 50 batches, sorted
        # within): every example once per epoch, batch size and schedule unchanged, far less padding.
        train_sampling_strategy="random" if settings.random_order else "group_by_length",
        logging_strategy="steps",
        logging_steps=0.02,  # a ratio: about 50 points on the training curve, however short the run
        save_strategy="epoch",
        save_total_limit=1,
        report_to="none",  # the harness logs to MLflow itself, in its own run
        disable_tqdm=False,  # our bars, whatever the library log level
        bf16=precision == "bf16",
        fp16=precision == "fp16",
        use_cpu=trains_on_cpu(config),  # the Trainer needs it said for bf16 on a CPU
        dataloader_pin_memory=torch.cuda.is_available(),
        ddp_backend="gloo" if not torch.cuda.is_available() and layout.world_size > 1 else None,
    )


def safetensors_complete(path: Path) -> bool:
    """Whether a .safetensors file holds all the bytes its header promises (a kill while
    writing leaves it short)."""
    size = path.stat().st_size
    with path.open("rb") as handle:
        prefix = handle.read(8)
        if len(prefix) < 8:
            return False
        header_size = int.from_bytes(prefix, "little")
        if 8 + header_size > size:
            return False
        try:
            header = json.loads(handle.read(header_size))
        except ValueError:
            return False
    ends = [entry["data_offsets"][1] for name, entry in header.items() if name != "__metadata__"]
    return 8 + header_size + max(ends, default=0) == size


def checkpoint_complete(folder: Path) -> bool:
    """Whether a Trainer checkpoint folder was written to the end: its state parses, its
    weights have every byte, and its optimizer and scheduler archives are whole zip files."""
    weights = folder / "model.safetensors"
    archives = [folder / "optimizer.pt", folder / "scheduler.pt"]
    return (
        isinstance(read_json(folder / "trainer_state.json"), dict)
        and weights.is_file()
        and safetensors_complete(weights)
        and all(path.is_file() and zipfile.is_zipfile(path) for path in archives)
    )


def last_checkpoint(root: Path) -> str | None:
    """The newest complete Trainer checkpoint folder to resume from, if any. Incomplete ones
    (a kill while the Trainer wrote them) are renamed ``incomplete-checkpoint-N`` by the
    first process, with a one-line note, so no later run trips on them."""
    checkpoints = sorted(root.glob("checkpoint-*"), key=lambda path: int(path.name.split("-")[-1]))
    for folder in reversed(checkpoints):
        if checkpoint_complete(folder):
            return str(folder)
        if is_main_process():
            aside = folder.with_name(f"incomplete-{folder.name}-{time.strftime('%Y%m%d-%H%M%S')}")
            folder.rename(aside)
            log.warning(
                "set aside the incomplete Trainer checkpoint %s (interrupted while written) as %s", folder, aside.name
            )
    return None


def kept_step(fraction: float, max_steps: int) -> int:
    """The training step ``--trajectory``'s ``fraction`` keeps: the nearest, at least step 1."""
    return max(1, round(fraction * max_steps))


def training_steps(settings: FineTuneConfig, examples: int) -> int:
    """The optimiser steps a fine-tuning of ``examples`` takes in one process, as the Trainer counts
    them: the batches of an epoch (the last one short) times the epochs, rounded up."""
    return math.ceil(settings.epochs * math.ceil(examples / settings.batch_size))  # type: ignore[operator]


class TrajectoryCheckpoints(TrainerCallback):
    """The model at the steps nearest the given fractions of the training steps (at least step
    1), each written whole to ``<root>/trajectory/step-<N>`` (a temporary folder renamed into
    place), on the first process: a resumed run replays the same steps from the same state and
    keeps what an earlier session wrote."""

    def __init__(self, root: Path, fractions: list[float]) -> None:
        self.folder = root / TRAJECTORY
        self.fractions = fractions
        self.at_step: dict[int, list[float]] = {}

    def on_train_begin(self, args, state, control, **kwargs) -> None:
        self.at_step = {}
        for fraction in self.fractions:
            self.at_step.setdefault(kept_step(fraction, state.max_steps), []).append(fraction)

    def on_step_end(self, args, state, control, model=None, **kwargs) -> None:
        fractions = self.at_step.get(state.global_step)
        target = self.folder / f"step-{state.global_step}"
        if fractions is None or not state.is_world_process_zero or (target / RESULT_FILE).is_file():
            return
        partial = target.with_name(f"{target.name}.partial-{os.getpid()}")
        shutil.rmtree(partial, ignore_errors=True)
        model.save_pretrained(str(partial))
        examples = (
            state.global_step * args.per_device_train_batch_size * args.gradient_accumulation_steps * args.world_size
        )
        write_sealed(
            partial / RESULT_FILE,
            {"step": state.global_step, "fractions": fractions, "examples_seen": examples, "of_steps": state.max_steps},
        )
        shutil.rmtree(target, ignore_errors=True)  # a folder without its record was cut short
        partial.rename(target)

    def records(self) -> list[KeptStep]:
        """What each kept checkpoint is (its record and folder name), by step: `on_step_end` wrote each
        record, so it is taken at its word."""
        refit = f"delete {self.folder.parent} to fine-tune again"
        return [
            cast(KeptStep, {**read_sealed(self.folder / f"step-{step}" / RESULT_FILE, refit), "folder": f"step-{step}"})  # type: ignore[dict-item]
            for step in sorted(self.at_step)
        ]


class NoCheckpointAfterLastEpoch(TrainerCallback):
    """Epoch checkpoints exist to resume an interrupted run; after the last epoch ``final/``
    is written instead, so the Trainer's own checkpoint (weights plus optimizer state, three
    times the model's size) would be written only to be deleted."""

    def on_epoch_end(self, args, state, control, **kwargs) -> None:
        if state.global_step >= state.max_steps:
            control.should_save = False


class TrainingClock(TrainerCallback, ExportableState):
    """Seconds spent training, carried across resumes: the Trainer stores this callback's
    state in every checkpoint's ``trainer_state.json``, and `resumed_seconds` reads it back,
    so an interrupted and resumed run reports the time of both parts, not only the last."""

    def __init__(self, earlier_seconds: float = 0.0) -> None:
        self.earlier_seconds = earlier_seconds
        self.started: float | None = None

    def on_train_begin(self, args, state, control, **kwargs) -> None:
        self.started = time.perf_counter()

    @property
    def seconds(self) -> float:
        """Training seconds so far, those of earlier (interrupted) sessions included."""
        return self.earlier_seconds + (time.perf_counter() - self.started if self.started is not None else 0.0)

    def state(self) -> dict[str, Any]:  # transformers' ExportableState: its args and attributes, as it reads them
        return {"args": {"earlier_seconds": self.seconds}, "attributes": {}}


def resumed_seconds(checkpoint: str | None) -> float:
    """Training seconds recorded in a checkpoint by `TrainingClock` (0 without a checkpoint)."""
    if checkpoint is None:
        return 0.0
    stored = read_json(Path(checkpoint) / "trainer_state.json") or {}
    return float(
        stored.get("stateful_callbacks", {}).get(TrainingClock.__name__, {}).get("args", {}).get("earlier_seconds", 0.0)
    )


def finetune(config: RunConfig, data: TaskData, variant: str = FINETUNED) -> FineTuneResult:
    """Fine-tune ``config.task.model`` on the task (or reuse the cached result of an identical
    run); ``variant``: the fine-tune itself or one of Kovaleva et al.'s `BASELINES`.

    A single process holds a lock file beside the cache folder while it trains, so an
    identical command started meanwhile waits and then reuses the checkpoint. (Under
    torchrun the processes of one launch share the folder by design and take no lock.)
    """
    root = checkpoint_root(config, cache_key(config, data, variant), variant)
    if Layout.of(config.finetune).world_size > 1:
        return stored_result(config, data, variant) or train(config, data, variant)
    with exclusive(root.with_name(root.name + ".lock"), f"fine-tuning {root.name}"):
        return stored_result(config, data, variant) or train(config, data, variant)


def train(config: RunConfig, data: TaskData, variant: str = FINETUNED) -> FineTuneResult:
    """Train (resuming from the last complete epoch checkpoint) and store ``final/``."""
    key = cache_key(config, data, variant)
    root = checkpoint_root(config, key, variant)
    layout = Layout.of(config.finetune)
    tokenizer = load_tokenizer(config.task.model)
    settings = config.finetune
    train_examples = sample(data.train, settings.max_train_examples, settings.seed)
    model = training_model(config, data.task, variant)
    resume_from = last_checkpoint(root)
    clock = TrainingClock(resumed_seconds(resume_from))
    trajectory = TrajectoryCheckpoints(root, settings.trajectory or [])
    trainer = Trainer(
        model=model,
        args=training_arguments(config, root, layout),
        train_dataset=EncodedExamples(tokenizer, data.task, train_examples, config.task.max_length),
        data_collator=DataCollatorForTokenClassification(tokenizer)
        if data.task.is_tagging
        else DataCollatorWithPadding(tokenizer),
        callbacks=[clock, NoCheckpointAfterLastEpoch(), trajectory],
    )
    for printer in (ProgressCallback, PrinterCallback):  # whichever the log level chose
        trainer.remove_callback(printer)
    trainer.add_callback(QuietProgress())
    weights = weight_bytes(model)
    try:  # an epoch checkpoint: the weights and Adam's two moments (fp32), so about three times the weights
        with writing(root, "the Trainer's epoch checkpoint", 3 * weights), sdpa_kernel(TRAINING_ATTENTION):
            trainer.train(resume_from_checkpoint=resume_from)
    except DiskFull:
        if trainer.is_world_process_zero():
            remove_incomplete_checkpoints(root)
        raise
    stored: TrainingRecord = {
        "log_history": trainer.state.log_history,
        "train_examples": len(train_examples),
        "train_seconds": clock.seconds,
        "layout": asdict(layout),
        "trajectory": trajectory.records() if trainer.is_world_process_zero() else [],
    }
    final = root / "final"
    with writing(final, "the fine-tuned checkpoint", weights):  # result.json last: a cut-short final/ is not used
        trainer.save_model(str(final))  # the Trainer writes on the first process only
        if trainer.is_world_process_zero():
            tokenizer.save_pretrained(str(final))
            write_sealed(final / RESULT_FILE, _jsonable(stored))
        for folder in root.glob("checkpoint-*"):  # resuming is over: final/ holds the model
            shutil.rmtree(folder)
    trainer.accelerator.wait_for_everyone()
    return FineTuneResult(checkpoint_dir=final, key=key, trained_now=True, **stored)


def weight_bytes(model: PreTrainedModel) -> int:
    """The bytes of the model's weights: the size of its saved ``model.safetensors``."""
    return sum(tensor.numel() * tensor.element_size() for tensor in model.state_dict().values())


def remove_incomplete_checkpoints(root: Path) -> None:
    """Delete the Trainer checkpoints under ``root`` that a full disk cut short: they hold no
    state to resume from and only take the space the rerun needs."""
    for folder in root.glob("checkpoint-*"):
        if not checkpoint_complete(folder):
            shutil.rmtree(folder, ignore_errors=True)


def leave_process_group() -> None:
    """Tear down the torchrun process group once all training is over. Left to interpreter exit,
    a rank that finishes while rank 0 still evaluates can abort in the group's destructor
    ("terminate called without an active exception", seen on a loaded CI machine)."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()


def _jsonable(value: Any) -> Any:  # Any: a Trainer log value, of any JSON shape
    """Trainer logs as plain JSON values (numpy scalars become numbers)."""
    if isinstance(value, dict):
        return {key: _jsonable(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [_jsonable(inner) for inner in value]
    return value.item() if isinstance(value, np.generic) else value
