"""Pattern shares corrected for the classifier's cross-validated errors."""

import numpy as np

from classifier.correction import corrected_shares

TRUE = np.array([0.5, 0.2, 0.1, 0.1, 0.1])
RATES = np.array(
    [
        [0.8, 0.0, 0.1, 0.0, 0.1],
        [0.0, 0.7, 0.3, 0.0, 0.0],
        [0.1, 0.1, 0.8, 0.0, 0.0],
        [0.1, 0.0, 0.0, 0.7, 0.2],
        [0.2, 0.0, 0.0, 0.1, 0.7],
    ]
)
EVERY_CLASS = np.ones(5, dtype=bool)


def corrected_without_sampling(observed, confusion, possible):
    """The correction of shares known exactly (every resample of the examples gives ``observed``):
    the interval is the confusion matrix's alone."""
    return corrected_shares(observed, np.tile(observed, (1000, 1)), confusion, possible)


def test_a_perfect_classifier_changes_nothing():
    shares, intervals = corrected_without_sampling(TRUE, np.diag([100, 50, 40, 30, 20]), EVERY_CLASS)
    assert np.allclose(shares, TRUE) and np.allclose(intervals, np.stack([TRUE, TRUE], axis=1))


def test_known_errors_are_undone_within_an_interval_that_narrows_with_more_labels():
    observed = RATES.T @ TRUE  # what the classifier reports on maps whose true shares are TRUE
    assert not np.allclose(observed, TRUE, atol=0.02)
    shares, few = corrected_without_sampling(observed, np.round(RATES * 40), EVERY_CLASS)
    assert np.allclose(shares, TRUE, atol=0.02)
    _, many = corrected_without_sampling(observed, np.round(RATES * 4000), EVERY_CLASS)
    assert ((few[:, 0] <= TRUE + 1e-9) & (TRUE - 1e-9 <= few[:, 1])).all()
    assert ((many[:, 1] - many[:, 0]) < (few[:, 1] - few[:, 0])).all()


def test_a_perfect_classifier_on_resampled_examples_gives_the_resamples_interval():
    resampled = np.random.default_rng(0).dirichlet(200 * TRUE, size=1000)  # shares on resamples of the examples
    shares, intervals = corrected_shares(TRUE, resampled, np.diag([100, 50, 40, 30, 20]), EVERY_CLASS)
    assert np.allclose(shares, TRUE)
    assert np.allclose(intervals, np.percentile(resampled, [2.5, 97.5], axis=0).T)


def test_a_class_that_cannot_occur_gets_no_share():
    possible = np.array([True, True, True, False, True])
    shares, intervals = corrected_without_sampling(np.array([0.5, 0.2, 0.2, 0.0, 0.1]), np.round(RATES * 100), possible)
    assert shares[3] == 0.0 and (intervals[3] == 0.0).all() and np.isclose(shares.sum(), 1.0)
