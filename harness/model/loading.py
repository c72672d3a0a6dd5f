"""Loading encoders by Hugging Face id, local path or alias, as named `Checkpoint`s.

Every model the harness analyses runs its attention through `harness.model.forward` (see
`use_harness_attention`), so attention can be captured and intervened on without editing
model code. A `Checkpoint` is a loaded model with a name ("pretrained", "finetuned", ...)
and an identity (the fine-tune cache key, or the hash of the weights files) that keys its
results in the store.
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, cast

import torch
import transformers
from safetensors import SafetensorError, safe_open
from transformers import PretrainedConfig, PreTrainedModel
from transformers.models.auto import (
    AutoConfig,
    AutoModelForMaskedLM,
    AutoModelForSequenceClassification,
    AutoModelForTokenClassification,
    AutoTokenizer,
)
from transformers.models.auto.modeling_auto import (
    MODEL_FOR_MASKED_LM_MAPPING,
    MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING,
)
from transformers.tokenization_utils_base import PreTrainedTokenizerBase
from transformers.utils import cached_file

from harness.model.forward import device_of, use_harness_attention
from harness.model.source import BUNDLED_HINT, resolve_model, unreachable_hint
from harness.results.store import CheckpointIdentity, FileHashes, key_of
from tasks.errors import InputError, clipped
from tasks.hub_reach import hub_unreachable, read_cache_only_if_unreachable
from tasks.spec import Task

REPAIR_MODEL = "download the model again, or save it again with save_pretrained"
# How torch.save's pre-1.6 pickle format begins: protocol 2, then its magic number 0x1950a86a20f9469cfc6c.
LEGACY_TORCH_START = b"\x80\x02\x8a\x0a" + (0x1950A86A20F9469CFC6C).to_bytes(10, "little")
WEIGHTS_NAMES = ("model.safetensors", "pytorch_model.bin")
WEIGHTS_INDEXES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")


def read_cache_only_if_offline(source: str) -> None:
    """For a hub id, with the hub unreachable: every later hub access reads the local caches at once."""
    if not Path(source).exists():
        read_cache_only_if_unreachable()


def _load_error(name: str, error: Exception) -> InputError:
    if Path(name).exists():
        hint = "is it a folder written by save_pretrained (config.json and weights)?"
        where = "local path"
    elif (unreachable := hub_unreachable()) is not None:
        hint = unreachable_hint(unreachable)
        where = "model id"
    else:
        hint = f"offline or a typo? {BUNDLED_HINT}"
        where = "model id or path"
    return InputError(f"could not load {where} {name!r} ({type(error).__name__}: {str(error).splitlines()[0]}); {hint}")


def check_model_folder(source: str) -> None:
    """A local model folder must hold a config that parses and whole weights (said while the
    run is planned, before an MLflow run or a lock exists, not as a loading error after them)."""
    folder = Path(source)
    if not folder.is_dir():
        return
    if not (folder / "config.json").is_file():
        raise InputError(f"{folder}: no config.json; --model needs a folder written by save_pretrained (or a hub id)")
    files = weights_files(source)
    if not files:
        raise InputError(
            f"{folder}: no weights (model.safetensors or pytorch_model.bin); save the model there "
            "with save_pretrained, or point --model at the folder that has them"
        )
    check_config_file(folder / "config.json")
    for path in files:
        check_weights_file(path)


def check_config_file(path: Path) -> None:
    """``config.json`` must be a JSON object."""
    try:
        config = json.loads(path.read_bytes())
    except OSError as error:
        raise InputError(f"{path}: cannot be read ({error.strerror}); check its permissions") from None
    except (ValueError, RecursionError) as error:  # JSON and UTF-8 errors are ValueErrors
        raise InputError(f"{path}: not valid JSON ({clipped(str(error))}); {REPAIR_MODEL}") from None
    if not isinstance(config, dict):
        raise InputError(f"{path}: a JSON {type(config).__name__}, not an object; {REPAIR_MODEL}")


def check_weights_file(path: Path) -> None:
    """A weights file must be whole, told without reading its tensors: safetensors checks that
    its header's tensors cover the file exactly; a zip (``torch.save``) is read up to its
    central directory, which is written last. The pre-1.6 pickle format has no such mark."""
    try:
        if path.suffix == ".safetensors":
            with safe_open(path, framework="pt"):
                pass
        else:
            with path.open("rb") as handle:
                legacy = handle.read(len(LEGACY_TORCH_START)) == LEGACY_TORCH_START
            if not legacy:
                zipfile.ZipFile(path).close()
    except (SafetensorError, zipfile.BadZipFile, OSError) as error:
        raise InputError(f"{path}: cut short or damaged ({clipped(str(error))}); {REPAIR_MODEL}") from None


def check_model(name: str, lengths: dict[str, int]) -> PretrainedConfig:
    """The model can be found, is an encoder, and a length flag (``{"--max-length": 128}``) fits
    its position embeddings; returns its config (reads only the model's config and, in a local
    folder, its weights files' headers)."""
    source = resolve_model(name)
    check_model_folder(source)
    read_cache_only_if_offline(source)
    try:
        config = AutoConfig.from_pretrained(source)
    except Exception as error:  # hub/IO errors come in many types
        raise _load_error(source, error) from error
    check_encoder(name, config)
    positions = config.max_position_embeddings
    for flag, value in lengths.items():
        if value > positions:
            raise InputError(f"{flag} {value}: {name} has {positions} position embeddings; use at most {positions}")
    return config


def check_encoder(name: str, config: PretrainedConfig) -> None:
    """The model must be a bidirectional encoder (one with a masked-LM form, not a decoder or an
    encoder-decoder): the analyses read every token's attention to every other token."""
    kind = config.model_type
    decoder, both = getattr(config, "is_decoder", False), getattr(config, "is_encoder_decoder", False)
    if decoder or both or type(config) not in MODEL_FOR_MASKED_LM_MAPPING:  # built in, or registered (extensions)
        shape = "an encoder-decoder" if both else "a decoder-only model"
        raise InputError(
            f"--model {name}: a {kind} model is {shape}; the harness analyses bidirectional encoders "
            "(BERT, RoBERTa, XLM-R, DistilBERT, ALBERT, ELECTRA, DeBERTa, ModernBERT, ...), see "
            "docs/models.md"
        )


def training_attention(source: str, wanted: str) -> str:
    """``wanted`` ("sdpa" or "eager"), or "eager" where the architecture has no SDPA attention (DeBERTa)."""
    if wanted != "sdpa":
        return wanted
    config = AutoConfig.from_pretrained(source)
    # transformers types the lazy mapping's values as (config, model) pairs; a lookup returns the model class
    model_class = cast("type[PreTrainedModel]", MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING[type(config)])
    return "sdpa" if model_class._supports_sdpa else "eager"


def load_tokenizer(name: str) -> PreTrainedTokenizerBase:
    """The fast tokenizer of a model (word ids are needed by the word-level analyses)."""
    source = resolve_model(name)
    try:
        return AutoTokenizer.from_pretrained(source, use_fast=True)
    except Exception as error:  # hub/IO errors come in many types
        raise _load_error(source, error) from error


def load_sequence_classifier(
    name: str, task: Task, head_seed: int, attention: str = "eager", random_init: bool = False
) -> PreTrainedModel:
    """A pre-trained encoder with a new sequence-classification (or regression, or per-token) head for ``task``.

    The head is initialised from ``head_seed`` without touching the global random state, so
    the pre-trained checkpoint evaluated before fine-tuning and the one analysed later are
    the same model. ``attention``: the transformers implementation to load with ("eager",
    or "sdpa" for training); the analyses switch it to the harness's. ``random_init``: the
    same architecture with every weight drawn from ``head_seed`` instead (the model's own
    initialisation), for the random-initialisation baseline.
    """
    source = resolve_model(name)
    labels: dict[str, Any] = {  # AutoConfig's keyword arguments, of their several types
        "num_labels": task.num_labels,
        "problem_type": "regression" if task.is_regression else "single_label_classification",
    }
    if task.label_names:
        labels |= {
            "id2label": dict(enumerate(task.label_names)),
            "label2id": {label: index for index, label in enumerate(task.label_names)},
        }
    try:
        attention = training_attention(source, attention)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(head_seed)
            if random_init:
                config = AutoConfig.from_pretrained(source, **labels)
                return head_class(task).from_config(config, attn_implementation=attention)
            # a model folder with a head of other labels (a model fine-tuned before) gets a new head, as any
            return head_class(task).from_pretrained(
                source, attn_implementation=attention, ignore_mismatched_sizes=True, **labels
            )
    except Exception as error:
        raise _load_error(source, error) from error


def head_class(task: Task) -> type[AutoModelForTokenClassification | AutoModelForSequenceClassification]:
    """The Auto class of ``task``'s head: a class (or score) per input, or per token for a tagging task."""
    return AutoModelForTokenClassification if task.is_tagging else AutoModelForSequenceClassification


def load_finetuned(checkpoint_dir: str | Path) -> PreTrainedModel:
    """A fine-tuned checkpoint (``harness.model.finetune`` writes them), with its trained head (a
    token-classification one where its config says so)."""
    try:
        architectures = AutoConfig.from_pretrained(checkpoint_dir).architectures or []
        tagging = any(name.endswith("ForTokenClassification") for name in architectures)
        auto = AutoModelForTokenClassification if tagging else AutoModelForSequenceClassification
        return auto.from_pretrained(checkpoint_dir, attn_implementation="eager")
    except Exception as error:
        raise _load_error(str(checkpoint_dir), error) from error


def weights_files(source: str) -> list[Path]:
    """The weights files of a local model folder or of a hub model in the local cache (each shard
    of a sharded one)."""
    folder = Path(source)
    if folder.is_dir():
        for pattern in ("*.safetensors", "*.bin"):
            if found := sorted(folder.glob(pattern)):
                return found
        return []
    for name in WEIGHTS_NAMES:
        resolved = cached_file(source, name, _raise_exceptions_for_missing_entries=False)
        if resolved:
            return [Path(resolved)]
    for name in WEIGHTS_INDEXES:  # sharded: every shard its index names, in the order a local folder lists them
        index = cached_file(source, name, _raise_exceptions_for_missing_entries=False)
        if index:
            shards = sorted(set(json.loads(Path(index).read_text())["weight_map"].values()))
            return [Path(path) for shard in shards if (path := cached_file(source, shard))]  # each, or it raises
    return []


def pretrained_identity(name: str, hashes: FileHashes) -> CheckpointIdentity:
    """Identity of a pre-trained encoder: its source and the hash of its weights files."""
    source = resolve_model(name)
    files = weights_files(source)
    return {"model": name, "weights_sha256": key_of([hashes(path) for path in files], 64) if files else source}


@dataclass
class Checkpoint:
    """A loaded model under a name, ready for `harness.model.forward`.

    ``encoder_identity`` keys results that depend on the encoder only (attention);
    ``identity`` adds the classification head, for results that use its logits or loss
    (an untrained head is identified by the seed that initialised it).
    """

    name: str
    model: PreTrainedModel
    encoder_identity: CheckpointIdentity
    head: CheckpointIdentity = field(default_factory=dict)

    @property
    def identity(self) -> CheckpointIdentity:
        """``encoder_identity`` with the classification head's identity under ``"head"``."""
        return {**self.encoder_identity, "head": self.head}

    @property
    def head_trained(self) -> bool:
        """Whether the classification head is a trained one (the fine-tuned checkpoint's), not seeded at random."""
        return bool(self.head.get("trained"))

    @cached_property
    def masked_lm(self) -> PreTrainedModel | None:
        """The same weights with their masked-LM head, or None when no complete head is stored
        (a fine-tuned checkpoint, or an encoder published without it)."""
        source = self.model.config.name_or_path
        if not source:
            return None
        verbosity = transformers.logging.get_verbosity()
        transformers.logging.set_verbosity_error()  # a missing head is expected, not worth a load report
        try:
            mlm, info = AutoModelForMaskedLM.from_pretrained(
                source, attn_implementation="eager", output_loading_info=True
            )
        except (OSError, ValueError):
            return None
        finally:
            transformers.logging.set_verbosity(verbosity)
        if info["missing_keys"]:
            return None
        parameter = next(self.model.parameters())
        return use_harness_attention(mlm.to(device=parameter.device, dtype=parameter.dtype).eval())


def prepare(model: PreTrainedModel, device: torch.device, dtype: torch.dtype) -> PreTrainedModel:
    """Evaluation mode on ``device`` in ``dtype``, attention through the harness."""
    # transformers decorates PreTrainedModel.to with functools.wraps(Module.to), whose type keeps the unbound self
    return use_harness_attention(model.to(device=device, dtype=dtype).eval())  # type: ignore[call-arg]


def checkpoint_device(checkpoints: list[Checkpoint]) -> torch.device:
    """The device of the first checkpoint's model, where a run puts all its checkpoints."""
    return device_of(checkpoints[0].model)
