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
majority class lies wholly above 0, and, when ``before`` is Kovaleva et al.'s frozen-encoder
baseline (``--baselines``), the interval against it too; ``harness run`` then says so in one
line. With the baselines the entry also draws her Table 1 for the run, with the paper's
numbers beside ours when the model is hers (bert-base-uncased).
"""

from __future__ import annotations

from typing import Any, TypedDict

import numpy as np
import torch

from harness.analyses.base import LOGITS, Analysis, AnalysisContext, register_analysis
from harness.analyses.significance import bootstrap_differences
from harness.inputs.batches import AttentionBatch
from harness.inputs.tagging import IGNORED, batch_tags
from harness.model.forward import TASK_LOSS, summed_loss
from harness.results.checkpoints import FROZEN_ENCODER
from harness.views.base import pair_name
from harness.views.evaluation import (
    PAPER_MODEL,
    DevComparison,
    DevScores,
    EvaluationView,
    PairedDifference,
    stored_task,
)
from harness.views.papers import KOVALEVA_TABLE_1
from tasks.metrics import predictions_from_logits, score_predictions
from tasks.spec import Task


def majority_predictions(task: Task, labels: np.ndarray) -> np.ndarray:
    """Always the most frequent label (the mean score for a regression task, whose
    correlations are then 0); ``labels`` (examples,)."""
    if task.is_regression:
        return np.full(len(labels), labels.mean())
    return np.full(len(labels), np.bincount(labels.astype(int), minlength=task.num_labels).argmax())


def majority_scores(task: Task, labels: np.ndarray) -> dict[str, float]:
    """The task's metrics of the majority class."""
    return score_predictions(task, majority_predictions(task, labels), labels)


def paired_difference(
    task: Task, metric: str, predictions: np.ndarray, reference: np.ndarray, labels: np.ndarray
) -> PairedDifference:
    """``metric`` of ``predictions`` minus that of ``reference`` on the same examples, with its
    95% paired bootstrap interval (the same resampled examples scored for both; percentiles)."""
    difference, intervals = bootstrap_differences(metric, predictions[None], reference, labels)
    return {"metric": metric, "difference": float(difference[0]), "interval": [float(v) for v in intervals[0]]}


def mean_loss(logits: np.ndarray, labels: np.ndarray) -> float:
    """The training loss per example (cross-entropy, or squared error for regression);
    ``logits`` (examples, labels), ``labels`` (examples,)."""
    return float(summed_loss(torch.from_numpy(logits), torch.from_numpy(labels), TASK_LOSS)) / max(len(labels), 1)


class TaskSpec(TypedDict, total=False):
    """`DevScores`' key of a task defined by a spec file or flags (GLUE's is known by its name)."""

    task_spec: dict[str, Any]  # JSON: the spec's fields, of their several types


@register_analysis
class Evaluation(Analysis):
    """Per checkpoint: ``{"metrics": {"<split>/<metric>": value}, "majority": {...}, "examples": {split: n},
    "predictions": {split: [...]}, "labels": {split: [...]}}``; the metrics are the task's GLUE
    metrics and the mean loss (``"<split>/loss"``); predictions (class indices, or scores) are
    kept so that differences get paired intervals and later studies can test them."""

    view = EvaluationView
    source = "dev"
    needs = frozenset({LOGITS})
    uses_head = True
    reference = {"kovaleva_table1": KOVALEVA_TABLE_1, "kovaleva_model": PAPER_MODEL}

    def __init__(self, context: AnalysisContext) -> None:
        super().__init__(context)
        self.logits: dict[str, list[torch.Tensor]] = {name: [] for name in context.checkpoints}
        self.labels: list[float] = []
        self.splits: list[str] = []

    def update(self, batch: AttentionBatch) -> None:
        task = self.context.task
        if task is not None and task.is_tagging:
            self.update_words(batch)
            return
        for name in self.context.checkpoints:  # (batch, labels) per batch: a few floats per example
            self.logits[name].append(batch.logits[name].float().cpu())
        self.labels += [item.label for item in batch.encoded.items]
        self.splits += [item.split for item in batch.encoded.items]

    def update_words(self, batch: AttentionBatch) -> None:
        """A tagging task's rows are its words, each scored at its first sub-token (the tokens
        training labelled: `harness.inputs.tagging`); words that truncation cut off are not scored."""
        tags = batch_tags(self.context.run_tokenizer, batch.encoded)
        rows, columns = (tags != IGNORED).nonzero(as_tuple=True)
        self.labels += tags[rows, columns].tolist()
        self.splits += [batch.encoded.items[row].split for row in rows.tolist()]
        for name in self.context.checkpoints:
            self.logits[name].append(batch.logits[name][rows, columns].float().cpu())

    def result(self) -> dict[str, DevScores]:
        task = self.context.run_task
        labels, splits = np.asarray(self.labels), np.asarray(self.splits)
        names = list(dict.fromkeys(self.splits))
        out: dict[str, DevScores] = {}
        spec: TaskSpec = {} if task.glue else {"task_spec": task.as_spec()}
        for checkpoint, parts in self.logits.items():
            logits = torch.cat(parts).numpy() if parts else np.zeros((0, task.num_labels))
            predictions = predictions_from_logits(task, logits)
            scores: dict[str, float] = {}
            majority: dict[str, float] = {}
            for split in names:
                chosen = splits == split
                scores |= {
                    f"{split}/{k}": v for k, v in score_predictions(task, predictions[chosen], labels[chosen]).items()
                }
                scores[f"{split}/loss"] = mean_loss(logits[chosen], labels[chosen])
                majority |= {f"{split}/{k}": v for k, v in majority_scores(task, labels[chosen]).items()}
            out[checkpoint] = {
                "metrics": scores,
                "majority": majority,
                "examples": {split: int((splits == split).sum()) for split in names},
                "task": task.name,
                **spec,
                "predictions": {split: predictions[splits == split].tolist() for split in names},
                "labels": {split: labels[splits == split].tolist() for split in names},
            }
        return out

    @classmethod
    def compare(cls, per_checkpoint: dict[str, DevScores], pairs: list[tuple[str, str]]) -> dict[str, DevComparison]:
        """Per pair (before, after): the change of every metric, and on the main split's first
        metric, ``after`` against ``before`` and against the majority class with paired bootstrap
        intervals; ``learned`` when the majority's interval lies wholly above 0 (and, against
        the frozen-encoder baseline, ``before``'s too)."""
        out: dict[str, DevComparison] = {}
        for before, after in pairs:
            first, second = per_checkpoint[before], per_checkpoint[after]
            task = stored_task(second)
            split = next(iter(second["predictions"]))
            labels = np.asarray(second["labels"][split])
            predictions = np.asarray(second["predictions"][split])
            metric = task.metrics[0]
            against_majority = paired_difference(task, metric, predictions, majority_predictions(task, labels), labels)
            against_before = paired_difference(
                task, metric, predictions, np.asarray(first["predictions"][split]), labels
            )
            learned = against_majority["interval"][0] > 0
            out[pair_name((before, after))] = {
                "change": {name: second["metrics"][name] - value for name, value in first["metrics"].items()},
                "main_metric": f"{split}/{metric}",
                "against_before": against_before,
                "against_majority": against_majority,
                "learned": learned and (before != FROZEN_ENCODER or against_before["interval"][0] > 0),
            }
        return out
