"""Dev metrics of each checkpoint, beside the majority class, from the analysis pass itself.

Every run evaluates both checkpoints on the task's whole evaluation splits (GLUE's metric
per task), and puts the majority class beside them: a fine-tuned model that does not beat
it has learned nothing, and the change of its attention is not what fine-tuning on the
task does. When the run compares the whole dev split (the default on RTE, MRPC, STS-B and
SST-2), the logits come from the forward pass that also captures attention, so dev
evaluation costs nothing; otherwise the dev source streams the splits with nothing captured.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from harness.analyses.base import (LOGITS, Analysis, AnalysisContext, pair_name, per_checkpoint_results,
                                   register_analysis)
from harness.batches import AttentionBatch
from harness.forward import TASK_LOSS, summed_loss
from tasks.metrics import compute_metrics
from tasks.registry import GlueTask


def majority_scores(task: GlueTask, labels: np.ndarray) -> dict[str, float]:
    """The task's metrics for always predicting the most frequent label (the mean score for
    a regression task, whose correlations are then 0); ``labels`` (examples,)."""
    if task.is_regression:
        constant = np.full((len(labels), 1), labels.mean())
    else:
        constant = np.zeros((len(labels), task.num_labels))
        constant[:, np.bincount(labels.astype(int), minlength=task.num_labels).argmax()] = 1.0
    return compute_metrics(task, constant, labels)


def mean_loss(logits: np.ndarray, labels: np.ndarray) -> float:
    """The training loss per example (cross-entropy, or squared error for regression);
    ``logits`` (examples, labels), ``labels`` (examples,)."""
    return float(summed_loss(torch.from_numpy(logits), torch.from_numpy(labels), TASK_LOSS)) / max(len(labels), 1)


@register_analysis
class Evaluation(Analysis):
    """Per checkpoint: ``{"metrics": {"<split>/<metric>": value}, "majority": {...}, "examples": {split: n}}``;
    the metrics are the task's GLUE metrics and the mean loss (``"<split>/loss"``)."""

    name = "evaluation"
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
            scores, majority = {}, {}
            for split in names:
                chosen = splits == split
                scores |= {f"{split}/{k}": v for k, v in compute_metrics(task, logits[chosen], labels[chosen]).items()}
                scores[f"{split}/loss"] = mean_loss(logits[chosen], labels[chosen])
                majority |= {f"{split}/{k}": v for k, v in majority_scores(task, labels[chosen]).items()}
            out[checkpoint] = {"metrics": scores, "majority": majority,
                               "examples": {split: int((splits == split).sum()) for split in names}}
        return out

    @classmethod
    def compare(cls, per_checkpoint: dict[str, Any], pairs: list[tuple[str, str]]) -> dict[str, Any]:
        return {pair_name((a, b)): {metric: per_checkpoint[b]["metrics"][metric] - value
                              for metric, value in per_checkpoint[a]["metrics"].items()} for a, b in pairs}

    @classmethod
    def metrics(cls, entry: dict[str, Any]) -> list[tuple[str, float]]:
        """``dev_accuracy_finetuned``, ``dev_accuracy_pretrained``, ``dev_accuracy_majority``, ... per split."""
        results = per_checkpoint_results(entry)
        out = [(f"{metric.replace('/', '_')}_{checkpoint}", value)
               for checkpoint, stats in results.items() for metric, value in stats["metrics"].items()]
        first = next(iter(results.values()))
        return out + [(f"{metric.replace('/', '_')}_majority", value) for metric, value in first["majority"].items()]


def dev_metrics(entry: dict[str, Any]) -> dict[str, dict[str, float]]:
    """``{checkpoint: {"<split>/<metric>": value}, "majority": {...}}`` from a stored entry."""
    results = per_checkpoint_results(entry)
    return {**{name: stats["metrics"] for name, stats in results.items()},
            "majority": next(iter(results.values()))["majority"]}
