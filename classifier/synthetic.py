"""Synthetic attention maps of the five classes, to add to the real labelled maps in training.

Each map is a mixture of row-stochastic components: a pattern component carrying most of
the mass (columns, a band around the diagonal, two segment blocks, or input-dependent
structure), a [CLS] column (column 0, which nearly every head of BERT-like models attends
to) for the non-vertical classes that is kept weaker than the pattern, and diffuse noise.
Lengths, segment split points, the number and place of the attended columns, band offsets
and widths and the noise level are drawn at random, so the CNN sees the variety of real maps.
The evaluation set is never synthetic.
"""

from __future__ import annotations

import numpy as np

from classifier.data import CLASSES
from classifier.features import NO_SECOND_SEGMENT, map_features
from classifier.guideline import settled


def _rows(weights: np.ndarray) -> np.ndarray:
    """Rows scaled to sum to 1 (rows of zeros become uniform)."""
    weights = np.maximum(weights, 0)
    sums = weights.sum(axis=1, keepdims=True)
    uniform = np.full_like(weights, 1.0 / weights.shape[1])
    return np.where(sums > 0, weights / np.where(sums > 0, sums, 1), uniform)


def _noise(n: int, rng: np.random.Generator) -> np.ndarray:
    """Diffuse attention: a softmax of random logits, from near-uniform to spotty."""
    logits = rng.normal(0, rng.uniform(0.3, 2.5), size=(n, n))
    logits += rng.normal(0, rng.uniform(0, 1.5), size=(1, n))  # some tokens draw more attention overall
    return _rows(np.exp(logits - logits.max(axis=1, keepdims=True)))


def _separators(n: int, rng: np.random.Generator) -> list[int]:
    """[SEP] positions of a one- or two-segment input of n tokens."""
    if n < 6 or rng.random() < 0.25:
        return [n - 1]
    return [int(rng.integers(max(2, n // 4), max(3, 3 * n // 4))), n - 1]


def _columns(n: int, separators: list[int], rng: np.random.Generator) -> np.ndarray:
    """A few attended columns ([CLS], [SEP]s, punctuation), each row with its own mix."""
    candidates = [0] * 3 + separators + list(rng.integers(1, n, size=rng.integers(0, 7)))
    columns = np.unique(rng.choice(candidates, size=rng.integers(1, 8)))
    weights = np.zeros((n, n))
    shares = rng.dirichlet(np.ones(len(columns)) * 0.7)
    weights[:, columns] = shares * rng.uniform(0.4, 1.6, size=(n, len(columns)))
    return _rows(weights)


def _band(n: int, rng: np.random.Generator) -> np.ndarray:
    """Attention to the token itself and/or its neighbours, thin or a few tokens wide."""
    offsets = rng.choice([-1, 0, 1], size=rng.integers(1, 3), replace=False)
    width = 0 if rng.random() < 0.6 else int(rng.integers(1, 4))
    index = np.arange(n)
    weights = np.zeros((n, n))
    for offset in offsets:
        for spread in range(-width, width + 1):
            target = np.clip(index + offset + spread, 0, n - 1)
            weights[index, target] += rng.uniform(0.5, 1.0) * 0.6 ** abs(spread)
    return _rows(weights * rng.uniform(0.6, 1.4, size=(n, 1)))


def _blocks(n: int, separators: list[int], rng: np.random.Generator) -> np.ndarray:
    """Each token attends within its own segment: diffuse, or in phrase-sized sub-blocks."""
    starts = [1] + [position + 1 for position in separators[:-1]]
    ends = [position + 1 for position in separators]
    weights = np.zeros((n, n))
    for start, end in zip(starts, ends):
        inside = rng.gamma(rng.uniform(0.3, 2.0), size=(end - start, end - start))
        if rng.random() < 0.4:  # phrase-like sub-blocks along the diagonal inside the segment
            cuts = (
                np.sort(
                    rng.choice(
                        np.arange(start + 1, end), size=min(end - start - 1, int(rng.integers(1, 4))), replace=False
                    )
                )
                if end - start > 2
                else np.array([], dtype=int)
            )
            bounds = [start, *cuts.tolist(), end]
            mask = np.zeros_like(inside)
            for low, high in zip(bounds[:-1], bounds[1:]):
                mask[low - start : high - start, low - start : high - start] = 1
            inside = inside * (0.15 + mask)
        weights[start:end, start:end] = inside
    weights[0, :] = rng.random(n)  # [CLS] row: anywhere
    return _rows(weights)


def _heterogeneous(n: int, separators: list[int], rng: np.random.Generator) -> np.ndarray:
    """Input-dependent structure: spots, cross-segment alignments or smooth blobs."""
    kind = rng.integers(3)
    if kind == 0:  # spots: each row attends to a few arbitrary tokens
        weights = rng.gamma(0.15, size=(n, n))
        if rng.random() < 0.5:  # only near itself: local but pointed, not a band (the lines decide which it is)
            offsets = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :])
            weights = weights * (offsets <= rng.integers(2, max(3, n // 6))) + 1e-6
    elif kind == 1 and len(separators) == 2:  # alignment of each token with its twin in the other segment
        split = separators[0]
        weights = rng.gamma(0.5, size=(n, n)) * 0.2
        shift = split - int(rng.integers(0, max(1, split // 3)))
        for row in range(1, n - 1):
            target = row + shift if row < split else row - shift
            if 0 < target < n:
                weights[row, target] += rng.uniform(1, 4)
    else:  # smooth blobs
        centres = rng.integers(0, n, size=(rng.integers(2, 6), 2))
        grid = np.arange(n)
        weights = (
            sum(
                np.exp(-((grid[:, None] - y) ** 2 + (grid[None, :] - x) ** 2) / (2 * (n / rng.uniform(8, 20)) ** 2))
                for y, x in centres
            )
            + rng.gamma(0.5, size=(n, n)) * 0.1
        )
    return _rows(weights)


def synthetic_map(label: str, n: int, rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """One (n, n) row-stochastic map of class ``label``, and where its input's second segment
    starts (`NO_SECOND_SEGMENT` for a single-segment input; `block` maps always have two)."""
    separators = _separators(n, rng)
    if label == "block" and len(separators) == 1:
        separators = [n // 2, n - 1]
    cls_column = np.zeros((n, n))
    cls_column[:, 0] = 1.0
    noise = _noise(n, rng)
    if label == "vertical":
        parts = [(_columns(n, separators, rng), rng.uniform(0.45, 0.95))]
    elif label == "diagonal":
        parts = [(_band(n, rng), rng.uniform(0.45, 0.95)), (cls_column, rng.uniform(0, 0.1))]
    elif label == "vertical+diagonal":
        parts = [(_columns(n, separators, rng), rng.uniform(0.3, 0.6)), (_band(n, rng), rng.uniform(0.25, 0.6))]
    elif label == "block":  # up to a pure block (no column, no noise): real heads never draw one, labellers would
        weight = rng.uniform(0.45, 1.0)
        parts = [(_blocks(n, separators, rng), weight), (cls_column, rng.uniform(0, min(0.35, 1 - weight)))]
    elif label == "heterogeneous":
        parts = [(_heterogeneous(n, separators, rng), rng.uniform(0.4, 0.9)), (cls_column, rng.uniform(0, 0.25))]
    else:
        raise ValueError(f"unknown class {label!r}; expected one of {', '.join(CLASSES)}")
    pattern = sum(weight * part for part, weight in parts)
    attention = _rows(pattern + max(0.0, 1 - sum(weight for _, weight in parts)) * noise).astype(np.float32)
    return attention, separators[0] + 1 if len(separators) == 2 else NO_SECOND_SEGMENT


def synthetic_set(
    per_class: int, seed: int = 0, min_length: int = 8, max_length: int = 128
) -> tuple[list[np.ndarray], list[int], list[int]]:
    """``per_class`` maps generated for each class, lengths uniform in [min_length, max_length];
    where each input's second segment starts; labels as indices, after the guideline's measured
    lines (`classifier.guideline.settled`), so a few maps move to a neighbouring class."""
    rng = np.random.default_rng(seed)
    maps, second_segments, labels = [], [], []
    for _index, label in enumerate(CLASSES):
        for _ in range(per_class):
            attention, second_segment = synthetic_map(label, int(rng.integers(min_length, max_length + 1)), rng)
            maps.append(attention)
            second_segments.append(second_segment)
            # labelled by the guideline as the real maps are: where a line puts the map elsewhere, it goes there
            labels.append(CLASSES.index(settled(label, map_features(attention, second_segment))))
    return maps, second_segments, labels
