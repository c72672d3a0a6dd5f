"""Pattern shares corrected for the classifier's errors, with intervals.

A classifier with confusion matrix M (M[i, j] = P(predicted j | labelled i), estimated by
grouped cross-validation, `classifier.crossval`) turns true shares p into expected observed
shares q = M' p. Given the observed shares of a run, the corrected shares are the p >= 0,
summing to 1, that best explain them (non-negative least squares, then normalised; the
"adjusted classify and count" of the quantification literature). The interval covers both
things the corrected share is uncertain by: the sample of maps the shares were observed on
(the caller gives the observed shares on bootstrap resamples of its examples) and how well M
is known (in each resample M's rows are redrawn from their multinomial counts, a parametric
bootstrap, and the correction repeated with that draw). Where a class cannot occur (`block`
in a single-sentence input, never predicted there) its row and column are dropped and the
remaining rows renormalised, an approximation: the maps that the classifier would have
called `block` go to their next most likely class, not in proportion.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import nnls


def correct(observed: np.ndarray, rates: np.ndarray) -> np.ndarray:
    """(classes,) shares p >= 0 summing to 1 with rates' p closest to ``observed`` (classes,);
    ``rates``: (classes, classes) rows P(predicted | labelled), each summing to 1."""
    solution, _ = nnls(rates.T, observed)
    total = solution.sum()
    return solution / total if total > 0 else observed


def drawn_rates(rng: np.random.Generator, totals: np.ndarray, rates: np.ndarray) -> np.ndarray:
    """One parametric bootstrap draw of ``rates``: each row redrawn from a multinomial of its
    ``totals`` labelled maps."""
    return np.array([rng.multinomial(int(n), row) / max(n, 1) for n, row in zip(totals, rates)])


def corrected_shares(
    observed: np.ndarray, resampled: np.ndarray, confusion: np.ndarray, possible: np.ndarray, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Corrected shares (classes,) and their 95% intervals (classes, 2); impossible classes get 0.

    ``observed``: (classes,) shares of the predicted classes; ``resampled``: (R, classes) those
    shares on R bootstrap resamples of the examples, each corrected with its own draw of the
    confusion matrix (R copies of ``observed`` leave the examples' sampling out of the
    interval); ``confusion``: (classes, classes) cross-validated counts, rows labelled, columns
    predicted; ``possible``: (classes,) bool.
    """
    counts = confusion[np.ix_(possible, possible)].astype(float)
    totals = counts.sum(axis=1)
    rates = counts / np.maximum(totals, 1)[:, None]
    rng = np.random.default_rng(seed)
    draws = np.array([correct(normalised(seen[possible]), drawn_rates(rng, totals, rates)) for seen in resampled])
    shares = np.zeros(len(observed))
    intervals = np.zeros((len(observed), 2))
    shares[possible] = correct(normalised(observed[possible]), rates)
    intervals[possible] = np.percentile(draws, [2.5, 97.5], axis=0).T
    return shares, intervals


def corrected_changes(
    observed: tuple[np.ndarray, np.ndarray],
    resampled: tuple[np.ndarray, np.ndarray],
    confusion: np.ndarray,
    possible: np.ndarray,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """The change of each corrected share from one checkpoint to another (classes,) and its 95%
    interval (classes, 2); impossible classes get 0. ``observed``: each checkpoint's (classes,)
    shares; ``resampled``: each checkpoint's (R, classes) shares on the same R paired resamples
    of the examples. One classifier labelled both checkpoints' maps, so each resample corrects
    both with the same draw of the confusion matrix: the change carries the classifier's
    uncertainty as the shares do, without counting it twice."""
    counts = confusion[np.ix_(possible, possible)].astype(float)
    totals = counts.sum(axis=1)
    rates = counts / np.maximum(totals, 1)[:, None]
    rng = np.random.default_rng(seed)
    draws = []
    for before, after in zip(*resampled):
        drawn = drawn_rates(rng, totals, rates)
        draws.append(correct(normalised(after[possible]), drawn) - correct(normalised(before[possible]), drawn))
    changes = np.zeros(len(possible))
    intervals = np.zeros((len(possible), 2))
    before, after = (correct(normalised(shares[possible]), rates) for shares in observed)
    changes[possible] = after - before
    intervals[possible] = np.percentile(np.array(draws), [2.5, 97.5], axis=0).T
    return changes, intervals


def normalised(shares: np.ndarray) -> np.ndarray:
    """``shares`` scaled to sum to 1 (all zeros stay zeros)."""
    return shares / max(shares.sum(), 1e-12)
