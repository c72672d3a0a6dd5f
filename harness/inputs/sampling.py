"""The one seeded sampler of the harness: the training subsample, the dev sample a run compares,
and the bounded corpora, treebank and evaluation samples all draw through it."""

from __future__ import annotations

import random
from typing import TypeVar

Item = TypeVar("Item")


def sample(items: list[Item], limit: int | None, seed: int, *, in_order: bool = False) -> list[Item]:
    """A seeded random sample of at most ``limit`` items (``items`` itself when ``limit`` is None
    or not smaller): in the order drawn, or with ``in_order`` in their original order (the same
    items either way: `random.Random.sample` picks positions whatever the items are)."""
    if limit is None or limit >= len(items):
        return items
    positions = random.Random(seed).sample(range(len(items)), limit)
    return [items[position] for position in (sorted(positions) if in_order else positions)]
