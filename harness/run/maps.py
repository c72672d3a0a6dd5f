"""Your own sentences through a run's checkpoints (``harness maps``): the attention maps of a text
or pair a user types, every layer and head, of the pre-trained model and the stored fine-tuned
checkpoint, through the forward API the analyses use. The maps are stored in the run's folder
and shown on a page of their own (`harness.present.maps`)."""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import PreTrainedTokenizerBase

from harness.config import RunConfig
from harness.inputs.encoding import encode_examples, token_strings
from harness.inputs.tagging import first_tokens
from harness.model.finetune import stored_result
from harness.model.forward import Capture, forward
from harness.model.loading import load_finetuned, load_sequence_classifier, load_tokenizer, prepare
from harness.present.maps import InputMaps, write_input, write_page
from harness.results.checkpoints import FINETUNED, PRETRAINED
from harness.run.plan import Downloads, RunPlan, plan_run, run_device
from tasks.errors import InputError
from tasks.examples import Example
from tasks.spec import Task


def attention_maps(config: RunConfig, text: str, pair: str | None = None) -> InputMaps:
    """The maps of ``text`` (and ``pair``, its second text) through the checkpoints of the run
    ``config`` describes (its fine-tuned checkpoint must be stored: `harness run` made it), as
    arrays; also stored in the run's folder, and its page of typed inputs redrawn."""
    return typed_maps(plan_run(config, Downloads(allowed=False)), text, pair)  # no corpus is read


def typed_maps(plan: RunPlan, text: str, pair: str | None) -> InputMaps:
    """`attention_maps` of a planned run (its task's data names the fine-tuned checkpoint)."""
    config = plan.config
    tuned = stored_result(plan.config, plan.data)
    if tuned is None:
        raise InputError(
            f"{plan.run_dir.name}: no fine-tuned checkpoint of this run under {config.environment.cache_dir}; "
            "run `harness run` with its flags first"
        )
    tokenizer = load_tokenizer(config.task.model)
    words = text.split() if plan.data.task.is_tagging else None  # a tagger's words: those the spaces part
    first = " ".join(words) if words else text.strip()
    typed = Example("typed", first, pair.strip() if pair else None, 0, "typed", words=tuple(words or ()))
    encoded = encode_examples(tokenizer, [typed], config.task.max_length, pair is not None)
    length = int(encoded.lengths[0])
    whole = len(tokenizer(typed.text_a, typed.text_b)["input_ids"])
    device = run_device(config)
    models = {
        PRETRAINED: load_sequence_classifier(config.task.model, plan.data.task, head_seed=config.finetune.seed),
        FINETUNED: load_finetuned(tuned.checkpoint_dir),
    }
    maps, predictions = {}, {}
    for name, model in models.items():
        model = prepare(model, device, model.dtype)
        output = forward(model, encoded, capture=Capture(attention=True))
        maps[name] = output.captured_attentions[0, :, :, :length, :length].float().cpu().numpy()
        predictions[name] = predicted(plan.data.task, output.logits[0].float().cpu(), tokenizer, typed, length)
    tokens = token_strings(tokenizer, encoded.input_ids[0, :length].tolist())
    result = InputMaps(typed.text_a, typed.text_b, tokens, maps, truncated=whole > length, predictions=predictions)
    store(plan, result)
    return result


def predicted(task: Task, logits: torch.Tensor, tokenizer: PreTrainedTokenizerBase, typed: Example, length: int) -> str:
    """What a checkpoint's head says of the typed input, as its user reads it: the class with its
    probability, the score, or each word's tag (at the word's first sub-token, as it is trained)."""
    if task.is_regression:
        return f"score {float(logits[0]):.3f}"
    if task.is_tagging:
        offsets = tokenizer(typed.text_a, truncation=True, max_length=length, return_offsets_mapping=True)
        tags = logits.argmax(-1).tolist()
        firsts = first_tokens(offsets["offset_mapping"], typed.words)
        return " ".join(
            f"{word}/{task.label_names[tags[at]]}" for word, at in zip(typed.words, firsts) if at is not None
        )
    probabilities = logits.softmax(-1)
    best = int(probabilities.argmax())
    return f"{task.label_names[best]} ({float(probabilities[best]):.2f})"


def store(plan: RunPlan, maps: InputMaps) -> tuple[Path, Path]:
    """The typed input's file in the run's folder, and the redrawn page of the run's typed inputs."""
    plan.run_dir.mkdir(parents=True, exist_ok=True)
    return write_input(plan.run_dir, maps), write_page(plan.run_dir, plan.run_dir.name)
