"""Turning task examples into padded `EncodedBatch`es (the ``"task"`` source and the annotation tool)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from transformers.tokenization_utils_base import PreTrainedTokenizerBase

from harness.inputs.batches import EncodedBatch
from tasks.examples import Example


def _texts(examples: Sequence[Example], pair: bool) -> tuple[list[str], list[str] | None]:
    return [example.text_a for example in examples], [example.text_b for example in examples] if pair else None


def encode_examples(tokenizer: PreTrainedTokenizerBase, examples: Sequence[Example], max_length: int,
                    pair: bool, pad_to: int | None = None) -> EncodedBatch:
    """Tokenise one batch as ``[CLS] a [SEP]`` or, for a ``pair`` task, ``[CLS] a [SEP] b [SEP]``,
    truncated to ``max_length``, padded to its longest (or to ``pad_to`` tokens)."""
    if pad_to is None:
        encoded = tokenizer(*_texts(examples, pair), truncation=True, max_length=max_length, padding="longest",
                            return_tensors="pt")
    else:  # truncated to max_length first, then padded beyond it
        encoded = tokenizer.pad(tokenizer(*_texts(examples, pair), truncation=True, max_length=max_length),
                                padding="max_length", max_length=pad_to, return_tensors="pt")
    return EncodedBatch(
        input_ids=encoded["input_ids"],
        attention_mask=encoded["attention_mask"],
        token_type_ids=encoded.get("token_type_ids"),
        items=list(examples),
    )


def batched(tokenizer: PreTrainedTokenizerBase, examples: Sequence[Example], batch_size: int, max_length: int,
            pair: bool, pad_to: int | None = None) -> Iterator[EncodedBatch]:
    """Encode ``examples`` lazily, one batch at a time, grouping similar lengths to cut padding
    (or padding every batch to ``pad_to`` tokens)."""
    order = sorted(range(len(examples)), key=lambda i: len(examples[i].text_a) + len(examples[i].text_b or ""))
    for start in range(0, len(order), batch_size):
        yield encode_examples(tokenizer, [examples[i] for i in order[start:start + batch_size]], max_length, pair,
                              pad_to)


def token_lengths(tokenizer: PreTrainedTokenizerBase, examples: Sequence[Example], max_length: int,
                  pair: bool) -> list[int]:
    """Real tokens of each example's encoding (`encode_examples`, same truncation)."""
    return [len(ids) for ids in tokenizer(*_texts(examples, pair), truncation=True, max_length=max_length)["input_ids"]]


def count_truncated(tokenizer: PreTrainedTokenizerBase, examples: Sequence[Example], max_length: int,
                    pair: bool) -> int:
    """How many examples are longer than ``max_length`` tokens and get cut."""
    lengths = tokenizer(*_texts(examples, pair))["input_ids"]
    return sum(len(ids) > max_length for ids in lengths)


def token_spans(tokenizer: PreTrainedTokenizerBase, examples: Sequence[Example], max_length: int,
                pair: bool) -> list[list[tuple[int, int, int] | None]]:
    """Per example, per token of its encoding (`encode_examples`, same truncation): the text it
    comes from (0: ``text_a``, 1: ``text_b``) and its character span there, or None for a
    special token."""
    encoded = tokenizer(*_texts(examples, pair), truncation=True, max_length=max_length,
                        return_offsets_mapping=True)
    return [[None if segment is None else (segment, *span)
             for segment, span in zip(encoded.sequence_ids(row), offsets)]
            for row, offsets in enumerate(encoded["offset_mapping"])]
