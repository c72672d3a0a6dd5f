"""Gradient-boosted decision trees on a map's measurements, evaluated as tensors on the maps' device.

The labelling guideline draws its lines on measurements of the map (`classifier.features`), so
the classes are close to thresholds on a few numbers; boosted trees learn such thresholds from
few labels and, grouped by task, generalise to unseen tasks better than the CNN (docs/classifier.md).
They are fitted with scikit-learn's `HistGradientBoostingClassifier` and exported to flat
tensors (one row per tree: the feature, threshold, children and value of each node), so that
prediction needs no scikit-learn and runs wherever the attention maps are: every tree descends
one level per step for all maps at once.
"""

from __future__ import annotations

import numpy as np
import torch
from sklearn.ensemble import HistGradientBoostingClassifier
from torch import nn

from classifier.data import CLASSES


def fit_trees(measures: np.ndarray, labels: np.ndarray, depth: int, rounds: int, seed: int) -> MeasuredTrees:
    """Boosted trees on (maps, measures) ``measures`` and (maps,) class indices, each class weighted by
    the inverse of its frequency (the target is macro-F1, and `diagonal` is rare)."""
    model = HistGradientBoostingClassifier(max_depth=depth, max_iter=rounds, class_weight="balanced",
                                           early_stopping=False, random_state=seed)
    model.fit(measures, labels)
    if list(model.classes_) != list(range(len(CLASSES))):
        raise ValueError(f"the training labels cover only classes {[CLASSES[i] for i in model.classes_]}; "
                         f"the trees need an example of every one of {', '.join(CLASSES)}")
    return MeasuredTrees.from_sklearn(model)


class MeasuredTrees(nn.Module):
    """(count, measures) -> (count, classes) logits: a baseline plus each class's trees' leaf values.

    Buffers, per tree (trees, nodes): ``feature`` and ``threshold`` (go left where the measure is
    at most the threshold; float64, scikit-learn's own thresholds, so that a measure is sent the
    same way as there), ``left``/``right`` children, ``leaf``, ``value``; ``tree_class``
    (trees,) the class each tree adds to; ``baseline`` (classes,); ``levels`` () the deepest leaf.
    """

    uses_images = False
    chunk = 4096  # maps per step: a (chunk, trees) int64 node table stays at tens of MB

    def __init__(self, feature: torch.Tensor, threshold: torch.Tensor, left: torch.Tensor, right: torch.Tensor,
                 leaf: torch.Tensor, value: torch.Tensor, tree_class: torch.Tensor, baseline: torch.Tensor,
                 levels: torch.Tensor) -> None:
        super().__init__()
        for name, tensor in (("feature", feature), ("threshold", threshold), ("left", left), ("right", right),
                             ("leaf", leaf), ("value", value), ("tree_class", tree_class), ("baseline", baseline),
                             ("levels", levels)):
            self.register_buffer(name, tensor)

    @classmethod
    def from_sklearn(cls, model: HistGradientBoostingClassifier) -> MeasuredTrees:
        """The fitted ``model``'s trees as tensors (its private `_predictors`, read once here)."""
        trees = [(predictor.nodes, index) for round_ in model._predictors for index, predictor in enumerate(round_)]
        width = max(len(nodes) for nodes, _ in trees)

        def table(field: str, dtype: torch.dtype) -> torch.Tensor:
            padded = np.zeros((len(trees), width), dtype=np.float64)
            for row, (nodes, _) in enumerate(trees):
                padded[row, :len(nodes)] = nodes[field]
            return torch.tensor(padded, dtype=dtype)

        leaf = table("is_leaf", torch.bool)
        leaf |= torch.arange(width)[None, :] >= torch.tensor([len(nodes) for nodes, _ in trees])[:, None]
        return cls(table("feature_idx", torch.int64), table("num_threshold", torch.float64),
                   table("left", torch.int64), table("right", torch.int64), leaf, table("value", torch.float32),
                   torch.tensor([index for _, index in trees]), torch.tensor(model._baseline_prediction[0],
                                                                               dtype=torch.float32),
                   torch.tensor(int(max(nodes["depth"].max() for nodes, _ in trees))))

    @classmethod
    def from_state_dict(cls, state: dict[str, torch.Tensor]) -> MeasuredTrees:
        """Trees of the shapes stored in ``state``, loaded from it."""
        return cls(**{name: tensor.clone() for name, tensor in state.items()})

    def forward(self, measures: torch.Tensor) -> torch.Tensor:
        """Logits of (count, measures) ``measures`` -> (count, classes)."""
        trees = torch.arange(self.feature.shape[0], device=measures.device)[None, :]
        measures = measures.to(torch.float64)
        node = torch.zeros(len(measures), trees.shape[1], dtype=torch.int64, device=measures.device)
        for _ in range(int(self.levels)):
            go_left = measures.gather(1, self.feature[trees, node]) <= self.threshold[trees, node]
            child = torch.where(go_left, self.left[trees, node], self.right[trees, node])
            node = torch.where(self.leaf[trees, node], node, child)
        per_class = torch.zeros(trees.shape[1], len(self.baseline), dtype=self.value.dtype, device=measures.device)
        per_class[torch.arange(trees.shape[1], device=measures.device), self.tree_class] = 1
        return self.baseline + self.value[trees, node] @ per_class
