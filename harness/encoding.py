"""Turning task examples into padded `EncodedBatch`es."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from transformers.tokenization_utils_base import PreTrainedTokenizerBase

from harness.attention import EncodedBatch
from tasks.examples import Example


def encode_examples(
    tokenizer: PreTrainedTokenizerBase, examples: Sequence[Example], max_length: int
) -> EncodedBatch:
    """Tokenise one batch as ``[CLS] a [SEP] b [SEP]``, truncated to ``max_length``, padded to its longest."""
    texts_b = [example.text_b for example in examples]
    encoded = tokenizer(
        [example.text_a for example in examples],
        texts_b if any(text is not None for text in texts_b) else None,
        truncation=True,
        max_length=max_length,
        padding="longest",
        return_tensors="pt",
    )
    return EncodedBatch(
        input_ids=encoded["input_ids"],
        attention_mask=encoded["attention_mask"],
        token_type_ids=encoded.get("token_type_ids"),
        items=list(examples),
    )


def batched(
    tokenizer: PreTrainedTokenizerBase, examples: Sequence[Example], batch_size: int, max_length: int
) -> Iterator[EncodedBatch]:
    """Encode ``examples`` lazily, one batch at a time, grouping similar lengths to cut padding."""
    order = sorted(range(len(examples)), key=lambda i: len(examples[i].text_a) + len(examples[i].text_b or ""))
    for start in range(0, len(order), batch_size):
        yield encode_examples(tokenizer, [examples[i] for i in order[start:start + batch_size]], max_length)


def count_truncated(tokenizer: PreTrainedTokenizerBase, examples: Sequence[Example], max_length: int) -> int:
    """How many examples are longer than ``max_length`` tokens and get cut."""
    lengths = tokenizer(
        [example.text_a for example in examples],
        [example.text_b for example in examples] if examples and examples[0].text_b is not None else None,
    )["input_ids"]
    return sum(len(ids) > max_length for ids in lengths)
