"""Which heads each variant of the ablation disables, as the stacked (V, layers, heads) masks
`harness.model.forward.forward_variants` scores many of in one pass: every single head and
every single layer, each mode; and the steps of each pruning order (by importance, the
oracle, seeded random orders), 10% of all heads at a time, each distinct mask once. The
pruning is cross-fitted: the examples are split in two seeded halves, each order is ranked
on one half and scored on the other, so an order has one ranking per half (a random order
the same on both).
"""

from __future__ import annotations

from typing import TypedDict

import numpy as np
import torch

from harness.analyses.ablation_statistics import Halves, normalised_per_layer
from harness.analyses.significance import metric_rows
from harness.model.forward import Interventions
from harness.views.ablation_results import MODES, RANDOM


class Variant(TypedDict):
    """One single-head or single-layer variant: the head (or, None, every head of the layer) disabled by ``mode``."""

    mode: str  # one of `MODES`
    layer: int
    head: int | None


PRUNING_FRACTIONS = tuple(step / 10 for step in range(11))  # Michel et al.: 10% of all heads at a time
RANDOM_ORDERS = 20  # a sample of all orders large enough to resample (their areas spread as much as the examples')


def single_variants(layers: int, heads: int) -> tuple[list[Variant], Interventions]:
    """Every single head and every single layer, disabled each way: their descriptions and the
    stacked (V, layers, heads) masks, in the order heads (layer-major) then layers, per mode."""
    described: list[Variant] = [
        {"mode": mode, "layer": layer, "head": head}
        for mode in MODES
        for layer in range(layers)
        for head in [*range(heads), None]
    ]
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
        orders[f"{RANDOM}{index + 1}"] = np.random.default_rng(seed + index).permutation(count).tolist()
    return orders


def cross_fitted_orders(
    halves: Halves,
    gates: np.ndarray | None,
    zero_heads: np.ndarray,
    intact: np.ndarray,
    labels: np.ndarray,
    metric: str,
    seed: int,
) -> dict[str, list[list[int]]]:
    """Each pruning order ranked on each half, from that half's examples only: by the importance
    on them (``gates``: |dL(x)/d xi_h| per example, (examples, layers, heads), or None), by the
    single heads' gated-to-0 changes on them (the oracle; ``zero_heads``: those variants'
    (layers x heads, examples) predictions, layer-major, against the ``intact`` ones), and the
    seeded random orders (the same on both)."""
    rankings = []
    for examples in halves:
        deltas = (
            metric_rows(metric, zero_heads[:, examples], labels[examples])
            - metric_rows(metric, intact[None, examples], labels[examples])[0]
        )
        importance = None if gates is None else normalised_per_layer(gates[examples].mean(axis=0))
        rankings.append(pruning_orders(importance, deltas, seed))
    return {order: [ranked[order] for ranked in rankings] for order in rankings[0]}


def cross_fitting_halves(count: int, seed: int) -> Halves:
    """The ``count`` examples (indices in stream order) split in two seeded halves, each sorted:
    the first has ``count // 2``."""
    shuffled = np.random.default_rng(seed).permutation(count)
    return np.sort(shuffled[: count // 2]), np.sort(shuffled[count // 2 :])


def pruned_counts(count: int) -> list[int]:
    """Heads pruned at each step of `PRUNING_FRACTIONS` of ``count`` heads."""
    return [round(fraction * count) for fraction in PRUNING_FRACTIONS]


def pruning_masks(
    orders: dict[str, list[list[int]]], layers: int, heads: int
) -> tuple[list[tuple[str, int, int, int]], torch.Tensor]:
    """The distinct (V, layers, heads) gates of the pruning steps past 0 heads of every order,
    ranked on each half (``orders``: per order, its ranking on each half), and for each
    (order, half, step) the index of its mask among them."""
    masks: dict[tuple[int, ...], int] = {}
    where = []
    for name, rankings in orders.items():
        for half, order in enumerate(rankings):
            for step, pruned in enumerate(pruned_counts(layers * heads)):
                if pruned == 0:
                    continue
                key = tuple(sorted(order[:pruned]))
                where.append((name, half, step, masks.setdefault(key, len(masks))))
    gates = torch.ones(len(masks), layers * heads)
    for key, index in masks.items():
        gates[index, list(key)] = 0.0
    return where, gates.view(-1, layers, heads)
