"""Word-level inputs and attention for analyses over pre-tokenised text (treebanks, coreference).

`encode_words` tokenises lists of words into an `EncodedBatch` whose items are
`WordAlignedItem`s: the source item plus which word each token belongs to. Inputs longer
than ``max_tokens`` are cut at a word boundary (a word is kept whole or not at all) and the
number of words cut is recorded, so analyses can report it.

`word_attention` turns a token-level map into a word-level one as Clark et al. (2019) do:
attention *to* a word is the sum over its sub-tokens (so each row stays a distribution
over words plus the special tokens), attention *from* a word is the mean over its sub-tokens
(or the first sub-token's row, mode ``"first"``, as in Clark et al.'s released code).
Special tokens ([CLS], [SEP]) are dropped from both axes, so rows need not sum to 1.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from transformers.tokenization_utils_base import BatchEncoding, PreTrainedTokenizerBase

from harness.config import WORD_ATTENTION_FROM
from harness.inputs.batches import AttentionBatch, EncodedBatch
from tasks.errors import InputError


@dataclass
class WordAlignedItem:
    """One encoded row: the source ``item``, and the word of each token.

    ``word_ids[t]`` is the index of the word that token t belongs to, or None for special
    tokens; it covers the real tokens only (no padding). Words ``0..num_words-1`` were kept;
    the last ``words_cut`` words of the item did not fit in ``max_tokens``.
    """

    item: Any  # Any: the source's own item (a sentence, a document), as `EncodedBatch.items`
    word_ids: list[int | None]
    num_words: int
    words_cut: int


def _kept_words(token_counts: Sequence[int], budget: int) -> int:
    """How many leading words fit whole in ``budget`` tokens."""
    used = 0
    for kept, count in enumerate(token_counts):
        if used + count > budget:
            return kept
        used += count
    return len(token_counts)


def joined(words: Sequence[str]) -> tuple[str, list[int]]:
    """The words joined by single spaces, as a sentence is written, and the word each character
    belongs to (a space belongs to the word after it, as a ``Ġ``- or ``▁``-prefixed piece does)."""
    owner: list[int] = []
    for index, word in enumerate(words):
        owner.extend([index] * (len(word) + bool(index)))
    return " ".join(words), owner


def tokenized_words(
    tokenizer: PreTrainedTokenizerBase,
    word_lists: Sequence[Sequence[str]],
    **options: Any,  # Any: the tokenizer's
) -> tuple[BatchEncoding, list[list[int | None]]]:
    """Each list of words tokenised as the sentence it writes (`joined`), and the word of every
    token (None for special tokens and padding), read from the tokenizer's character offsets.

    Not ``is_split_into_words``: a byte-level BPE tokenizer (RoBERTa's) refuses pre-split words
    unless loaded with ``add_prefix_space``, and with it encodes the first word as no sentence
    does; through offsets every fast tokenizer, WordPiece ``##``, BPE ``Ġ`` or SentencePiece
    ``▁``, gives the pieces the model sees in running text."""
    texts = [joined(words) for words in word_lists]
    encoded = tokenizer([text for text, _ in texts], return_offsets_mapping=True, **options)
    offsets = encoded.pop("offset_mapping")
    word_ids = [
        [owner[end - 1] if end > start else None for start, end in map(tuple, row_offsets)]
        for row_offsets, (_, owner) in zip(offsets.tolist() if torch.is_tensor(offsets) else offsets, texts)
    ]
    return encoded, word_ids


def _token_counts(tokenizer: PreTrainedTokenizerBase, word_lists: list[list[str]]) -> list[list[int]]:
    """Number of sub-tokens of every word (without special tokens), one tokenizer call per batch."""
    if not any(word_lists):
        return [[] for _ in word_lists]
    _, word_ids = tokenized_words(tokenizer, word_lists, add_special_tokens=False)
    counts = []
    for words, row in zip(word_lists, word_ids):
        per_word = [0] * len(words)
        for word in row:
            if word is not None:
                per_word[word] += 1
        counts.append(per_word)
    return counts


def encode_words(
    tokenizer: PreTrainedTokenizerBase,
    word_lists: list[list[str]],
    max_tokens: int,
    items: list[Any],  # Any: as `EncodedBatch.items`
) -> tuple[EncodedBatch, list[int]]:
    """Encode pre-split words as ``[CLS] w1 ... wk [SEP]``, at most ``max_tokens`` tokens each.

    Needs a fast tokenizer (for character offsets). Returns the padded batch, whose ``items`` are
    `WordAlignedItem`s wrapping ``items``, and the number of words cut from each row.
    """
    if not tokenizer.is_fast:
        raise InputError(
            f"{type(tokenizer).__name__} is not a fast tokenizer; word-level analyses "
            "need word ids: load the model's tokenizer with use_fast=True"
        )
    special = tokenizer.num_special_tokens_to_add(pair=False)
    if max_tokens <= special:
        raise InputError(
            f"--max-tokens {max_tokens} leaves no room for words next to the "
            f"{special} special tokens; use a larger value (Clark et al. used 128)"
        )
    kept_words: list[list[str]] = []
    for words, counts in zip(word_lists, _token_counts(tokenizer, word_lists)):
        # A word the tokenizer drops entirely (a lone control character) becomes the unknown
        # token, so every word keeps a position and attention to it is defined.
        visible = [word if count else tokenizer.unk_token for word, count in zip(words, counts)]
        kept_words.append(visible[: _kept_words([max(count, 1) for count in counts], max_tokens - special)])
    encoded, all_word_ids = tokenized_words(
        tokenizer, kept_words, padding="longest", padding_side="right", return_tensors="pt"
    )
    aligned: list[WordAlignedItem] = []
    cut: list[int] = []
    for row, (words, kept) in enumerate(zip(word_lists, kept_words)):
        length = int(encoded["attention_mask"][row].sum())
        word_ids = all_word_ids[row][:length]
        cut.append(len(words) - len(kept))
        aligned.append(WordAlignedItem(items[row], word_ids, len(kept), cut[-1]))
    batch = EncodedBatch(
        input_ids=encoded["input_ids"],
        attention_mask=encoded["attention_mask"],
        token_type_ids=encoded.get("token_type_ids"),
        items=aligned,
    )
    return batch, cut


def assignment_matrix(
    word_ids: Sequence[int | None], num_words: int, keep_special: bool = False, device: torch.device | str = "cpu"
) -> torch.Tensor:
    """(groups, n_tok) matrix with 1 where token t belongs to group g.

    Groups are the words ``0..num_words-1``; with ``keep_special`` they are shifted by one and
    framed by the first special token ([CLS], group 0) and the last one ([SEP], group
    num_words+1). Tokens of cut words (and other special tokens) belong to no group.
    """
    offset = 1 if keep_special else 0
    matrix = torch.zeros(num_words + 2 * offset, len(word_ids))
    for token, word in enumerate(word_ids):
        if word is not None and word < num_words:
            matrix[word + offset, token] = 1.0
    if keep_special:
        special = [token for token, word in enumerate(word_ids) if word is None]
        matrix[0, special[0]] = 1.0
        matrix[-1, special[-1]] = 1.0
    return matrix.to(device)


def _grouped(maps: torch.Tensor, to_groups: torch.Tensor, from_mode: str) -> torch.Tensor:
    """(..., groups, groups): rows averaged (or first row) within a group, columns summed."""
    if from_mode not in WORD_ATTENTION_FROM:
        raise InputError(f"--word-attention-from {from_mode!r} is not one of {', '.join(WORD_ATTENTION_FROM)}")
    to_groups = to_groups.to(maps.dtype)
    if from_mode == "mean":
        from_groups = to_groups / to_groups.sum(dim=1, keepdim=True).clamp(min=1.0)
    else:
        first = torch.cumsum(to_groups, dim=1) == 1
        from_groups = (to_groups.bool() & first).to(maps.dtype)
    return from_groups @ maps @ to_groups.T


def _check_length(maps: torch.Tensor, word_ids: Sequence[int | None]) -> None:
    if maps.shape[-1] != len(word_ids):
        raise ValueError(f"maps have {maps.shape[-1]} tokens but word_ids has {len(word_ids)}")


def word_attention(
    maps: torch.Tensor, word_ids: Sequence[int | None], num_words: int, from_mode: str = "mean"
) -> torch.Tensor:
    """Word-to-word attention from token-to-token attention.

    ``maps``: (..., n_tok, n_tok), e.g. (layers, heads, n_tok, n_tok), rows attend over
    columns; ``word_ids``: length n_tok. Returns (..., num_words, num_words): *to* a word sums
    its sub-token columns; *from* a word averages its sub-token rows (``"mean"``) or takes its
    first sub-token's row (``"first"``). Special tokens are dropped, not renormalised away.
    """
    _check_length(maps, word_ids)
    return _grouped(maps, assignment_matrix(word_ids, num_words, device=maps.device), from_mode)


def word_attention_with_special(
    maps: torch.Tensor, word_ids: Sequence[int | None], num_words: int, from_mode: str = "mean"
) -> torch.Tensor:
    """Like `word_attention` but keeping [CLS] (index 0) and the final [SEP] (index -1):
    (..., num_words + 2, num_words + 2). Rows of words then still sum to 1 (single segment)."""
    _check_length(maps, word_ids)
    return _grouped(maps, assignment_matrix(word_ids, num_words, keep_special=True, device=maps.device), from_mode)


def word_maps(
    batch: AttentionBatch, checkpoint: str, from_mode: str = "mean", keep_special: bool = False
) -> Iterator[tuple[WordAlignedItem, torch.Tensor]]:
    """For each row of a batch built by `encode_words`: its `WordAlignedItem` and the
    word-level maps of ``checkpoint``, shape (layers, heads, num_words, num_words), or
    (layers, heads, num_words + 2, num_words + 2) with ``keep_special``."""
    convert = word_attention_with_special if keep_special else word_attention
    for row, aligned in enumerate(batch.items):
        yield aligned, convert(batch.maps(checkpoint, row), aligned.word_ids, aligned.num_words, from_mode)


@contextmanager
def single_threaded() -> Iterator[None]:
    """Run the enclosed (many, tiny) per-sentence tensor ops on one thread.

    Word-level maps are a few hundred numbers per head; with several intra-op threads each
    op pays thread synchronisation, which on a busy CPU made the probe 50x slower.
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
