"""The boosted trees exported to tensors classify exactly as scikit-learn does."""

import numpy as np
import pytest
import torch
from sklearn.ensemble import HistGradientBoostingClassifier

from classifier.data import CLASSES
from classifier.trees import MeasuredTrees, fit_trees


def toy_measures(count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(count, 6) measures whose class is a threshold rule on three of them, with noise."""
    rng = np.random.default_rng(seed)
    measures = rng.random((count, 6))
    labels = (measures[:, 0] > 0.5).astype(int) + 2 * (measures[:, 3] > 0.7) + (measures[:, 5] > 0.9)
    flipped = rng.random(count) < 0.05
    labels[flipped] = rng.integers(len(CLASSES), size=flipped.sum())
    return measures, np.minimum(labels, len(CLASSES) - 1)


def test_tensor_trees_give_scikit_learns_logits():
    measures, labels = toy_measures(600, 0)
    model = HistGradientBoostingClassifier(
        max_depth=3, max_iter=30, class_weight="balanced", early_stopping=False, random_state=0
    ).fit(measures, labels)
    trees = MeasuredTrees.from_sklearn(model).double()
    test, _ = toy_measures(300, 1)
    logits = trees(torch.tensor(test)).numpy()
    assert np.allclose(logits, model._raw_predict(test), atol=1e-9)
    assert (logits.argmax(axis=1) == model.predict(test)).all()
    reloaded = MeasuredTrees.from_state_dict(trees.state_dict())
    assert torch.equal(reloaded(torch.tensor(test)), trees(torch.tensor(test)))


def test_trees_learn_a_threshold_rule_and_need_every_class():
    measures, labels = toy_measures(800, 2)
    trees = fit_trees(measures, labels, depth=3, rounds=50, seed=0)
    test, truth = toy_measures(400, 3)
    accuracy = (trees(torch.tensor(test, dtype=torch.float32)).argmax(dim=1).numpy() == truth).mean()
    assert accuracy > 0.9  # 5% of the labels are noise
    with pytest.raises(ValueError, match="every one of"):
        fit_trees(measures[labels < 4], labels[labels < 4], depth=3, rounds=5, seed=0)
