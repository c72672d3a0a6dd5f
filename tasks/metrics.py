"""GLUE metrics: Matthews for CoLA, accuracy+F1 for MRPC/QQP, Pearson/Spearman for STS-B."""

from __future__ import annotations

import warnings

import numpy as np
from scipy.stats import ConstantInputWarning, pearsonr, spearmanr
from sklearn.metrics import accuracy_score, f1_score, matthews_corrcoef

from tasks.registry import GlueTask

_METRICS = {
    "accuracy": accuracy_score,
    "f1": f1_score,
    "matthews": matthews_corrcoef,
    "pearson": lambda labels, predictions: pearsonr(labels, predictions)[0],
    "spearman": lambda labels, predictions: spearmanr(labels, predictions)[0],
}


def predictions_from_logits(task: GlueTask, logits: np.ndarray) -> np.ndarray:
    """Class indices (argmax), or the scores themselves for regression; logits (examples, labels)."""
    return logits[:, 0] if task.is_regression else logits.argmax(axis=-1)


def compute_metrics(task: GlueTask, logits: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    """The task's metrics of (examples, labels) logits."""
    return score_predictions(task, predictions_from_logits(task, logits), labels)


def score_predictions(task: GlueTask, predictions: np.ndarray, labels: np.ndarray,
                      names: tuple[str, ...] | None = None) -> dict[str, float]:
    """The task's metrics (or ``names`` among them) of class indices or regression scores; a
    constant prediction gives 0 for correlations instead of NaN."""
    scores = {}
    for name in names or task.metrics:
        with warnings.catch_warnings():  # an untrained head often predicts a constant: handled below
            warnings.simplefilter("ignore", ConstantInputWarning)
            value = float(_METRICS[name](labels, predictions))
        scores[name] = 0.0 if np.isnan(value) else value
    return scores
