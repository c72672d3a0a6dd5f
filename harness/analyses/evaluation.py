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

from typing import Any

import numpy as np
import torch

from harness.analyses.base import LOGITS, Analysis, AnalysisContext, register_analysis
from harness.views.base import pair_name, per_checkpoint_results, per_pair_results
from harness.inputs.batches import AttentionBatch
from harness.views.style import checkpoint_title
from harness.model.forward import TASK_LOSS, summed_loss
from harness.results.checkpoints import FINETUNED, FROZEN_ENCODER, PRETRAINED, RANDOM_INIT
from harness.analyses.significance import bootstrap_differences
from tasks.metrics import predictions_from_logits, score_predictions
from tasks.registry import GlueTask, get_task


PAPER_MODEL = "bert-base-uncased"
# Kovaleva et al. 2019, Table 1 (dev; MRPC and QQP as F1/accuracy).
KOVALEVA_TABLE_1 = {
    "mrpc": {FROZEN_ENCODER: "0/31.6", RANDOM_INIT: "81.2/68.3", FINETUNED: "87.9/82.3"},
    "stsb": {FROZEN_ENCODER: "33.1", RANDOM_INIT: "2.9", FINETUNED: "82.7"},
    "sst2": {FROZEN_ENCODER: "49.1", RANDOM_INIT: "80.5", FINETUNED: "92.0"},
    "qqp": {FROZEN_ENCODER: "0/60.9", RANDOM_INIT: "0/63.2", FINETUNED: "65.2/78.6"},
    "rte": {FROZEN_ENCODER: "52.7", RANDOM_INIT: "52.7", FINETUNED: "64.6"},
    "qnli": {FROZEN_ENCODER: "52.8", RANDOM_INIT: "49.5", FINETUNED: "84.4"},
    "mnli": {FROZEN_ENCODER: "31.7", RANDOM_INIT: "61.0", FINETUNED: "78.6"},
}
TABLE_COLUMNS = {"majority": "majority class", PRETRAINED: "pre-trained, untrained head",
                 FROZEN_ENCODER: "pre-trained, frozen encoder", RANDOM_INIT: "random init + FT",
                 FINETUNED: "pre-trained + FT"}


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
    difference, intervals = bootstrap_differences(metric, predictions[None], reference, labels)
    return {"metric": metric, "difference": float(difference[0]), "interval": [float(v) for v in intervals[0]]}


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
    reference = {"kovaleva_table1": KOVALEVA_TABLE_1, "kovaleva_model": PAPER_MODEL}

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
        intervals; ``learned`` when the majority's interval lies wholly above 0 (and, against
        the frozen-encoder baseline, ``before``'s too)."""
        out = {}
        for before, after in pairs:
            first, second = per_checkpoint[before], per_checkpoint[after]
            task = get_task(second["task"])
            split = next(iter(second["predictions"]))
            labels = np.asarray(second["labels"][split])
            predictions = np.asarray(second["predictions"][split])
            metric = task.metrics[0]
            against_majority = paired_difference(task, metric, predictions, majority_predictions(task, labels), labels)
            against_before = paired_difference(task, metric, predictions, np.asarray(first["predictions"][split]),
                                               labels)
            learned = against_majority["interval"][0] > 0
            out[pair_name((before, after))] = {
                "change": {name: second["metrics"][name] - value for name, value in first["metrics"].items()},
                "main_metric": f"{split}/{metric}",
                "against_before": against_before,
                "against_majority": against_majority,
                "learned": learned and (before != FROZEN_ENCODER or against_before["interval"][0] > 0),
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
        compared: dict[str, list[dict[str, Any]]] = {}
        for (before, after), comparison in zip(entry["pairs"], per_pair_results(entry).values()):
            compared.setdefault(after, []).append(comparison)
            if before != PRETRAINED:  # a trained baseline: is the checkpoint clearly above it?
                low, high = comparison["against_before"]["interval"]
                out += [(f"above_{before}_low_{after}", low), (f"above_{before}_high_{after}", high)]
        for after, comparisons in compared.items():
            low, high = comparisons[0]["against_majority"]["interval"]
            out += [(f"learned_{after}", float(all(c["learned"] for c in comparisons))),
                    (f"above_majority_low_{after}", low), (f"above_majority_high_{after}", high)]
        return out

    @classmethod
    def headline(cls, metrics: dict[str, float]) -> list[str]:
        """The dev scores (not the loss) of the fine-tuned model, the majority class and the change."""
        return [name for name in metrics if name.startswith("dev_") and not name.startswith("dev_loss")
                and name.endswith((f"_{FINETUNED}", "_majority", "_change"))]

    @classmethod
    def tables(cls, entry: dict[str, Any], run: dict[str, Any]) -> dict[str, str]:
        return {"evaluation_table": table_1_markdown(entry, run)}


def learning_warning(entry: dict[str, Any]) -> str | None:
    """One line when a compared checkpoint is not clearly above the majority class (or the
    frozen-encoder baseline), else None."""
    for (before, after), comparison in zip(entry["pairs"], per_pair_results(entry).values()):
        if comparison["learned"]:
            continue
        below_majority = comparison["against_majority"]["interval"][0] <= 0
        versus = comparison["against_majority" if below_majority else "against_before"]
        reference = "the majority class" if below_majority else f"the {before} baseline"
        low, high = versus["interval"]
        return (f"warning: {after} is not clearly above {reference} on {comparison['main_metric']} "
                f"(difference {versus['difference']:+.3f}, 95% bootstrap interval [{low:+.3f}, {high:+.3f}]): "
                "its attention changes are not what learning the task does")
    return None


def table_cell(task: GlueTask, scores: dict[str, float], split: str) -> str:
    """A checkpoint's main score in percent, as Kovaleva et al.'s Table 1 writes it (F1/accuracy
    for MRPC and QQP, else the task's first metric)."""
    metrics = ("f1", "accuracy") if "f1" in task.metrics else task.metrics[:1]
    return "/".join(f"{100 * scores[f'{split}/{metric}']:.1f}" for metric in metrics)


def table_1_markdown(entry: dict[str, Any], run: dict[str, Any]) -> str:
    """Kovaleva et al.'s Table 1 for this run: the majority class, the untrained pre-trained
    model, the baselines that were trained and the fine-tuned model, on the main split; the
    paper's numbers in brackets where the model is hers."""
    results = per_checkpoint_results(entry)
    first = next(iter(results.values()))
    task = get_task(first["task"])
    split = next(iter(first["predictions"]))
    scores = {"majority": first["majority"], **{name: stats["metrics"] for name, stats in results.items()}}
    columns = [name for name in TABLE_COLUMNS if name in scores]
    paper = KOVALEVA_TABLE_1.get(task.name, {}) if run.get("model") == PAPER_MODEL else {}
    cells = [table_cell(task, scores[name], split) + (f" ({paper[name]})" if name in paper else "")
             for name in columns]
    metric = "F1/accuracy" if "f1" in task.metrics else task.metrics[0]
    lines = [f"# Dev scores: {run.get('model', 'the model')} on {task.folder}", "",
             f"Dev scores ({split}, {metric}, %) of {run.get('model', 'the model')} on {task.folder}, "
             "as Kovaleva et al. 2019's Table 1"
             + (f"; the paper's numbers ({PAPER_MODEL}) in brackets." if paper else "."), "",
             "| task | " + " | ".join(TABLE_COLUMNS[name] for name in columns) + " |",
             "|---" * (len(columns) + 1) + "|",
             f"| {task.folder} | " + " | ".join(cells) + " |"]
    for (before, after), comparison in zip(entry["pairs"], per_pair_results(entry).values()):
        versus = comparison["against_before"]
        low, high = versus["interval"]
        lines.append(f"\n{checkpoint_title(after)} minus {checkpoint_title(before)} on {comparison['main_metric']}: "
                     f"{versus['difference']:+.3f} (95% paired bootstrap interval [{low:+.3f}, {high:+.3f}]).")
    return "\n".join(lines) + "\n"


def dev_metrics(entry: dict[str, Any]) -> dict[str, dict[str, float]]:
    """``{checkpoint: {"<split>/<metric>": value}, "majority": {...}}`` from a stored entry."""
    results = per_checkpoint_results(entry)
    return {**{name: stats["metrics"] for name, stats in results.items()},
            "majority": next(iter(results.values()))["majority"]}
