"""What the scores of the ablation's variants say: one family of paired tests (all heads or
all layers of one mode) as grids with Holm's correction; the cross-fitted pruning curves (each
example scored under the masks its orders ranked on the other half), their areas and the
importance order's against the random and the oracle orders with paired bootstrap intervals;
how many pruning steps stay within one point of the intact score; and Spearman's rho between
two grids of heads.
"""

from __future__ import annotations

import warnings

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import ConstantInputWarning, beta, spearmanr

from harness.analyses.significance import (
    Differences,
    bootstrap_differences,
    bootstrap_metric_rows,
    holm,
    metric_rows,
    simultaneous_level,
)
from harness.views.ablation_evidence import ALPHA
from harness.views.ablation_results import Areas, Family, is_random
from harness.views.evidence import LEVEL, EffectVerdict, interval_of, interval_verdict

ORDER_RESAMPLING_SEED = 1  # the random orders' resamples: fixed, so a stored area's interval recomputes the same
ONE_POINT = 0.01  # "a drop of 1 point": 0.01 of the metric (1 percentage point of accuracy)
Halves = tuple[np.ndarray, np.ndarray]  # the example indices of the two halves the pruning is cross-fitted on
AGAINST = {
    "random": "the mean of the seeded random orders (ours; the orders resampled too)",
    "oracle": "the individual oracle order (single heads gated to 0, least harmful first)",
}


def within_one_point(scores: list[float], intact: float) -> int:
    """How many pruning steps go before the score first drops by more than one point."""
    steps = 0
    for score in scores[1:]:
        if score < intact - ONE_POINT:
            break
        steps += 1
    return steps


def normalised_per_layer(raw: np.ndarray) -> np.ndarray:
    """Importance (layers, heads) divided by the L2 norm of its layer (Michel et al.); a layer of zeros stays 0."""
    norms = np.linalg.norm(raw, axis=1, keepdims=True)
    return np.divide(raw, norms, out=np.zeros_like(raw), where=norms > 0)


def held_out_predictions(
    where: list[tuple[str, int, int, int]], predictions: np.ndarray, halves: Halves, intact: np.ndarray, steps: int
) -> dict[str, np.ndarray]:
    """Per pruning order, the cross-fitted (steps, examples) predictions: at step 0 the intact
    model's; at each later step, each example's under the mask its order ranked on the other
    half (``where``: `harness.analyses.ablation_masks.pruning_masks`' (order, half ranked on,
    step, mask index); ``predictions``: (masks, examples))."""
    out: dict[str, np.ndarray] = {}
    for order, half, step, index in where:
        rows = out.setdefault(order, np.repeat(intact[None], steps, axis=0))
        scored = halves[1 - half]
        rows[step, scored] = predictions[index, scored]
    return out


def area_under(scores: np.ndarray, fractions: tuple[float, ...]) -> np.ndarray:
    """The area under pruning curves (score against the share of heads pruned, 0 to 1) along
    their last axis: the mean score over the pruning range, by the trapezoid rule."""
    return np.trapezoid(scores, np.asarray(fractions), axis=-1)


def area_comparisons(
    metric: str, held_out: dict[str, np.ndarray], labels: np.ndarray, fractions: tuple[float, ...]
) -> Areas:
    """The area under each order's cross-fitted pruning curve and, where there is an importance
    order, its area minus the random orders' mean and minus the oracle's: each with its 95%
    interval over paired bootstrap resamples of the examples (the same resamples for every
    order; the orders as ranked, held fixed), the random orders' mean also over resamples of
    the random orders (`resampled_random_mean`), and a verdict, above 0 or not."""
    names = list(held_out)
    stacked = np.concatenate([held_out[name] for name in names])
    shape = (len(names), len(fractions))
    observed = area_under(metric_rows(metric, stacked, labels).reshape(shape), fractions)
    resampled = area_under(bootstrap_metric_rows(metric, stacked, labels).reshape(-1, *shape), fractions)
    randoms = np.asarray([index for index, name in enumerate(names) if is_random(name)])
    against = {
        "random": (observed[randoms].mean(), resampled_random_mean(resampled[:, randoms])),
        "oracle": (observed[names.index("oracle")], resampled[:, names.index("oracle")]),
    }
    out: Areas = {"areas": dict(zip(names, observed.tolist()))}
    if "importance" in names:
        chosen = names.index("importance")
        differences = {
            baseline: area_difference(
                observed[chosen] - area,
                resampled[:, chosen] - samples,
                len(labels),
                f"area under the cross-fitted pruning curve of dev {metric}, "
                f"importance order minus {AGAINST[baseline]}",
            )
            for baseline, (area, samples) in against.items()
        }
        out["importance_vs_random"], out["importance_vs_oracle"] = differences["random"], differences["oracle"]
    return out


def resampled_random_mean(areas: np.ndarray) -> np.ndarray:
    """The random orders' mean area on each bootstrap resample of the examples (``areas``: (R,
    orders)), over a resample of the orders drawn with them (seeded): the orders are a sample of
    all random orders, so their own spread belongs in the interval of their mean."""
    draws = np.random.default_rng(ORDER_RESAMPLING_SEED).integers(0, areas.shape[1], areas.shape)
    return np.take_along_axis(areas, draws, axis=1).mean(axis=1)


def area_difference(value: float, samples: np.ndarray, count: int, statistic: str) -> EffectVerdict:
    """A difference of areas with its bootstrap ``samples``: its value, 95% interval and verdict."""
    return {"value": float(value), **interval_verdict(interval_of(samples), "dev examples", count, statistic)}


def gain_bounds(metric: str, predictions: np.ndarray, reference: np.ndarray, labels: np.ndarray) -> list[float | None]:
    """Each row's upper 95% bound on its gain over ``reference``, what the equivalence test of
    "disabling some head helps" reads (`harness.views.ablation_evidence.disabling_gain`). For accuracy an
    exact bound: the gain is the rate of examples the row puts right minus the rate it puts
    wrong, so its bound is the Clopper-Pearson upper bound of the first minus the lower bound of
    the second, each at 98.75% (Bonferroni over the two); a row that changes no prediction is
    not taken to change nothing beyond the sample (its bound is about 3.7 / n, not 0). For other
    metrics the row's bootstrap interval's upper end, and None (no evidence) for a row that
    changes no prediction, whose bootstrap interval is [0, 0] however few the examples."""
    predictions = np.atleast_2d(predictions)
    if metric != "accuracy":
        _, intervals = bootstrap_differences(metric, predictions, reference, labels)
        changed = (predictions != reference).any(axis=1)
        return [float(high) if moved else None for high, moved in zip(intervals[:, 1], changed)]
    right, reference_right = predictions == labels, reference == labels
    gained, lost = (right & ~reference_right).sum(axis=1), (~right & reference_right).sum(axis=1)
    count, tail = len(labels), (1 - LEVEL) / 4
    upper_gained = np.where(gained < count, beta.ppf(1 - tail, gained + 1, count - gained), 1.0)
    lower_lost = np.where(lost > 0, beta.ppf(tail, lost, count - lost + 1), 0.0)
    return (upper_gained - lower_lost).tolist()


def family(differences: Differences, shape: tuple[int, ...], bounds: list[float | None]) -> Family:
    """One family of tests (all heads or all layers of one mode) as grids: the deltas, their
    95% interval bounds, their simultaneous interval bounds at the family's Bonferroni-adjusted
    level (what is shown beside the Holm-adjusted p), each member's upper bound on its gain for
    the equivalence test (``gain_bound``, `gain_bounds`), the p-values and the Holm-adjusted
    p-values."""
    adjusted = holm(differences.p_values)
    return {
        "delta": differences.differences.reshape(shape).tolist(),
        "low": differences.intervals[:, 0].reshape(shape).tolist(),
        "high": differences.intervals[:, 1].reshape(shape).tolist(),
        "low_simultaneous": differences.simultaneous[:, 0].reshape(shape).tolist(),
        "high_simultaneous": differences.simultaneous[:, 1].reshape(shape).tolist(),
        "simultaneous_level": simultaneous_level(differences.differences.size),
        "gain_bound": np.asarray(bounds, dtype=object).reshape(shape).tolist(),
        "p": differences.p_values.reshape(shape).tolist(),
        "p_holm": adjusted.reshape(shape).tolist(),
        "significant": int((adjusted < ALPHA).sum()),
    }


def spearman(first: ArrayLike, second: ArrayLike) -> float | None:
    """Spearman's rho of two flattened grids; None when either is constant."""
    with warnings.catch_warnings():  # a constant grid (all deltas 0 on a tiny dev set) is answered with None
        warnings.simplefilter("ignore", ConstantInputWarning)
        rho = spearmanr(np.ravel(first), np.ravel(second))[0]
    return None if np.isnan(rho) else float(rho)
