"""The tiny checkpoints of eight encoder architectures: each folder loads as a hub checkpoint
would, and each tokenizer keeps its family's special tokens, pair template and word pieces."""

from __future__ import annotations

from itertools import groupby
from pathlib import Path

import pytest
import torch
from tokenizers import Encoding
from transformers import (
    AlbertTokenizerFast,
    AutoModelForMaskedLM,
    AutoModelForSequenceClassification,
    AutoTokenizer,
    BertTokenizerFast,
    DebertaV2TokenizerFast,
    DistilBertTokenizerFast,
    ElectraTokenizerFast,
    PreTrainedTokenizerFast,
    RobertaTokenizerFast,
    XLMRobertaTokenizerFast,
)

from harness.inputs.words import tokenized_words
from tests.fixtures import SENTENCES
from tests.unit.model.architectures import ARCHITECTURES, WORD_PREFIXES

WORDS = " ".join(SENTENCES).split()
# What AutoTokenizer gives (in transformers 5 ElectraTokenizerFast is BertTokenizer; ModernBERT
# has no class of its own).
TOKENIZER_CLASSES = {
    "bert": BertTokenizerFast,
    "electra": ElectraTokenizerFast,
    "distilbert": DistilBertTokenizerFast,
    "roberta": RobertaTokenizerFast,
    "xlm-roberta": XLMRobertaTokenizerFast,
    "albert": AlbertTokenizerFast,
    "deberta-v2": DebertaV2TokenizerFast,
    "modernbert": PreTrainedTokenizerFast,
}
BERT_TOKENS = ("[CLS]", "[SEP]", "[PAD]", "[MASK]")  # cls, sep, pad, mask
ROBERTA_TOKENS = ("<s>", "</s>", "<pad>", "<mask>")
SPECIAL_TOKENS = {name: ROBERTA_TOKENS if name in ("roberta", "xlm-roberta") else BERT_TOKENS for name in ARCHITECTURES}
# A pair's special tokens around its segments ("A", "B": each segment's run of tokens).
PAIR_LAYOUTS = {
    name: ["<s>", "A", "</s>", "</s>", "B", "</s>"]
    if name in ("roberta", "xlm-roberta")
    else ["[CLS]", "A", "[SEP]", "B", "[SEP]"]
    for name in ARCHITECTURES
}
WITH_TOKEN_TYPES = {"bert", "electra", "albert", "deberta-v2"}  # as the hub's tokenizers of these families
BYTE_LEVEL = {"roberta", "modernbert"}  # every byte is in the vocabulary: nothing is unknown


@pytest.fixture
def tokenizer(architecture_dir: Path) -> PreTrainedTokenizerFast:
    return AutoTokenizer.from_pretrained(architecture_dir)


def layout(encoding: Encoding) -> list[str]:
    """The encoding's special tokens, each segment's run of tokens between them shown as "A" or "B"."""
    shown = []
    for segment, tokens in groupby(zip(encoding.tokens, encoding.sequence_ids), key=lambda pair: pair[1]):
        shown += [token for token, _ in tokens] if segment is None else ["AB"[segment]]
    return shown


def test_the_folder_loads_as_a_fast_tokenizer_a_classifier_and_a_masked_lm_with_every_weight(
    architecture, architecture_dir, tokenizer
):
    assert tokenizer.is_fast and type(tokenizer) is TOKENIZER_CLASSES[architecture]
    classifier = AutoModelForSequenceClassification.from_pretrained(architecture_dir, num_labels=2)
    masked_lm, loading = AutoModelForMaskedLM.from_pretrained(architecture_dir, output_loading_info=True)
    assert classifier.config.model_type == masked_lm.config.model_type == architecture
    assert classifier.num_labels == 2 and masked_lm.config.vocab_size == len(tokenizer)
    assert not loading["missing_keys"] and not loading["unexpected_keys"]


def test_the_special_tokens_are_set_and_a_pair_encodes_with_the_familys_template(architecture, tokenizer):
    assert (tokenizer.cls_token, tokenizer.sep_token, tokenizer.pad_token, tokenizer.mask_token) == SPECIAL_TOKENS[
        architecture
    ]
    assert layout(tokenizer("the cats sat", "the dog ran .").encodings[0]) == PAIR_LAYOUTS[architecture]


def test_each_word_maps_to_known_tokens_and_each_special_token_to_none(tokenizer):
    """As the harness reads words (`tokenized_words`: the sentence they write, by character offsets),
    whatever the tokenizer's convention; byte-level BPE tokenizers refuse pre-split words outright."""
    encoding, (word_ids,) = tokenized_words(tokenizer, [WORDS], return_special_tokens_mask=True)
    assert sorted(set(word_ids) - {None}) == list(range(len(WORDS)))
    assert [word is None for word in word_ids] == [bool(special) for special in encoding["special_tokens_mask"][0]]
    assert tokenizer.unk_token_id not in encoding["input_ids"][0]


def test_the_word_prefix_marks_each_words_first_piece_or_with_hashes_every_other_piece(architecture, tokenizer):
    """``Ġ`` marks a space before the piece, so a sentence's first word has none; ``▁`` and ``##`` mark every word."""
    encoding, (word_ids,) = tokenized_words(tokenizer, [["the", "cats", "sat", "."]])
    prefix = WORD_PREFIXES[architecture]
    firsts = [word is not None and word != word_ids[index - 1] for index, word in enumerate(word_ids)]
    for token, word, first in zip(encoding.tokens(0), word_ids, firsts):
        if word is not None:
            expected = not first if prefix == "##" else first and not (prefix == "Ġ" and word == 0)
            assert token.startswith(prefix) == expected, (token, word)


@pytest.mark.parametrize("architecture", [name for name in ARCHITECTURES if name not in BYTE_LEVEL])
def test_an_unseen_word_becomes_the_unknown_token(tokenizer):
    """The Unigram classes of transformers 5 fix the unknown token's id: it must be where they look."""
    assert tokenizer.unk_token_id in tokenizer("zebra")["input_ids"]


def test_token_types_are_in_the_encoding_of_the_families_that_have_them(architecture, tokenizer):
    encoding = tokenizer("the cats sat", "the dog ran .")
    if architecture not in WITH_TOKEN_TYPES:
        assert "token_type_ids" not in encoding
        return
    first = len(tokenizer("the cats sat")["input_ids"])  # [CLS] a [SEP]
    assert encoding["token_type_ids"] == [0] * first + [1] * (len(encoding["input_ids"]) - first)


def test_the_classifier_gives_finite_logits_for_a_padded_batch_of_pairs(architecture_dir, tokenizer):
    classifier = AutoModelForSequenceClassification.from_pretrained(
        architecture_dir, num_labels=2, attn_implementation="eager"
    )
    batch = tokenizer(SENTENCES[:4], SENTENCES[4:], padding=True, return_tensors="pt")
    assert not batch["attention_mask"].all()  # the batch really is padded
    with torch.inference_mode():
        out = classifier(**batch, output_attentions=True)
    assert out.logits.shape == (4, 2) and torch.isfinite(out.logits).all()
    assert all(torch.isfinite(layer).all() for layer in out.attentions)
