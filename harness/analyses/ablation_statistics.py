"""What the scores of the ablation's variants say: one family of paired tests (all heads or
all layers of one mode) as grids with Holm's correction, how many pruning steps stay within
one point of the intact score, and Spearman's rho between two grids of heads.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from scipy.stats import ConstantInputWarning, spearmanr

from harness.analyses.significance import Differences, holm
from harness.views.ablation import ALPHA

ONE_POINT = 0.01  # "a drop of 1 point": 0.01 of the metric (1 percentage point of accuracy)


def within_one_point(scores: list[float], intact: float) -> int:
    """How many pruning steps go before the score first drops by more than one point."""
    steps = 0
    for score in scores[1:]:
        if score < intact - ONE_POINT:
            break
        steps += 1
    return steps


def family(differences: Differences, shape: tuple[int, ...]) -> dict[str, Any]:
    """One family of tests (all heads or all layers of one mode) as grids: the deltas, their
    interval bounds, the p-values and the Holm-adjusted p-values."""
    adjusted = holm(differences.p_values)
    return {"delta": differences.differences.reshape(shape).tolist(),
            "low": differences.intervals[:, 0].reshape(shape).tolist(),
            "high": differences.intervals[:, 1].reshape(shape).tolist(),
            "p": differences.p_values.reshape(shape).tolist(), "p_holm": adjusted.reshape(shape).tolist(),
            "significant": int((adjusted < ALPHA).sum())}


def spearman(first: Any, second: Any) -> float | None:
    """Spearman's rho of two flattened grids; None when either is constant."""
    with warnings.catch_warnings():  # a constant grid (all deltas 0 on a tiny dev set) is answered with None
        warnings.simplefilter("ignore", ConstantInputWarning)
        rho = spearmanr(np.ravel(first), np.ravel(second))[0]
    return None if np.isnan(rho) else float(rho)
