"""Where a tagging example's words are among its tokens: each word is labelled, trained and scored
at its first sub-token (as BERT's paper tags, and Hugging Face's token-classification recipes),
found from the tokenizer's own character offsets, so any fast tokenizer's splitting works."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers.tokenization_utils_base import PreTrainedTokenizerBase

from harness.inputs.batches import EncodedBatch
from tasks.examples import Example

IGNORED = -100  # the label of a token that is not a word's first (PyTorch's cross-entropy skips it)


def first_tokens(offsets: Sequence[tuple[int, int]], words: Sequence[str]) -> list[int | None]:
    """Per word (the text being the words joined by single spaces), the position of its first
    sub-token among tokens with character ``offsets`` (special tokens are empty spans), or None
    for a word truncation cut off."""
    firsts: list[int | None] = []
    start, token = 0, 0
    for word in words:
        end = start + len(word)
        while token < len(offsets) and (offsets[token][1] <= offsets[token][0] or offsets[token][0] < start):
            token += 1
        inside = token < len(offsets) and offsets[token][0] < end
        firsts.append(token if inside else None)
        start = end + 1
    return firsts


def token_labels(tokenizer: PreTrainedTokenizerBase, example: Example, max_length: int) -> list[int]:
    """The example's tags on its tokens (`first_tokens`), `IGNORED` on every other token."""
    offsets = tokenizer(example.text_a, truncation=True, max_length=max_length, return_offsets_mapping=True)
    labels = [IGNORED] * len(offsets["input_ids"])
    for position, tag in zip(first_tokens(offsets["offset_mapping"], example.words), example.tags):
        if position is not None:
            labels[position] = tag
    return labels


def batch_tags(tokenizer: PreTrainedTokenizerBase, encoded: EncodedBatch) -> torch.Tensor:
    """A tagging batch's (batch, seq) tags on its rows' tokens (`token_labels`, each row cut where
    its encoding was), `IGNORED` elsewhere and on the padding, on whichever side the tokenizer pads."""
    tags = torch.full(encoded.input_ids.shape, IGNORED, dtype=torch.long)
    left = getattr(tokenizer, "padding_side", "right") == "left"
    for row, (item, length) in enumerate(zip(encoded.items, encoded.lengths.tolist())):
        start = tags.shape[1] - length if left else 0
        tags[row, start : start + length] = torch.tensor(token_labels(tokenizer, item, length))
    return tags
