"""Which heads each variant of the ablation disables, as the stacked (V, layers, heads) masks
`harness.model.forward.forward_variants` scores many of in one pass: every single head and
every single layer, each mode; and the steps of each pruning order (by importance, the
oracle, seeded random orders), 10% of all heads at a time, each distinct mask once.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from harness.model.forward import Interventions
from harness.views.ablation import MODES

PRUNING_FRACTIONS = tuple(step / 10 for step in range(11))  # Michel et al.: 10% of all heads at a time
RANDOM_ORDERS = 5


def single_variants(layers: int, heads: int) -> tuple[list[dict[str, Any]], Interventions]:
    """Every single head and every single layer, disabled each way: their descriptions and the
    stacked (V, layers, heads) masks, in the order heads (layer-major) then layers, per mode."""
    described = [{"mode": mode, "layer": layer, "head": head}
                 for mode in MODES for layer in range(layers) for head in [*range(heads), None]]
    gates = torch.ones(len(described), layers, heads)
    uniform = torch.zeros(len(described), layers, heads, dtype=torch.bool)
    for index, variant in enumerate(described):
        chosen = (index, variant["layer"], slice(None) if variant["head"] is None else variant["head"])
        if variant["mode"] == "zero":
            gates[chosen] = 0.0
        else:
            uniform[chosen] = True
    return described, Interventions(head_gates=gates, uniform_heads=uniform)


def pruning_orders(importance: np.ndarray | None, zero_deltas: np.ndarray, seed: int) -> dict[str, list[int]]:
    """Orders of the flat head indices (layer * heads + head) to prune: by increasing
    importance, the oracle (the single-head deltas of gating to 0, least harmful first) and
    `RANDOM_ORDERS` seeded random permutations; ties keep the head order."""
    count = zero_deltas.size
    orders = {"oracle": np.argsort(-zero_deltas.ravel(), kind="stable").tolist()}
    if importance is not None:
        orders["importance"] = np.argsort(importance.ravel(), kind="stable").tolist()
    for index in range(RANDOM_ORDERS):
        orders[f"random{index + 1}"] = np.random.default_rng(seed + index).permutation(count).tolist()
    return orders


def pruned_counts(count: int) -> list[int]:
    """Heads pruned at each step of `PRUNING_FRACTIONS` of ``count`` heads."""
    return [round(fraction * count) for fraction in PRUNING_FRACTIONS]


def pruning_masks(orders: dict[str, list[int]], layers: int,
                  heads: int) -> tuple[list[tuple[str, int, int]], torch.Tensor]:
    """The distinct (V, layers, heads) gates of every order's pruning steps past 0 heads, and
    for each (order, step) the index of its mask among them."""
    masks: dict[tuple[int, ...], int] = {}
    where = []
    for name, order in orders.items():
        for step, pruned in enumerate(pruned_counts(layers * heads)):
            if pruned == 0:
                continue
            key = tuple(sorted(order[:pruned]))
            where.append((name, step, masks.setdefault(key, len(masks))))
    gates = torch.ones(len(masks), layers * heads)
    for key, index in masks.items():
        gates[index, list(key)] = 0.0
    return where, gates.view(-1, layers, heads)
