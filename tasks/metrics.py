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
    """The task's metrics; a constant prediction gives 0 for correlations instead of NaN."""
    predictions = predictions_from_logits(task, logits)
    scores = {}
    for name in task.metrics:
        with warnings.catch_warnings():  # an untrained head often predicts a constant: handled below
            warnings.simplefilter("ignore", ConstantInputWarning)
            value = float(_METRICS[name](labels, predictions))
        scores[name] = 0.0 if np.isnan(value) else value
    return scores
