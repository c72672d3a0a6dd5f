"""Turning task examples into padded `EncodedBatch`es (the ``"task"`` source and the annotation tool)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch
from transformers.tokenization_utils_base import BatchEncoding, PreTrainedTokenizerBase

from harness.inputs.batches import EncodedBatch
from tasks.examples import Example


def token_ids(tokenizer: PreTrainedTokenizerBase, tokens: Sequence[str]) -> list[int]:
    """The vocabulary ids of ``tokens`` (transformers types the result as one id or a list: a list in gives a list)."""
    ids = tokenizer.convert_tokens_to_ids(list(tokens))
    return [ids] if isinstance(ids, int) else ids


def token_strings(tokenizer: PreTrainedTokenizerBase, ids: Sequence[int]) -> list[str]:
    """The tokens of vocabulary ``ids`` (transformers types the result as one token or a list: a list gives a list)."""
    tokens = tokenizer.convert_ids_to_tokens(list(ids))
    return [tokens] if isinstance(tokens, str) else tokens


def token_text(tokenizer: PreTrainedTokenizerBase, token_id: int) -> str:
    """One token as text, without the space some tokenizers write before a word (RoBERTa's ``Ġ``)."""
    text = tokenizer.decode([token_id])
    return (text if isinstance(text, str) else "".join(text)).strip()  # one id in gives one text


def _texts(examples: Sequence[Example], pair: bool) -> tuple[list[str], list[str] | None]:
    firsts = [example.text_a for example in examples]
    if not pair:
        return firsts, None
    seconds = [example.text_b for example in examples if example.text_b is not None]
    if len(seconds) != len(firsts):
        raise ValueError("a pair task's example has no second text")
    return firsts, seconds


@dataclass(frozen=True)
class PairTemplate:
    """Where a tokenizer puts its special tokens around a pair of texts, learned from the
    tokenizer itself by encoding one pair: BERT's ``[CLS] a [SEP] b [SEP]``, RoBERTa's
    ``<s> a </s></s> b </s>``, ALBERT's and DeBERTa's ``[CLS] a [SEP] b [SEP]`` with other
    vocabularies. ``prefix``, ``middle``, ``suffix``: the special ids before, between and
    after the texts; ``token_types``: the token type of each of the five parts, or None for a
    tokenizer without token types (RoBERTa, ModernBERT)."""

    prefix: tuple[int, ...]
    middle: tuple[int, ...]
    suffix: tuple[int, ...]
    token_types: tuple[int, int, int, int, int] | None

    @classmethod
    def of(cls, tokenizer: PreTrainedTokenizerBase) -> PairTemplate:
        encoded = tokenizer("a", "b")
        ids, sequences = encoded["input_ids"], encoded.sequence_ids(0)
        first_b = sequences.index(1)
        after_a = max(index for index, sequence in enumerate(sequences) if sequence == 0) + 1
        after_b = max(index for index, sequence in enumerate(sequences) if sequence == 1) + 1
        types = encoded.get("token_type_ids")
        starts = (0, sequences.index(0), after_a, first_b, after_b)
        kinds = None if types is None else tuple(types[min(start, len(ids) - 1)] for start in starts)
        return cls(tuple(ids[: starts[1]]), tuple(ids[after_a:first_b]), tuple(ids[after_b:]), kinds)

    @property
    def count(self) -> int:
        """Special tokens the template adds to a pair."""
        return len(self.prefix) + len(self.middle) + len(self.suffix)

    def assemble(self, ids_a: Sequence[int], ids_b: Sequence[int]) -> tuple[list[int], list[int] | None]:
        """The pair's ids with the special tokens in place, and their token types (None without)."""
        parts = (self.prefix, ids_a, self.middle, ids_b, self.suffix)
        ids = [token for part in parts for token in part]
        if self.token_types is None:
            return ids, None
        return ids, [kind for part, kind in zip(parts, self.token_types) for _ in part]

    def second_start(self, ids_a: Sequence[int]) -> int:
        """The position of the second text's first token."""
        return len(self.prefix) + len(ids_a) + len(self.middle)


def second_text_tokens(encoded: BatchEncoding, seq_len: int) -> torch.Tensor:
    """(batch, seq_len) long: 1 on the tokens of each row's second text, 0 elsewhere, from the
    tokenizer's own sequence ids (so whatever its special tokens and whether or not it has token types)."""
    segments = torch.zeros((len(encoded["input_ids"]), seq_len), dtype=torch.long)
    for row in range(len(segments)):
        sequences = encoded.sequence_ids(row)
        segments[row, : len(sequences)] = torch.tensor([int(sequence == 1) for sequence in sequences])
    return segments


def encode_examples(
    tokenizer: PreTrainedTokenizerBase,
    examples: Sequence[Example],
    max_length: int,
    pair: bool,
    pad_to: int | None = None,
) -> EncodedBatch:
    """Tokenise one batch as ``[CLS] a [SEP]`` or, for a ``pair`` task, ``[CLS] a [SEP] b [SEP]``,
    truncated to ``max_length``, padded to its longest (or to ``pad_to`` tokens)."""
    texts = tokenizer(*_texts(examples, pair), truncation=True, max_length=max_length)
    padding = {"padding": "longest"} if pad_to is None else {"padding": "max_length", "max_length": pad_to}
    encoded = tokenizer.pad(texts, return_tensors="pt", **padding)  # truncated to max_length first, then padded
    return EncodedBatch(
        input_ids=encoded["input_ids"],
        attention_mask=encoded["attention_mask"],
        token_type_ids=encoded.get("token_type_ids"),
        items=list(examples),
        second_text=second_text_tokens(texts, encoded["input_ids"].shape[1]) if pair else None,
    )


def batched(
    tokenizer: PreTrainedTokenizerBase,
    examples: Sequence[Example],
    batch_size: int,
    max_length: int,
    pair: bool,
    pad_to: int | None = None,
) -> Iterator[EncodedBatch]:
    """Encode ``examples`` lazily, one batch at a time, grouping similar lengths to cut padding
    (or padding every batch to ``pad_to`` tokens)."""
    order = sorted(range(len(examples)), key=lambda i: len(examples[i].text_a) + len(examples[i].text_b or ""))
    for start in range(0, len(order), batch_size):
        yield encode_examples(
            tokenizer, [examples[i] for i in order[start : start + batch_size]], max_length, pair, pad_to
        )


def token_lengths(
    tokenizer: PreTrainedTokenizerBase, examples: Sequence[Example], max_length: int, pair: bool
) -> list[int]:
    """Real tokens of each example's encoding (`encode_examples`, same truncation)."""
    return [len(ids) for ids in tokenizer(*_texts(examples, pair), truncation=True, max_length=max_length)["input_ids"]]


def count_truncated(
    tokenizer: PreTrainedTokenizerBase, examples: Sequence[Example], max_length: int, pair: bool
) -> int:
    """How many examples are longer than ``max_length`` tokens and get cut."""
    lengths = tokenizer(*_texts(examples, pair))["input_ids"]
    return sum(len(ids) > max_length for ids in lengths)


def token_spans(
    tokenizer: PreTrainedTokenizerBase, examples: Sequence[Example], max_length: int, pair: bool
) -> list[list[tuple[int, int, int] | None]]:
    """Per example, per token of its encoding (`encode_examples`, same truncation): the text it
    comes from (0: ``text_a``, 1: ``text_b``) and its character span there, or None for a
    special token."""
    encoded = tokenizer(*_texts(examples, pair), truncation=True, max_length=max_length, return_offsets_mapping=True)
    return [
        [None if segment is None else (segment, *span) for segment, span in zip(encoded.sequence_ids(row), offsets)]
        for row, offsets in enumerate(encoded["offset_mapping"])
    ]
