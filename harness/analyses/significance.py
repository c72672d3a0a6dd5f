"""Paired statistics of many model variants scored on the same examples.

The dev sets of the small GLUE tasks are a few hundred examples, so the change of a score
when one head is disabled is mostly noise. Every difference here is paired (each variant
and its reference predict the same examples) and vectorised over variants:

- `metric_rows` (`tasks.metrics`): a GLUE metric of each variant's predictions, (variants, examples) -> (variants,);
- `bootstrap_differences`: the difference to a reference with its 95% percentile interval over
  resampled examples (the same resamples for every variant, so intervals are comparable);
- `simultaneous_intervals`: the same percentile intervals at the Bonferroni-adjusted level of a
  family of V tests (1 - 0.05 / V), so an interval shown beside a Holm-adjusted p is at the
  level of that test: it covers all V changes at once with 95% probability; enough resamples
  are drawn for its tails (`SIMULTANEOUS_TAIL_DRAWS` in each);
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
FAMILY_ALPHA = 0.05  # the family-wise error rate of Holm's correction and of the simultaneous intervals
SIMULTANEOUS_TAIL_DRAWS = 10  # resamples beyond each end of a simultaneous interval, at least
CHUNK = 2048  # resamples drawn and scored at a time (memory)


@dataclass
class Differences:
    """Per variant: the metric difference to the reference, its 95% bootstrap interval
    (variants, 2), its simultaneous interval at the family's Bonferroni-adjusted level
    (variants, 2; `simultaneous_intervals`) and the two-sided paired p-value."""

    differences: np.ndarray
    intervals: np.ndarray
    p_values: np.ndarray
    simultaneous: np.ndarray


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


def simultaneous_level(family_size: int) -> float:
    """The Bonferroni-adjusted confidence level of each of ``family_size`` intervals that are to
    cover all of them at once with probability 1 - `FAMILY_ALPHA`."""
    return 1 - FAMILY_ALPHA / max(family_size, 1)


def simultaneous_intervals(
    metric: str, predictions: np.ndarray, reference: np.ndarray, labels: np.ndarray
) -> np.ndarray:
    """Percentile intervals (variants, 2) of each row's ``metric`` minus the reference's, at the
    Bonferroni-adjusted level over the rows (`simultaneous_level`), from enough paired bootstrap
    resamples of the examples that each tail holds `SIMULTANEOUS_TAIL_DRAWS` of them (the first
    `BOOTSTRAP_RESAMPLES` are those of `bootstrap_differences`)."""
    predictions = np.atleast_2d(predictions)
    tail = (1 - simultaneous_level(len(predictions))) / 2
    resamples = max(BOOTSTRAP_RESAMPLES, int(np.ceil(SIMULTANEOUS_TAIL_DRAWS / tail)))
    samples = resampled_differences(metric, predictions, reference, labels, resamples)
    return np.percentile(samples, [100 * tail, 100 * (1 - tail)], axis=0).T


def resampled_differences(
    metric: str, predictions: np.ndarray, reference: np.ndarray, labels: np.ndarray, resamples: int
) -> np.ndarray:
    """Each row's ``metric`` minus the reference's on ``resamples`` paired bootstrap resamples of
    the examples, drawn as `bootstrap_differences` draws them: (resamples, variants). Accuracy is
    a mean of per-example hits, so its resamples are one product of counts; other metrics are
    computed on each resample."""
    count = len(labels)
    generator = np.random.default_rng(BOOTSTRAP_SEED)
    hits = (predictions == labels).astype(float) - (reference == labels) if metric == "accuracy" else None
    parts = []
    for start in range(0, resamples, CHUNK):
        chosen = generator.integers(0, count, (min(CHUNK, resamples - start), count))
        if hits is not None:
            offsets = (chosen + count * np.arange(len(chosen))[:, None]).ravel()
            drawn = np.bincount(offsets, minlength=len(chosen) * count).reshape(len(chosen), count)
            parts.append(drawn @ hits.T / count)
        else:
            parts += [
                metric_rows(metric, predictions[:, rows], labels[rows])
                - metric_rows(metric, reference[None, rows], labels[rows])[0]
                for rows in chosen
            ]
    return np.vstack(parts) if hits is not None else np.stack(parts)


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
    """Differences, their 95% and simultaneous bootstrap intervals over the rows as one family,
    and p-values (McNemar for accuracy, else permutation)."""
    observed, intervals = bootstrap_differences(metric, predictions, reference, labels)
    if metric == "accuracy":
        p_values = mcnemar_p_values(predictions, reference, labels)
    else:
        p_values = permutation_p_values(metric, predictions, reference, labels, observed)
    simultaneous = simultaneous_intervals(metric, predictions, reference, labels)
    return Differences(observed, intervals, p_values, simultaneous)


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
