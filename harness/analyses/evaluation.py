"""Dev metrics of each checkpoint, beside the majority class, from the analysis pass itself.

Every run evaluates both checkpoints on the task's whole evaluation splits (GLUE's metric
per task), and puts the majority class beside them: a fine-tuned model that does not beat
it has learned nothing, and the change of its attention is not what fine-tuning on the
task does. When the run compares the whole dev split (the default on RTE, MRPC, STS-B and
SST-2), the logits come from the forward pass that also captures attention, so dev
evaluation costs nothing; otherwise the dev source streams the splits with nothing captured.

Each declared pair (before, after) is compared on the main split's first GLUE metric with
paired bootstrap intervals (1000 resamples of the dev examples): ``after`` against ``before``
and against the majority class. ``learned`` is false unless the interval against the
majority class lies wholly above 0; ``harness run`` then says so in one line.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from harness.analyses.base import (LOGITS, Analysis, AnalysisContext, pair_name, per_checkpoint_results,
                                   per_pair_results, register_analysis)
from harness.batches import AttentionBatch
from harness.forward import TASK_LOSS, summed_loss
from tasks.metrics import predictions_from_logits, score_predictions
from tasks.registry import GlueTask, get_task


BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 0  # fixed, so an interval drawn again from the same stored predictions is the same


def majority_predictions(task: GlueTask, labels: np.ndarray) -> np.ndarray:
    """Always the most frequent label (the mean score for a regression task, whose
    correlations are then 0); ``labels`` (examples,)."""
    if task.is_regression:
        return np.full(len(labels), labels.mean())
    return np.full(len(labels), np.bincount(labels.astype(int), minlength=task.num_labels).argmax())


def majority_scores(task: GlueTask, labels: np.ndarray) -> dict[str, float]:
    """The task's metrics of the majority class."""
    return score_predictions(task, majority_predictions(task, labels), labels)


def paired_difference(task: GlueTask, metric: str, predictions: np.ndarray, reference: np.ndarray,
                      labels: np.ndarray) -> dict[str, Any]:
    """``metric`` of ``predictions`` minus that of ``reference`` on the same examples, with its
    95% paired bootstrap interval (the same resampled examples scored for both; percentiles)."""
    def difference(chosen: np.ndarray) -> float:
        return (score_predictions(task, predictions[chosen], labels[chosen], (metric,))[metric]
                - score_predictions(task, reference[chosen], labels[chosen], (metric,))[metric])

    count = len(labels)
    resamples = np.random.default_rng(BOOTSTRAP_SEED).integers(0, count, (BOOTSTRAP_RESAMPLES, count))
    if metric == "accuracy":  # the common case in one array operation (the metric call costs ~1 ms)
        gained = (predictions == labels).astype(float) - (reference == labels)
        resampled = gained[resamples].mean(axis=1)
    else:
        resampled = np.array([difference(chosen) for chosen in resamples])
    low, high = np.percentile(resampled, [2.5, 97.5])
    return {"metric": metric, "difference": difference(np.arange(count)), "interval": [float(low), float(high)]}


def mean_loss(logits: np.ndarray, labels: np.ndarray) -> float:
    """The training loss per example (cross-entropy, or squared error for regression);
    ``logits`` (examples, labels), ``labels`` (examples,)."""
    return float(summed_loss(torch.from_numpy(logits), torch.from_numpy(labels), TASK_LOSS)) / max(len(labels), 1)


@register_analysis
class Evaluation(Analysis):
    """Per checkpoint: ``{"metrics": {"<split>/<metric>": value}, "majority": {...}, "examples": {split: n},
    "predictions": {split: [...]}, "labels": {split: [...]}}``; the metrics are the task's GLUE
    metrics and the mean loss (``"<split>/loss"``); predictions (class indices, or scores) are
    kept so that differences get paired intervals and later studies can test them."""

    name = "evaluation"
    version = 2
    source = "dev"
    needs = frozenset({LOGITS})
    uses_head = True

    def __init__(self, context: AnalysisContext) -> None:
        super().__init__(context)
        self.logits: dict[str, list[torch.Tensor]] = {name: [] for name in context.checkpoints}
        self.labels: list[float] = []
        self.splits: list[str] = []

    def update(self, batch: AttentionBatch) -> None:
        for name in self.context.checkpoints:  # (batch, labels) per batch: a few floats per example
            self.logits[name].append(batch.logits[name].float().cpu())
        self.labels += [item.label for item in batch.encoded.items]
        self.splits += [item.split for item in batch.encoded.items]

    def result(self) -> dict[str, Any]:
        task = self.context.task
        labels, splits = np.asarray(self.labels), np.asarray(self.splits)
        names = list(dict.fromkeys(self.splits))
        out = {}
        for checkpoint, parts in self.logits.items():
            logits = torch.cat(parts).numpy() if parts else np.zeros((0, task.num_labels))
            predictions = predictions_from_logits(task, logits)
            scores, majority = {}, {}
            for split in names:
                chosen = splits == split
                scores |= {f"{split}/{k}": v for k, v in score_predictions(task, predictions[chosen],
                                                                           labels[chosen]).items()}
                scores[f"{split}/loss"] = mean_loss(logits[chosen], labels[chosen])
                majority |= {f"{split}/{k}": v for k, v in majority_scores(task, labels[chosen]).items()}
            out[checkpoint] = {"metrics": scores, "majority": majority,
                               "examples": {split: int((splits == split).sum()) for split in names},
                               "task": task.name,
                               "predictions": {split: predictions[splits == split].tolist() for split in names},
                               "labels": {split: labels[splits == split].tolist() for split in names}}
        return out

    @classmethod
    def compare(cls, per_checkpoint: dict[str, Any], pairs: list[tuple[str, str]]) -> dict[str, Any]:
        """Per pair (before, after): the change of every metric, and on the main split's first
        metric, ``after`` against ``before`` and against the majority class with paired bootstrap
        intervals; ``learned`` when the majority's interval lies wholly above 0."""
        out = {}
        for before, after in pairs:
            first, second = per_checkpoint[before], per_checkpoint[after]
            task = get_task(second["task"])
            split = next(iter(second["predictions"]))
            labels = np.asarray(second["labels"][split])
            predictions = np.asarray(second["predictions"][split])
            metric = task.metrics[0]
            against_majority = paired_difference(task, metric, predictions, majority_predictions(task, labels), labels)
            out[pair_name((before, after))] = {
                "change": {name: second["metrics"][name] - value for name, value in first["metrics"].items()},
                "main_metric": f"{split}/{metric}",
                "against_before": paired_difference(task, metric, predictions,
                                                    np.asarray(first["predictions"][split]), labels),
                "against_majority": against_majority,
                "learned": against_majority["interval"][0] > 0,
            }
        return out

    @classmethod
    def metrics(cls, entry: dict[str, Any]) -> list[tuple[str, float]]:
        """``dev_accuracy_finetuned``, ``dev_accuracy_pretrained``, ``dev_accuracy_majority``, ... per split."""
        results = per_checkpoint_results(entry)
        out = [(f"{metric.replace('/', '_')}_{checkpoint}", value)
               for checkpoint, stats in results.items() for metric, value in stats["metrics"].items()]
        first = next(iter(results.values()))
        out += [(f"{metric.replace('/', '_')}_majority", value) for metric, value in first["majority"].items()]
        for (_, after), comparison in zip(entry["pairs"], per_pair_results(entry).values()):
            low, high = comparison["against_majority"]["interval"]
            out += [(f"learned_{after}", float(comparison["learned"])),
                    (f"above_majority_low_{after}", low), (f"above_majority_high_{after}", high)]
        return out


def learning_warning(entry: dict[str, Any]) -> str | None:
    """One line when a compared checkpoint is not clearly above the majority class, else None."""
    for (_, after), comparison in zip(entry["pairs"], per_pair_results(entry).values()):
        if comparison["learned"]:
            continue
        versus = comparison["against_majority"]
        low, high = versus["interval"]
        return (f"warning: {after} is not clearly above the majority class on {comparison['main_metric']} "
                f"(difference {versus['difference']:+.3f}, 95% bootstrap interval [{low:+.3f}, {high:+.3f}]): "
                "its attention changes are not what learning the task does")
    return None


def dev_metrics(entry: dict[str, Any]) -> dict[str, dict[str, float]]:
    """``{checkpoint: {"<split>/<metric>": value}, "majority": {...}}`` from a stored entry."""
    results = per_checkpoint_results(entry)
    return {**{name: stats["metrics"] for name, stats in results.items()},
            "majority": next(iter(results.values()))["majority"]}
