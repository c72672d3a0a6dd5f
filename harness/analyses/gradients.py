"""Clark et al.'s gradient-based importance of attention (their Figure 3), per checkpoint.

For each example the loss is back-propagated to the post-softmax attention weights, and
the mean magnitude |dL/d attention| is taken per head over all real rows and the columns of
one token type: [SEP], "." or ",", [CLS], or any other token. Clark used the masked-LM
loss; here a checkpoint gets it when a complete masked-LM head loads from its weights
(``AutoModelForMaskedLM`` from the checkpoint's ``name_or_path``, with nothing missing), with
15% of the ordinary tokens of each input replaced by [MASK] (seeded). Otherwise the task
loss is used: the pre-trained checkpoint's classifier is then untrained (said in the
result), and inputs without labels (``--corpus`` text) give no gradients at all.
Per-example losses are summed, not averaged over the batch, so an example's gradients do
not depend on the batch it is in.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
import transformers
from transformers import AutoModelForMaskedLM, PreTrainedModel

import harness.corpus  # noqa: F401  (registers the "corpus" source this analysis reads)
from harness.analyses.base import Analysis, AnalysisContext, register_analysis
from harness.analyses.surface import SpecialIds, token_masks
from harness.attention import PRETRAINED, AttentionBatch, EncodedBatch

MASK_PROBABILITY = 0.15
CATEGORIES = ("sep", "punct", "cls", "other")
MASKED_LM = "masked-LM"
TASK = "task"
UNTRAINED_TASK = "task (untrained classifier head)"


@dataclass
class LossModel:
    """The model whose loss is differentiated for one checkpoint, and which loss that is."""

    model: PreTrainedModel
    loss: str


def masked_lm_for(model: PreTrainedModel) -> PreTrainedModel | None:
    """The same weights with their masked-LM head, or None when no complete head is stored."""
    source = model.config.name_or_path
    if not source:
        return None
    verbosity = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()  # a missing head is expected, not worth a load report
    try:
        mlm, info = AutoModelForMaskedLM.from_pretrained(source, attn_implementation="eager", output_loading_info=True)
    except (OSError, ValueError):
        return None
    finally:
        transformers.logging.set_verbosity(verbosity)
    if info["missing_keys"]:
        return None
    parameter = next(model.parameters())
    return mlm.to(device=parameter.device, dtype=parameter.dtype).eval()


def mask_tokens(encoded: EncodedBatch, mask_id: int, special: torch.Tensor,
                generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT-style masking of ordinary tokens (at least one per example).

    ``special``: (batch, seq) bool, True on [CLS]/[SEP]/padding. Returns the masked
    ``input_ids`` and the bool (batch, seq) positions that were masked.
    """
    eligible = ~special
    draws = torch.rand(encoded.input_ids.shape, generator=generator)
    masked = (draws < MASK_PROBABILITY) & eligible
    fallback = torch.where(eligible, draws, -1.0).argmax(dim=1)  # one token for examples that drew none
    masked[torch.arange(len(masked)), fallback] |= ~masked.any(dim=1) & eligible.any(dim=1)
    return encoded.input_ids.masked_fill(masked, mask_id), masked


def per_example_loss_sum(logits: torch.Tensor, loss: str, targets: torch.Tensor) -> torch.Tensor:
    """Sum over examples of each example's loss (masked-LM: mean over its masked tokens)."""
    if loss == MASKED_LM:
        token_loss = F.cross_entropy(logits.transpose(1, 2).float(), targets, ignore_index=-100, reduction="none")
        counted = (targets != -100).sum(dim=1).clamp(min=1)
        return (token_loss.sum(dim=1) / counted).sum()
    if logits.shape[-1] == 1:  # regression (STS-B)
        return F.mse_loss(logits.squeeze(-1).float(), targets.float(), reduction="sum")
    return F.cross_entropy(logits.float(), targets.long(), reduction="sum")


def attention_gradients(model: PreTrainedModel, inputs: dict[str, torch.Tensor], loss: str,
                        targets: torch.Tensor) -> torch.Tensor:
    """|dL/d attention|: (batch, layers, heads, seq, seq), float32 CPU.

    Only the attention weights are differentiated (``torch.autograd.grad``), so no parameter
    gradients are accumulated.
    """
    device = next(model.parameters()).device
    with torch.enable_grad():
        outputs = model(**{k: v.to(device) for k, v in inputs.items()}, output_attentions=True)
        total = per_example_loss_sum(outputs.logits, loss, targets.to(device))
        grads = torch.autograd.grad(total, outputs.attentions)
    return torch.stack(grads, dim=1).abs().float().cpu()


def category_means(grads: torch.Tensor, masks: dict[str, torch.Tensor]) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """Mean of ``grads`` (batch, layers, heads, seq, seq) over real rows and each category's columns.

    Returns category -> (means (batch, layers, heads), valid (batch,): the example has such columns).
    """
    real = masks["real"]
    columns = {"sep": masks["sep"], "punct": masks["punct"], "cls": masks["cls"]}
    columns["other"] = real - masks["sep"] - masks["punct"] - masks["cls"]
    # One pass over the large tensor: column sums over real rows, (batch, layers, heads, seq).
    column_sums = (grads * real[:, None, None, :, None]).sum(dim=-2)
    result = {}
    for name, column in columns.items():
        total = (column_sums * column[:, None, None, :]).sum(dim=-1)
        cells = real.sum(dim=1) * column.sum(dim=1)
        result[name] = (total / cells.clamp(min=1)[:, None, None], cells > 0)
    return result


@register_analysis
class GradientImportance(Analysis):
    """Mean |dL/d attention| by token type attended to, per head and layer, for each checkpoint."""

    name = "gradients"
    source = "corpus"

    def __init__(self, context: AnalysisContext) -> None:
        super().__init__(context)
        self.ids = SpecialIds.of(context.tokenizer)
        self.generator = torch.Generator().manual_seed(context.seed)
        self.loss_models: dict[str, LossModel] = {}
        for checkpoint, model in context.checkpoints.items():
            mlm = masked_lm_for(model)
            fallback = UNTRAINED_TASK if checkpoint == PRETRAINED else TASK
            self.loss_models[checkpoint] = LossModel(mlm, MASKED_LM) if mlm is not None else LossModel(model, fallback)
        shape = (len(context.checkpoints), len(CATEGORIES), context.num_layers, context.num_heads)
        self.totals = torch.zeros(shape, dtype=torch.float64)
        self.counts = torch.zeros(shape[:2], dtype=torch.float64)
        self.skipped: dict[str, str] = {}
        self.num_items = 0

    def targets(self, checkpoint: str, batch: AttentionBatch) -> tuple[dict[str, torch.Tensor], torch.Tensor] | None:
        """Model inputs and loss targets for one checkpoint, or None when it has no loss here."""
        encoded = batch.encoded
        inputs = encoded.model_inputs("cpu")  # `attention_gradients` moves them to the model's device
        if self.loss_models[checkpoint].loss == MASKED_LM:
            masks = token_masks(encoded.input_ids, encoded.lengths, self.ids)
            types = {name: mask.bool() for name, mask in masks.items()}
            ordinary = types["real"] & ~types["cls"] & ~types["sep"]
            inputs["input_ids"], masked = mask_tokens(encoded, self.context.tokenizer.mask_token_id,
                                                      ~ordinary, self.generator)
            return inputs, encoded.input_ids.masked_fill(~masked, -100)
        labels = [getattr(item, "label", None) for item in encoded.items]
        if any(label is None for label in labels):
            self.skipped[checkpoint] = "inputs have no task labels and the checkpoint has no masked-LM head"
            return None
        return inputs, torch.tensor(labels)

    def update(self, batch: AttentionBatch) -> None:
        for index, (checkpoint, loss_model) in enumerate(self.loss_models.items()):
            prepared = self.targets(checkpoint, batch)
            if prepared is None:
                continue
            inputs, targets = prepared
            grads = attention_gradients(loss_model.model, inputs, loss_model.loss, targets)
            masks = token_masks(inputs["input_ids"], batch.lengths, self.ids)
            for position, (values, valid) in enumerate(category_means(grads, masks).values()):
                self.totals[index, position] += values[valid].double().sum(dim=0)
                self.counts[index, position] += int(valid.sum())
        self.num_items += len(batch.items)

    def result(self) -> dict[str, Any]:
        means = self.totals / self.counts.clamp(min=1)[:, :, None, None]
        checkpoints = {}
        for index, (checkpoint, loss_model) in enumerate(self.loss_models.items()):
            usable = checkpoint not in self.skipped
            checkpoints[checkpoint] = {
                "loss": loss_model.loss if usable else None,
                "skipped_because": self.skipped.get(checkpoint),
                "per_head": {name: means[index, position].tolist() for position, name in enumerate(CATEGORIES)},
                "per_layer": {name: means[index, position].mean(dim=1).tolist()
                              for position, name in enumerate(CATEGORIES)},
            }
        return {"gradients": {
            "checkpoints": checkpoints,
            "statistic": "mean |dL/d attention weight| over real rows and the columns of each token type",
            "mask_probability": MASK_PROBABILITY,
            "num_items": self.num_items,
            "reference_clark_bert_base": "masked-LM loss: gradients for attention to [SEP] become small from layer 5 on",
        }}

    @staticmethod
    def draw(summary: dict[str, Any], out_dir: Path) -> list[Path]:
        from harness.analyses.clark_figures import draw_gradients

        return draw_gradients(summary, out_dir)
