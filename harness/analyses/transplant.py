"""The attention transplant: the fine-tuned model scored with the pre-trained model's attention.

On the main dev split (`harness.inputs.sources.dev.AblationSource`, the ablation's examples),
the fine-tuned model runs with the post-softmax attention of one head, one layer, every layer
from k up, every layer but k, all layers, or the first two layers given the pre-trained model's
maps of the same batch (`harness.model.forward.Interventions`' given heads; the engine captures
the donor's maps in one pass per batch, `harness.run.engine.variant_scorer`), its values, output
projections and feed-forward layers its own. Every variant is scored on every example once, many
per forward pass, each starting at its first changed layer from the intact pass's hidden states
(`harness.model.forward.forward_variants`: a variant of layer k costs about (L - k) / L of a pass).

Each family (heads; layer k alone; layers k and up; every layer but k) is tested against the
intact model with `harness.analyses.significance` (paired McNemar or permutation p-values,
Holm's correction) and shown with simultaneous Bonferroni intervals; the share of the gain
over the majority class kept with all attention pre-trained, and the first two layers against
the last two, with 95% paired bootstrap intervals (percentiles over the same resamples of the
examples). A tagging task's units are its words, each scored at its first sub-token, as the
`evaluation` analysis scores them. What a stored transplant says: `harness.views.transplant`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from harness.analyses.base import INTERVENES, Analysis, AnalysisContext, register_analysis
from harness.analyses.evaluation import majority_predictions
from harness.analyses.significance import (
    bootstrap_differences,
    bootstrap_metric_rows,
    holm,
    metric_rows,
    paired_differences,
)
from harness.inputs.batches import AttentionBatch, EncodedBatch
from harness.inputs.tagging import IGNORED, batch_tags
from harness.model.forward import Interventions
from harness.views.base import pair_name
from harness.views.evidence import EffectVerdict, interval_of, interval_verdict
from harness.views.transplant import (
    ALPHA,
    EDGE_LAYERS,
    LAYER_FAMILIES,
    ROWS,
    ShareKept,
    TransplantFamily,
    TransplantPair,
    TransplantResult,
    TransplantView,
    encode,
    family_rows,
    store_predictions,
    variant_count,
)
from tasks.metrics import predictions_from_logits

SHARE_KEPT = 0.5  # "keeps most of its gain": over half of it


def transplant_masks(layers: int, heads: int) -> torch.Tensor:
    """(V, layers, heads) bool: which heads take the donor's maps in each variant, in the order
    `harness.views.transplant.ROWS` stores them."""
    masks = torch.zeros(variant_count(layers, heads), layers, heads, dtype=torch.bool)
    masks[family_rows("heads", layers, heads)].view(layers * heads, layers * heads).fill_diagonal_(True)
    for layer in range(layers):
        masks[family_rows("alone", layers, heads).start + layer, layer] = True
        masks[family_rows("from", layers, heads).start + layer, layer:] = True
        masks[family_rows("all_but", layers, heads).start + layer] = True
        masks[family_rows("all_but", layers, heads).start + layer, layer] = False
    masks[family_rows("first_two", layers, heads).start, :EDGE_LAYERS] = True
    return masks


def family_statistics(
    metric: str, predictions: np.ndarray, intact: np.ndarray, labels: np.ndarray, shape: tuple[int, ...]
) -> TransplantFamily[Any]:  # Any: the grids of ``shape``, as numpy's tolist gives them
    """One family's scores, changes, simultaneous intervals, p-values and Holm's adjustment, as
    grids of ``shape``; how many members help and hurt after Holm."""
    differences = paired_differences(metric, predictions, intact, labels)
    intervals = differences.simultaneous
    adjusted = holm(differences.p_values)
    significant = adjusted < ALPHA
    return {
        "score": metric_rows(metric, predictions, labels).reshape(shape).tolist(),
        "delta": differences.differences.reshape(shape).tolist(),
        "low": intervals[:, 0].reshape(shape).tolist(),
        "high": intervals[:, 1].reshape(shape).tolist(),
        "p": differences.p_values.reshape(shape).tolist(),
        "p_holm": adjusted.reshape(shape).tolist(),
        "helps": int((significant & (differences.differences > 0)).sum()),
        "hurts": int((significant & (differences.differences < 0)).sum()),
    }


def share_kept(
    metric: str, everything: np.ndarray, intact: np.ndarray, majority: np.ndarray, labels: np.ndarray, unit: str
) -> ShareKept:
    """The share of the intact model's gain over the majority class that ``everything`` (all
    attention pre-trained) keeps, (score - majority) / (intact - majority), with its 95% interval
    over bootstrap resamples of the units (those where the gain is not positive left out, and
    counted); ``holds`` when the interval lies above one half, ``fails`` below it."""
    rows = np.stack([everything, intact, majority])
    statistic = f"share of the dev {metric} gain over the majority class kept with all attention pre-trained"
    observed = metric_rows(metric, rows, labels)
    if observed[1] - observed[2] <= 0:
        note = "the fine-tuned model is not above the majority class: it has no gain to keep"
        return {"value": None, "note": note, "unit": unit, "n": len(labels), "statistic": statistic}
    samples = bootstrap_metric_rows(metric, rows, labels)
    gains = samples[:, 1] - samples[:, 2]
    defined = gains > 0
    shares = (samples[defined, 0] - samples[defined, 2]) / gains[defined]
    interval = interval_of(shares)
    verdict = interval_verdict([bound - SHARE_KEPT for bound in interval], unit, len(labels), statistic)
    return {
        **verdict,
        "value": float((observed[0] - observed[2]) / (observed[1] - observed[2])),
        "interval": interval,
        "undefined_resamples": int((~defined).sum()),
    }


def edge_layers(
    metric: str, first_two: np.ndarray, last_two: np.ndarray, labels: np.ndarray, unit: str
) -> EffectVerdict:
    """The score with the first two layers' attention pre-trained minus with the last two layers':
    above 0 when the last two cost more; its 95% paired bootstrap interval and verdict."""
    value, intervals = bootstrap_differences(metric, first_two[None], last_two, labels)
    statistic = f"dev {metric} with the first two layers' attention pre-trained minus with the last two layers'"
    return {"value": float(value[0]), **interval_verdict(intervals[0].tolist(), unit, len(labels), statistic)}


@register_analysis
class Transplant(Analysis):
    """Per pair into a trained checkpoint (the pre-trained model to the fine-tuned one, or any
    declared pair of named checkpoints): the earlier checkpoint's attention in the later one, its
    families, share kept and edge layers (see the module)."""

    view = TransplantView
    source = "ablation"
    needs = frozenset({INTERVENES})
    joint = True  # the donor's attention and the recipient's model
    uses_head = True
    on_by_default = False  # a few hundred masked passes: `--transplant` decides (harness.run.plan.switch_on)
    switch = "transplant"

    def __init__(self, context: AnalysisContext) -> None:
        super().__init__(context)
        self.labels: list[float] = []
        self.tagging = context.task is not None and context.task.is_tagging

    def update(self, batch: AttentionBatch) -> None:
        if self.tagging:
            tags = batch_tags(self.context.run_tokenizer, batch.encoded)
            self.labels += tags[tags != IGNORED].tolist()
        else:
            self.labels += [item.label for item in batch.items]

    def words(self, encoded: EncodedBatch, logits: torch.Tensor) -> torch.Tensor:
        """A tagging batch's (V, batch, seq, tags) logits at its words' first sub-tokens: (V, words, tags)."""
        tags = batch_tags(self.context.run_tokenizer, encoded).to(logits.device)
        return logits[:, tags != IGNORED]

    def result(self) -> TransplantResult:
        return {
            "per_pair": {
                pair_name((before, after)): self.transplanted(before, after)
                for before, after in self.context.pairs
                if after in self.context.trained
            }
        }

    def transplanted(self, donor: str, recipient: str) -> TransplantPair:
        """``donor``'s attention in ``recipient``: every variant scored and tested."""
        context = self.context
        task = context.run_task
        metric, unit = task.metrics[0], "words" if self.tagging else "dev examples"
        layers, heads = context.num_layers, context.num_heads
        labels = np.asarray(self.labels)
        logits = context.variant_scorer(
            recipient,
            Interventions(given_heads=transplant_masks(layers, heads)),
            donor=donor,
            units=self.words if self.tagging else None,
        )
        if logits.shape[1] != len(labels):
            raise RuntimeError(f"the transplant scored {logits.shape[1]} {unit}, not the {len(labels)} streamed")
        predictions = np.stack([predictions_from_logits(task, part.numpy()) for part in logits])
        intact = predictions[family_rows("intact", layers, heads).start]
        majority = majority_predictions(task, labels)
        rows = {family: predictions[family_rows(family, layers, heads)] for family in ROWS}
        everything = rows["from"][0]
        result: TransplantPair = {
            "metric": metric,
            "unit": unit,
            "examples": len(labels),
            "intact": float(metric_rows(metric, intact[None], labels)[0]),
            "majority": float(metric_rows(metric, majority[None], labels)[0]),
            "majority_prediction": float(majority[0]),
            "heads": family_statistics(metric, rows["heads"], intact, labels, (layers, heads)),
            "layers": {
                family: family_statistics(metric, rows[family], intact, labels, (layers,)) for family in LAYER_FAMILIES
            },
            "share_kept": share_kept(metric, everything, intact, majority, labels, unit),
            "labels": encode(labels, "float32"),
            "predictions": store_predictions(predictions),
        }
        if layers > EDGE_LAYERS:
            result["last_two_vs_first_two"] = edge_layers(
                metric, rows["first_two"][0], rows["from"][layers - EDGE_LAYERS], labels, unit
            )
        return result
