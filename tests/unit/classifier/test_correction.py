"""Pattern shares corrected for the classifier's cross-validated errors."""

import numpy as np

from classifier.correction import corrected_shares

TRUE = np.array([0.5, 0.2, 0.1, 0.1, 0.1])
RATES = np.array([[0.8, 0.0, 0.1, 0.0, 0.1],
                  [0.0, 0.7, 0.3, 0.0, 0.0],
                  [0.1, 0.1, 0.8, 0.0, 0.0],
                  [0.1, 0.0, 0.0, 0.7, 0.2],
                  [0.2, 0.0, 0.0, 0.1, 0.7]])
EVERY_CLASS = np.ones(5, dtype=bool)


def test_a_perfect_classifier_changes_nothing():
    shares, intervals = corrected_shares(TRUE, np.diag([100, 50, 40, 30, 20]), EVERY_CLASS)
    assert np.allclose(shares, TRUE) and np.allclose(intervals, np.stack([TRUE, TRUE], axis=1))


def test_known_errors_are_undone_within_an_interval_that_narrows_with_more_labels():
    observed = RATES.T @ TRUE  # what the classifier reports on maps whose true shares are TRUE
    assert not np.allclose(observed, TRUE, atol=0.02)
    shares, few = corrected_shares(observed, np.round(RATES * 40), EVERY_CLASS)
    assert np.allclose(shares, TRUE, atol=0.02)
    _, many = corrected_shares(observed, np.round(RATES * 4000), EVERY_CLASS)
    assert ((few[:, 0] <= TRUE + 1e-9) & (TRUE - 1e-9 <= few[:, 1])).all()
    assert ((many[:, 1] - many[:, 0]) < (few[:, 1] - few[:, 0])).all()


def test_a_class_that_cannot_occur_gets_no_share():
    possible = np.array([True, True, True, False, True])
    shares, intervals = corrected_shares(np.array([0.5, 0.2, 0.2, 0.0, 0.1]), np.round(RATES * 100), possible)
    assert shares[3] == 0.0 and (intervals[3] == 0.0).all() and np.isclose(shares.sum(), 1.0)
