"""Clark et al.'s gradient-based importance of attention (their Figure 3), per checkpoint.

For each example the loss is back-propagated to the post-softmax attention weights (the
forward API's gradient capture; see `harness.run.engine.GradientTargets` for which loss each
checkpoint gets: masked-LM when it stores a complete masked-LM head, as Clark et al., else
the task loss), and the mean magnitude |dL/d attention| is taken per head over all real
rows and the columns of one token type: [SEP], "." or ",", [CLS], or any other token.
Per-example losses are summed, not averaged over the batch, so an example's gradients do
not depend on the batch it is in. The pre-trained checkpoint's classifier is untrained (said
in the result), and inputs without labels (``--corpus`` text) give no gradients at all
unless the checkpoint has a masked-LM head.
"""

from __future__ import annotations

import numpy as np
import torch

from harness.analyses.base import ATTENTION, GRADIENTS, Analysis, AnalysisContext, register_analysis
from harness.analyses.surface import SpecialIds, token_masks
from harness.inputs.batches import AttentionBatch
from harness.views.base import pair_name
from harness.views.gradients import CATEGORIES, GradientsComparison, GradientsResult, GradientsView


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

    view = GradientsView
    source = "corpus"
    needs = frozenset({ATTENTION, GRADIENTS})
    uses_head = True
    settings_used = ("analysis_seed",)  # seeds the masked-LM masking
    reference = {
        "clark_bert_base": "masked-LM loss: gradients for attention to [SEP] become small from layer 5 on",
        "statistic": "mean |dL/d attention weight| over real rows and the columns of each token type",
    }

    def __init__(self, context: AnalysisContext) -> None:
        super().__init__(context)
        self.ids = SpecialIds.of(context.run_tokenizer)
        shape = (len(context.checkpoints), len(CATEGORIES), context.num_layers, context.num_heads)
        self.totals = torch.zeros(shape, dtype=torch.float64, device=context.device)
        self.counts = torch.zeros(shape[:2], dtype=torch.float64, device=context.device)
        self.losses: dict[str, str] = {}
        self.skipped: dict[str, str] = {}
        self.num_items = 0

    def update(self, batch: AttentionBatch) -> None:
        masks = token_masks(batch.input_ids, batch.lengths, self.ids)
        for index, checkpoint in enumerate(self.context.checkpoints):
            if checkpoint not in batch.gradients:
                self.skipped[checkpoint] = batch.skipped_gradients.get(checkpoint, "no gradients captured")
                continue
            gradients = batch.gradients[checkpoint]
            self.losses[checkpoint] = gradients.loss
            for position, (values, valid) in enumerate(
                category_means(gradients.attention_magnitudes.float(), masks).values()
            ):
                self.totals[index, position] += values[valid].double().sum(dim=0)
                self.counts[index, position] += valid.sum()
        self.num_items += len(batch.items)

    def result(self) -> dict[str, GradientsResult]:
        means = (self.totals / self.counts.clamp(min=1)[:, :, None, None]).cpu()
        results: dict[str, GradientsResult] = {}
        for index, checkpoint in enumerate(self.context.checkpoints):
            usable = checkpoint not in self.skipped
            results[checkpoint] = {
                "loss": self.losses.get(checkpoint) if usable else None,
                "skipped_because": self.skipped.get(checkpoint),
                "per_head": {name: means[index, position].tolist() for position, name in enumerate(CATEGORIES)},
                "per_layer": {
                    name: means[index, position].mean(dim=1).tolist() for position, name in enumerate(CATEGORIES)
                },
                "num_items": self.num_items,
            }
        return results

    @classmethod
    def compare(
        cls, per_checkpoint: dict[str, GradientsResult], pairs: list[tuple[str, str]]
    ) -> dict[str, GradientsComparison]:
        """Per category, the change of the per-layer means (None when either checkpoint had no gradients)."""

        def changed(before: GradientsResult, after: GradientsResult) -> dict[str, list[float]] | None:
            if before["loss"] is None or after["loss"] is None:
                return None
            return {
                category: (
                    np.asarray(after["per_layer"][category]) - np.asarray(before["per_layer"][category])
                ).tolist()
                for category in CATEGORIES
            }

        return {
            pair_name((a, b)): {
                "per_layer_change": changed(per_checkpoint[a], per_checkpoint[b]),
                "losses": [per_checkpoint[a]["loss"], per_checkpoint[b]["loss"]],
            }
            for a, b in pairs
        }
