"""Kovaleva et al.'s attention patterns: how often each head's maps are vertical, diagonal,
vertical+diagonal, block or heterogeneous, before and after fine-tuning.

Every map of both checkpoints on the task's dev examples is classified by the shipped classifier
(`classifier`: boosted trees on the map's measurements), all heads of a batch in one call
(`block` only for sentence pairs, the one input where two segments exist); only class counts
are kept, per head and per example (examples x classes numbers, never maps). The result is
the share of each class over all maps (the paper's Figure 2, per checkpoint), corrected for
the classifier's errors with an interval over both the dev examples and the classifier's
confusion, the majority class of each head, the heads whose majority class changed with
fine-tuning, and each share's change with its paired interval over the dev examples: of the
corrected shares, the same confusion draw correcting both checkpoints in each resample, where
the shipped classifier's cross-validation gives its confusion (of the labelled shares otherwise).
"""

from __future__ import annotations

from typing import TypedDict

import numpy as np
import torch

from classifier import CLASSES
from classifier.correction import corrected_changes, corrected_shares
from classifier.crossval import Report, load_report
from classifier.model import BLOCK, WEIGHTS_FILE, load_classifier
from harness.analyses.base import Analysis, AnalysisContext, changed_heads, register_analysis
from harness.config import AnalysisConfig
from harness.inputs.batches import AttentionBatch
from harness.results.store import FileHashes
from harness.results.store import Settings as StoredSettings
from harness.views.base import pair_name
from harness.views.evidence import Change, Changes, UnitSums, direction, paired_change, resample_weights
from harness.views.patterns import UNIT, PatternComparison, PatternResult, PatternSettings, PatternsView, share


@register_analysis
class AttentionPatterns(Analysis):
    """Per-head and per-example counts of the classifier's class, for each checkpoint."""

    view = PatternsView
    settings = PatternSettings
    reference = {"kovaleva_bert_base": "heterogeneous 32% (MRPC) to 61% (QQP) of maps; ~30% of labelled maps vertical"}

    def __init__(self, context: AnalysisContext) -> None:
        super().__init__(context)
        weights = PatternSettings.of(context.settings).pattern_weights or WEIGHTS_FILE
        self.classifier = load_classifier(weights).to(context.device)
        self.cross_validation = shipped_cross_validation(context.settings)
        shape = (len(context.checkpoints), context.num_layers, context.num_heads, len(CLASSES))
        self.counts = torch.zeros(shape, dtype=torch.int64, device=context.device)
        self.per_example_counts: list[torch.Tensor] = []  # per batch: (checkpoints, batch, classes)
        self.count = 0
        self.pair_inputs = 0

    @classmethod
    def settings_identity(cls, settings: AnalysisConfig, hashes: FileHashes) -> StoredSettings:
        """The classifier's weights file, by content (the shipped one when none is given), and the
        cross-validated score of the shipped classifier's recipe (None for other weights)."""
        report = shipped_cross_validation(settings)
        score = None if report is None else {"grouping": report["grouping"], **report["overall"]}
        weights = PatternSettings.of(settings).pattern_weights or WEIGHTS_FILE
        return {"pattern_weights": hashes.describe(weights), "cross_validation": score}

    def update(self, batch: AttentionBatch) -> None:
        attentions = [batch.attentions[name] for name in self.context.checkpoints]
        predicted = self.classifier.predict_batch(
            attentions,
            batch.lengths,
            batch.second_segments,
            [batch.row_entropy(name) for name in self.context.checkpoints],
        )
        # (checkpoints, batch, layers, heads) -> class counts per head over the batch, and per example over the heads
        classes = torch.nn.functional.one_hot(predicted, len(CLASSES))
        self.counts += classes.sum(dim=1)
        self.per_example_counts.append(classes.sum(dim=(2, 3)))
        self.count += predicted.shape[1]
        self.pair_inputs += int(batch.two_segments.sum())

    def result(self) -> dict[str, PatternResult]:
        majority = self.counts.cpu().argmax(dim=-1)  # (checkpoints, layers, heads); ties -> first class
        results: dict[str, PatternResult] = {}
        for c, (name, units) in enumerate(zip(self.context.checkpoints, self.units())):
            shares = units.ratios(np.ones((1, units.count)))[0]
            correction: Correction = (
                {}
                if self.cross_validation is None
                else corrected(units, self.cross_validation, self.pair_inputs > 0, self.context.seed)
            )
            results[name] = {
                "proportions": dict(zip(CLASSES, shares.tolist())),
                **correction,
                "per_head": [[CLASSES[index] for index in row] for row in majority[c].tolist()],
                "counts_per_head": self.counts[c].cpu().tolist(),
                "num_examples": self.count,
                "pair_inputs": self.pair_inputs,
                "units": units.stored(),
            }
        return results

    def units(self) -> list[UnitSums]:
        """Per checkpoint, each example's count of heads of each class over the number of heads:
        the shares of the classes are the ratios of their sums over the examples."""
        checkpoints, heads = len(self.context.checkpoints), self.context.num_layers * self.context.num_heads
        counts = (
            torch.cat(self.per_example_counts, dim=1).cpu().numpy()
            if self.per_example_counts
            else np.zeros((checkpoints, 0, len(CLASSES)))
        )
        return [UnitSums.of(counts[c], np.full(counts.shape[1], heads), UNIT) for c in range(checkpoints)]

    @classmethod
    def compare(
        cls, per_checkpoint: dict[str, PatternResult], pairs: list[tuple[str, str]]
    ) -> dict[str, PatternComparison]:
        return {
            pair_name((a, b)): {
                "changed_heads": changed_heads(per_checkpoint[a]["per_head"], per_checkpoint[b]["per_head"]),
                "evidence": share_changes(per_checkpoint[a], per_checkpoint[b]),
            }
            for a, b in pairs
        }


class Correction(TypedDict, total=False):
    """The shares corrected for the classifier's errors, their intervals, and the cross-validated
    confusion counts they were corrected with: a result's with the shipped classifier, none with
    other weights."""

    corrected: dict[str, float]
    corrected_interval: dict[str, list[float]]
    confusion: list[list[int]]


def corrected(units: UnitSums, cross_validation: Report, pairs_seen: bool, seed: int) -> Correction:
    """The shares corrected for the classifier's cross-validated errors, with 95% intervals over
    bootstrap resamples of the dev examples, each corrected with its own draw of the classifier's
    confusion matrix (`classifier.correction`); ``block`` is possible only where pairs were seen."""
    possible = np.ones(len(CLASSES), dtype=bool)
    possible[BLOCK] = pairs_seen
    observed = units.ratios(np.ones((1, units.count)))[0]
    shares, intervals = corrected_shares(
        observed,
        units.ratios(resample_weights(units.count)),
        np.asarray(cross_validation["confusion"]),
        possible,
        seed=seed,
    )
    return {
        "corrected": dict(zip(CLASSES, shares.tolist())),
        "corrected_interval": dict(zip(CLASSES, intervals.tolist())),
        "confusion": cross_validation["confusion"],
    }


def share_changes(before: PatternResult, after: PatternResult) -> dict[str, Change]:
    """Each class's change of share from ``before``'s stored result to ``after``'s, with its paired
    interval over the dev examples, by the signed change's metric name (``pattern_change_vertical``):
    of the shares corrected for the classifier's errors where both results hold its confusion
    (`corrected_change`), else of the labelled shares; ``block`` only where either checkpoint saw a
    sentence pair (it cannot occur otherwise)."""
    units = UnitSums.read(before["units"]), UnitSums.read(after["units"])
    pairs_seen = before["pair_inputs"] > 0 or after["pair_inputs"] > 0
    both_corrected = "confusion" in before and "confusion" in after
    change = corrected_change(*units, np.asarray(before["confusion"]), pairs_seen) if both_corrected else None
    change = change or paired_change(*units, reduce=None)
    return {
        share(name).changed().name: {
            **change,
            "value": change["value"][k],
            "interval": change["interval"][k],
            "direction": change["direction"][k],
        }
        for k, name in enumerate(CLASSES)
        if k != BLOCK or pairs_seen
    }


def corrected_change(before: UnitSums, after: UnitSums, confusion: np.ndarray, pairs_seen: bool) -> Changes:
    """Each class's change of the share corrected for the classifier's errors, with 95% intervals
    over paired resamples of the examples, both checkpoints corrected with the same draw of the
    classifier's ``confusion`` in each (`classifier.correction.corrected_changes`)."""
    possible = np.ones(len(CLASSES), dtype=bool)
    possible[BLOCK] = pairs_seen
    everything, weights = np.ones((1, before.count)), resample_weights(before.count)
    changes, intervals = corrected_changes(
        (before.ratios(everything)[0], after.ratios(everything)[0]),
        (before.ratios(weights), after.ratios(weights)),
        confusion,
        possible,
    )
    return {
        "value": changes.tolist(),
        "interval": intervals.tolist(),
        "unit": before.unit,
        "n": before.count,
        "direction": [direction(pair) for pair in intervals],
        "statistic": "the share corrected for the classifier's cross-validated errors (the same confusion draw "
        "for both checkpoints in each resample)",
    }


def shipped_cross_validation(settings: AnalysisConfig) -> Report | None:
    """The leave-one-task-out report of the shipped classifier (`classifier.crossval`), which
    describes how it does on a task it was not trained on; None for other weights."""
    return load_report("task") if PatternSettings.of(settings).pattern_weights is None else None
