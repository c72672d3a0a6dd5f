"""Task metrics: GLUE's (Matthews for CoLA, accuracy+F1 for MRPC/QQP, Pearson/Spearman for STS-B)
and macro-F1, a spec's default beside accuracy for classes (every class counts alike)."""

from __future__ import annotations

import warnings

import numpy as np
from scipy.stats import ConstantInputWarning, pearsonr, rankdata, spearmanr
from sklearn.metrics import accuracy_score, f1_score, matthews_corrcoef

from tasks.spec import Task

_METRICS = {
    "accuracy": accuracy_score,
    "f1": f1_score,
    "macro_f1": lambda labels, predictions: f1_score(labels, predictions, average="macro"),
    "matthews": matthews_corrcoef,
    "pearson": lambda labels, predictions: pearsonr(labels, predictions)[0],
    "spearman": lambda labels, predictions: spearmanr(labels, predictions)[0],
}


def predictions_from_logits(task: Task, logits: np.ndarray) -> np.ndarray:
    """Class indices (argmax), or the scores themselves for regression; logits (examples, labels)."""
    return logits[:, 0] if task.is_regression else logits.argmax(axis=-1)


def compute_metrics(task: Task, logits: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    """The task's metrics of (examples, labels) logits."""
    return score_predictions(task, predictions_from_logits(task, logits), labels)


def score_predictions(
    task: Task, predictions: np.ndarray, labels: np.ndarray, names: tuple[str, ...] | None = None
) -> dict[str, float]:
    """The task's metrics (or ``names`` among them) of class indices or regression scores; a
    constant prediction gives 0 for correlations instead of NaN."""
    scores = {}
    for name in names or task.metrics:
        with warnings.catch_warnings():  # an untrained head often predicts a constant: handled below
            warnings.simplefilter("ignore", ConstantInputWarning)
            value = float(_METRICS[name](labels, predictions))
        scores[name] = 0.0 if np.isnan(value) else value
    return scores


def _correlation_rows(predictions: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Pearson correlation of each row of ``predictions`` (variants, n) with ``labels`` (n,); 0 for a constant row."""
    centred = predictions - predictions.mean(axis=1, keepdims=True)
    target = labels - labels.mean()
    denominator = np.sqrt((centred**2).sum(axis=1) * (target**2).sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        values = (centred @ target) / denominator
    return np.nan_to_num(values, nan=0.0)


def _macro_f1_rows(predictions: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Macro-F1 of each row of ``predictions`` (variants, n): the mean over the classes seen in
    ``labels`` or the row (sklearn's set) of each class's F1, 0 where a class has none."""
    scores = np.zeros(len(predictions))
    for row, predicted in enumerate(predictions):
        classes = np.union1d(labels, predicted)
        chosen, truth = predicted[None] == classes[:, None], labels[None] == classes[:, None]
        true_pos = (chosen & truth).sum(axis=1).astype(float)
        denominator = chosen.sum(axis=1) + truth.sum(axis=1)
        scores[row] = np.divide(2 * true_pos, denominator, out=np.zeros_like(true_pos), where=denominator > 0).mean()
    return scores


def metric_rows(metric: str, predictions: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """``metric`` of each row of ``predictions`` (variants, n: class indices or scores) against
    ``labels`` (n,), as `tasks.metrics.score_predictions` computes it for one row."""
    predictions, labels = np.asarray(predictions), np.asarray(labels)
    if metric == "accuracy":
        return (predictions == labels).mean(axis=1)
    if metric == "pearson":
        return _correlation_rows(predictions.astype(float), labels.astype(float))
    if metric == "spearman":
        return _correlation_rows(rankdata(predictions, axis=1), rankdata(labels))
    if metric == "macro_f1":
        return _macro_f1_rows(predictions, labels)
    positive, truth = predictions == 1, labels == 1
    true_pos = (positive & truth).sum(axis=1).astype(float)
    false_pos = (positive & ~truth).sum(axis=1).astype(float)
    false_neg = (~positive & truth).sum(axis=1).astype(float)
    if metric == "f1":
        denominator = 2 * true_pos + false_pos + false_neg
        return np.divide(2 * true_pos, denominator, out=np.zeros_like(true_pos), where=denominator > 0)
    if metric == "matthews":
        true_neg = (~positive & ~truth).sum(axis=1).astype(float)
        denominator = np.sqrt(
            (true_pos + false_pos) * (true_pos + false_neg) * (true_neg + false_pos) * (true_neg + false_neg)
        )
        numerator = true_pos * true_neg - false_pos * false_neg
        return np.divide(numerator, denominator, out=np.zeros_like(numerator), where=denominator > 0)
    raise ValueError(f"no paired statistics for metric {metric!r}")
