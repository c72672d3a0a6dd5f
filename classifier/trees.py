"""Gradient-boosted decision trees on a map's measurements, evaluated as tensors on the maps' device.

The labelling guideline draws its lines on measurements of the map (`classifier.features`), so
the classes are close to thresholds on a few numbers; boosted trees learn such thresholds from
few labels and, grouped by task, generalise to unseen tasks better than the CNN (docs/classifier.md).
They are fitted with scikit-learn's `HistGradientBoostingClassifier` and exported to tensors,
each tree completed to a full binary tree of the deepest tree's depth (a leaf above that depth
becomes a chain of nodes that always go left, ending in copies of its value), so that
prediction needs no scikit-learn and runs wherever the attention maps are: every split of
every tree is compared at once, then each map walks down its trees one level per step,
picking among the level's nodes by the directions it took above (elementwise selections,
no index gathers). The maps run along the last dimension throughout, so that a split reads its
measure for all maps as one contiguous row (gathering columns was seven times slower on a CPU).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from sklearn.ensemble import HistGradientBoostingClassifier
from torch import nn

from classifier.data import CLASSES


def fit_trees(measures: np.ndarray, labels: np.ndarray, depth: int, rounds: int, seed: int) -> MeasuredTrees:
    """Boosted trees on (maps, measures) ``measures`` and (maps,) class indices, each class weighted by
    the inverse of its frequency (the target is macro-F1, and `diagonal` is rare)."""
    model = HistGradientBoostingClassifier(
        max_depth=depth, max_iter=rounds, class_weight="balanced", early_stopping=False, random_state=seed
    )
    model.fit(measures, labels)
    if list(model.classes_) != list(range(len(CLASSES))):
        raise ValueError(
            f"the training labels cover only classes {[CLASSES[i] for i in model.classes_]}; "
            f"the trees need an example of every one of {', '.join(CLASSES)}"
        )
    return MeasuredTrees.from_sklearn(model)


class MeasuredTrees(nn.Module):
    """(count, measures) -> (count, classes) logits: a baseline plus the leaf value of each class's trees.

    Buffers, complete binary trees of ``levels`` levels in heap order (node i's children are
    2i + 1 and 2i + 2): ``feature`` and ``threshold`` (trees, 2**levels - 1) of each split (go
    right where the measure exceeds the threshold; float64, scikit-learn's own thresholds, so a
    measure goes the same way as there), ``value`` (trees, 2**levels) of each leaf,
    ``tree_class`` (trees,) the class each tree adds to, ``baseline`` (classes,).
    """

    uses_images = False
    chunk = 256  # maps per step: the (splits, chunk) comparisons stay in cache (256-512 measured fastest on CPU)
    feature: torch.Tensor  # the buffers, declared so that reading one is a tensor, not any module attribute
    threshold: torch.Tensor
    value: torch.Tensor
    tree_class: torch.Tensor
    baseline: torch.Tensor
    per_class: torch.Tensor

    def __init__(
        self,
        feature: torch.Tensor,
        threshold: torch.Tensor,
        value: torch.Tensor,
        tree_class: torch.Tensor,
        baseline: torch.Tensor,
    ) -> None:
        super().__init__()
        for name, tensor in (
            ("feature", feature),
            ("threshold", threshold),
            ("value", value),
            ("tree_class", tree_class),
            ("baseline", baseline),
        ):
            self.register_buffer(name, tensor)
        self.levels = int(math.log2(feature.shape[1] + 1))
        one_hot = torch.zeros(len(tree_class), len(baseline), dtype=value.dtype)
        one_hot[torch.arange(len(tree_class)), tree_class] = 1
        self.register_buffer("per_class", one_hot, persistent=False)

    @classmethod
    def from_sklearn(cls, model: HistGradientBoostingClassifier) -> MeasuredTrees:
        """The fitted ``model``'s trees (its private `_predictors`, read once here) as complete trees."""
        trees = [(predictor.nodes, index) for round_ in model._predictors for index, predictor in enumerate(round_)]
        levels = int(max(nodes["depth"].max() for nodes, _ in trees))
        splits = 2**levels - 1
        feature = np.zeros((len(trees), splits), dtype=np.int64)
        threshold = np.full((len(trees), splits), np.inf)  # padding splits always go left
        value = np.zeros((len(trees), 2**levels))
        for row, (nodes, _) in enumerate(trees):
            pending = [(0, 0, 0)]  # (sklearn node, heap position, depth)
            while pending:
                node, position, depth = pending.pop()
                if depth == levels:
                    value[row, position - splits] = nodes[node]["value"]
                elif nodes[node]["is_leaf"]:
                    pending += [(node, 2 * position + 1, depth + 1), (node, 2 * position + 2, depth + 1)]
                else:
                    feature[row, position], threshold[row, position] = (
                        nodes[node]["feature_idx"],
                        nodes[node]["num_threshold"],
                    )
                    pending += [
                        (nodes[node]["left"], 2 * position + 1, depth + 1),
                        (nodes[node]["right"], 2 * position + 2, depth + 1),
                    ]
        return cls(
            torch.tensor(feature),
            torch.tensor(threshold),
            torch.tensor(value, dtype=torch.float32),
            torch.tensor([index for _, index in trees]),
            torch.tensor(model._baseline_prediction[0], dtype=torch.float32),
        )

    @classmethod
    def from_state_dict(cls, state: dict[str, torch.Tensor]) -> MeasuredTrees:
        """Trees of the shapes stored in ``state``, loaded from it."""
        return cls(**{name: tensor.clone() for name, tensor in state.items()})

    def forward(self, measures: torch.Tensor) -> torch.Tensor:
        """Logits of (count, measures) ``measures`` -> (count, classes)."""
        count, (trees, splits) = len(measures), self.feature.shape
        by_measure = measures.to(torch.float64).T.contiguous()  # (measures, count)
        right = torch.index_select(by_measure, 0, self.feature.flatten()) > self.threshold.flatten()[:, None]
        right = right.view(trees, splits, count)
        taken: list[torch.Tensor] = []  # per level, (trees, count): whether each map went right there
        for level in range(self.levels):
            nodes = right[:, 2**level - 1 : 2 ** (level + 1) - 1]  # the level's nodes, in heap order
            for went_right in taken:  # the direction taken at the root halves them first
                half = nodes.shape[1] // 2
                nodes = torch.where(went_right[:, None], nodes[:, half:], nodes[:, :half])
            taken.append(nodes[:, 0])
        leaf = torch.zeros(trees, count, dtype=torch.int64, device=measures.device)
        for went_right in taken:  # the directions, root first, are the leaf's index in binary
            leaf = 2 * leaf + went_right
        leaves = self.value.gather(1, leaf)  # (trees, count)
        return self.baseline + leaves.T.contiguous() @ self.per_class
