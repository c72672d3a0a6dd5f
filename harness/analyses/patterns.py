"""Kovaleva et al.'s attention patterns: how often each head's maps are vertical, diagonal,
vertical+diagonal, block or heterogeneous, before and after fine-tuning.

Every map of both checkpoints on the task's dev examples is classified by the shipped classifier
(`classifier`: boosted trees on the map's measurements), all heads of a batch in one call
(`block` only for sentence pairs, the one input where two segments exist); only per-head
class counts are kept, so
memory does not grow with the number of examples. The result is the share of each class over
all maps (the paper's Figure 2, per checkpoint), the majority class of each head, and the
heads whose majority class changed with fine-tuning.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from classifier import CLASSES
from classifier.correction import corrected_shares
from classifier.crossval import load_report
from classifier.model import BLOCK, WEIGHTS_FILE, load_classifier
from harness.analyses.base import Analysis, AnalysisContext, changed_heads, register_analysis
from harness.config import AnalysisConfig
from harness.inputs.batches import AttentionBatch
from harness.results.store import FileHashes
from harness.views.base import pair_name
from harness.views.patterns import PatternsView


@register_analysis
class AttentionPatterns(Analysis):
    """Per-head counts of the classifier's class over examples, for each checkpoint."""

    view = PatternsView
    settings_used = ("pattern_weights",)
    reference = {"kovaleva_bert_base": "heterogeneous 32% (MRPC) to 61% (QQP) of maps; ~30% of labelled maps vertical"}

    def __init__(self, context: AnalysisContext) -> None:
        super().__init__(context)
        weights = context.settings.pattern_weights or WEIGHTS_FILE
        self.classifier = load_classifier(weights).to(context.device)
        self.cross_validation = shipped_cross_validation(context.settings)
        shape = (len(context.checkpoints), context.num_layers, context.num_heads, len(CLASSES))
        self.counts = torch.zeros(shape, dtype=torch.int64, device=context.device)
        self.count = 0
        self.pair_inputs = 0

    @classmethod
    def settings_identity(cls, settings: AnalysisConfig, hashes: FileHashes) -> dict[str, Any]:
        """The classifier's weights file, by content (the shipped one when none is given), and the
        cross-validated score of the shipped classifier's recipe (None for other weights)."""
        report = shipped_cross_validation(settings)
        score = None if report is None else {"grouping": report["grouping"], **report["overall"]}
        return {"pattern_weights": hashes.describe(settings.pattern_weights or WEIGHTS_FILE),
                "cross_validation": score}

    def update(self, batch: AttentionBatch) -> None:
        attentions = [batch.attentions[name] for name in self.context.checkpoints]
        predicted = self.classifier.predict_batch(attentions, batch.lengths, batch.second_segments,
                                                  [batch.row_entropy(name) for name in self.context.checkpoints])
        # (checkpoints, batch, layers, heads) -> per-head class counts summed over the batch
        self.counts += torch.nn.functional.one_hot(predicted, len(CLASSES)).sum(dim=1)
        self.count += predicted.shape[1]
        self.pair_inputs += int(batch.two_segments.sum())

    def result(self) -> dict[str, Any]:
        counts = self.counts.cpu()
        totals = counts.sum(dim=(1, 2)).double()  # (checkpoints, classes)
        shares = totals / totals.sum(dim=1, keepdim=True).clamp(min=1)
        majority = counts.argmax(dim=-1)  # (checkpoints, layers, heads); ties -> first class
        return {name: {"proportions": dict(zip(CLASSES, shares[c].tolist())),
                       **self.corrected(shares[c].numpy()),
                       "per_head": [[CLASSES[index] for index in row] for row in majority[c].tolist()],
                       "counts_per_head": counts[c].tolist(),
                       "num_examples": self.count}
                for c, name in enumerate(self.context.checkpoints)}

    def corrected(self, observed: np.ndarray) -> dict[str, Any]:
        """The shares corrected for the classifier's cross-validated errors, with 95% intervals
        (`classifier.correction`); nothing without a cross-validation of these weights."""
        if self.cross_validation is None:
            return {}
        possible = np.ones(len(CLASSES), dtype=bool)
        possible[BLOCK] = self.pair_inputs > 0
        shares, intervals = corrected_shares(observed, np.asarray(self.cross_validation["confusion"]), possible,
                                             seed=self.context.seed)
        return {"corrected": dict(zip(CLASSES, shares.tolist())),
                "corrected_interval": dict(zip(CLASSES, intervals.tolist()))}

    @classmethod
    def compare(cls, per_checkpoint: dict[str, Any], pairs: list[tuple[str, str]]) -> dict[str, Any]:
        return {pair_name((a, b)): {"changed_heads": changed_heads(per_checkpoint[a]["per_head"],
                                                                   per_checkpoint[b]["per_head"])}
                for a, b in pairs}


def shipped_cross_validation(settings: AnalysisConfig) -> dict[str, Any] | None:
    """The leave-one-task-out report of the shipped classifier (`classifier.crossval`), which
    describes how it does on a task it was not trained on; None for other weights."""
    return load_report("task") if settings.pattern_weights is None else None
