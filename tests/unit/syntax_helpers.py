"""Hand-made sentences and attention maps whose right answers are known, for the syntax tests."""

from __future__ import annotations

from typing import Any

import torch

from harness.analyses.base import AnalysisContext
from harness.inputs.batches import AttentionBatch, EncodedBatch
from harness.inputs.words import WordAlignedItem
from harness.results.checkpoints import FINETUNED, PRETRAINED
from tasks.treebank import Sentence
from tests.fixtures import analysis_context


def sentence(
    words: str, heads: list[int], relations: list[str] | None = None, xpos: list[str] | None = None
) -> Sentence:
    tokens = words.split()
    relations = relations or ["dep" if head else "root" for head in heads]
    xpos = xpos or ["NN"] * len(tokens)
    return Sentence(tokens, ["X"] * len(tokens), xpos, heads, relations)


def pointing_maps(heads: list[int], layers: int = 1, num_heads: int = 2, transpose: bool = False) -> torch.Tensor:
    """Token maps (layers, heads, n+2, n+2) for [CLS] w1..wn [SEP]: head 0 of every layer sends
    each dependent's row to its gold head (or, ``transpose``, each head's row to its dependent);
    the root and every other head attend uniformly."""
    n = len(heads)
    maps = torch.full((layers, num_heads, n + 2, n + 2), 1.0 / (n + 2))
    for dependent, head in enumerate(heads, start=1):
        if head:
            row, column = (head, dependent) if transpose else (dependent, head)
            maps[:, 0, row] = 0.0
            maps[:, 0, row, column] = 1.0
    return maps


def hand_made_batch(
    sentences: list[Sentence], maps: dict[str, list[torch.Tensor]], items: list[Any] | None = None
) -> AttentionBatch:
    """One AttentionBatch of single-token words with the given token maps per checkpoint name."""
    longest = max(len(s) for s in sentences) + 2
    mask = torch.zeros(len(sentences), longest, dtype=torch.long)
    aligned = []
    for row, s in enumerate(sentences):
        mask[row, : len(s) + 2] = 1
        aligned.append(WordAlignedItem(items[row] if items else s, [None, *range(len(s)), None], len(s), 0))
    encoded = EncodedBatch(torch.zeros_like(mask), mask, None, aligned)
    attentions = {}
    for checkpoint, per_row in maps.items():
        padded = torch.zeros(len(sentences), *per_row[0].shape[:2], longest, longest)
        for row, m in enumerate(per_row):
            padded[row, :, :, : m.shape[-1], : m.shape[-1]] = m
        attentions[checkpoint] = padded
    return AttentionBatch(encoded, attentions)


def context(
    checkpoints: tuple[str, ...] = (PRETRAINED, FINETUNED), layers: int = 1, heads: int = 2, **settings: Any
) -> AnalysisContext:
    """A context over ``checkpoints`` comparing each with the next."""
    pairs = tuple(zip(checkpoints, checkpoints[1:]))
    return analysis_context(checkpoints, layers, heads, pairs=pairs, **settings)
