"""Paired statistics of many model variants scored on the same examples.

The dev sets of the small GLUE tasks are a few hundred examples, so the change of a score
when one head is disabled is mostly noise. Every difference here is paired (each variant
and its reference predict the same examples) and vectorised over variants:

- `metric_rows` (`tasks.metrics`): a GLUE metric of each variant's predictions, (variants, examples) -> (variants,);
- `bootstrap_differences`: the difference to a reference with its 95% percentile interval over
  resampled examples (the same resamples for every variant, so intervals are comparable);
- `bootstrap_metric_rows`: the metric of every variant on each of those resamples, for a
  statistic that combines several variants (the area under a pruning curve);
- `paired_p_values`: exact McNemar for accuracy (a two-sided binomial test on the examples the
  two disagree on), a paired permutation test (swap the two predictions of an example at
  random) for every other metric;
- `holm`: Holm-Bonferroni adjusted p-values over a family of tests (family-wise error rate).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import binomtest

from tasks.metrics import metric_rows

BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 0  # fixed, so an interval drawn again from the same stored predictions is the same
PERMUTATIONS = 10_000  # p-values down to 1e-4: below the Holm threshold 0.05 / 144 of a 12 x 12 sweep


@dataclass
class Differences:
    """Per variant: the metric difference to the reference, its 95% bootstrap interval
    (variants, 2) and the two-sided paired p-value."""

    differences: np.ndarray
    intervals: np.ndarray
    p_values: np.ndarray


def bootstrap_differences(
    metric: str, predictions: np.ndarray, reference: np.ndarray, labels: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``metric`` of each row of ``predictions`` (variants, n) minus that of ``reference`` (n,),
    and the 95% percentile interval of that difference over `BOOTSTRAP_RESAMPLES` resamples of
    the examples (variants, 2)."""
    predictions = np.atleast_2d(predictions)
    count = len(labels)
    observed = metric_rows(metric, predictions, labels) - metric_rows(metric, reference[None], labels)[0]
    resamples = np.random.default_rng(BOOTSTRAP_SEED).integers(0, count, (BOOTSTRAP_RESAMPLES, count))
    resampled = np.stack(
        [
            metric_rows(metric, predictions[:, chosen], labels[chosen])
            - metric_rows(metric, reference[None, chosen], labels[chosen])[0]
            for chosen in resamples
        ],
        axis=1,
    )
    return observed, np.percentile(resampled, [2.5, 97.5], axis=1).T


def bootstrap_metric_rows(metric: str, predictions: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """``metric`` of each row of ``predictions`` (variants, n) on each of `BOOTSTRAP_RESAMPLES`
    resamples of the examples, the same resamples for every row (and as `bootstrap_differences`
    draws them): (resamples, variants)."""
    count = len(labels)
    resamples = np.random.default_rng(BOOTSTRAP_SEED).integers(0, count, (BOOTSTRAP_RESAMPLES, count))
    return np.stack([metric_rows(metric, predictions[:, chosen], labels[chosen]) for chosen in resamples])


def mcnemar_p_values(predictions: np.ndarray, reference: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Exact two-sided McNemar p-value of each row of ``predictions`` against ``reference``:
    among the examples exactly one of the two gets right, is either side more often right?"""
    right = np.atleast_2d(predictions) == labels
    reference_right = reference == labels
    gained = (right & ~reference_right).sum(axis=1)
    lost = (~right & reference_right).sum(axis=1)
    return np.array(
        [1.0 if g + lost_ == 0 else binomtest(int(g), int(g + lost_)).pvalue for g, lost_ in zip(gained, lost)]
    )


def permutation_p_values(
    metric: str, predictions: np.ndarray, reference: np.ndarray, labels: np.ndarray, observed: np.ndarray
) -> np.ndarray:
    """Paired permutation p-value of each row's ``observed`` difference: under the null the
    two predictions of an example are exchangeable, so swap them at random `PERMUTATIONS`
    times; p = (swaps at least as extreme + 1) / (permutations + 1)."""
    predictions = np.atleast_2d(predictions).astype(float)
    generator = np.random.default_rng(BOOTSTRAP_SEED)
    extreme = np.zeros(len(predictions))
    for _ in range(PERMUTATIONS):
        swap = generator.random(len(labels)) < 0.5
        first = np.where(swap, reference, predictions)
        second = np.where(swap, predictions, reference)
        difference = metric_rows(metric, first, labels) - metric_rows(metric, second, labels)
        extreme += np.abs(difference) >= np.abs(observed) - 1e-12
    return (extreme + 1) / (PERMUTATIONS + 1)


def paired_differences(metric: str, predictions: np.ndarray, reference: np.ndarray, labels: np.ndarray) -> Differences:
    """Differences, bootstrap intervals and p-values (McNemar for accuracy, else permutation)."""
    observed, intervals = bootstrap_differences(metric, predictions, reference, labels)
    if metric == "accuracy":
        p_values = mcnemar_p_values(predictions, reference, labels)
    else:
        p_values = permutation_p_values(metric, predictions, reference, labels, observed)
    return Differences(observed, intervals, p_values)


def holm(p_values: np.ndarray) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values (the family-wise error rate stays at the level one
    compares them with): the k-th smallest of m is multiplied by m - k + 1, kept monotone, capped at 1."""
    p_values = np.asarray(p_values, dtype=float)
    order = np.argsort(p_values, kind="stable")
    count = len(p_values)
    scaled = np.maximum.accumulate(p_values[order] * (count - np.arange(count)))
    adjusted = np.empty(count)
    adjusted[order] = np.minimum(scaled, 1.0)
    return adjusted
