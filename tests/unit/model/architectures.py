"""Eight encoder architectures in miniature, each a randomly initialised masked LM and a tokenizer
built offline, saved together in a folder as ``save_pretrained`` writes them.

Each folder loads as a hub checkpoint would: ``AutoTokenizer`` (a fast tokenizer),
``AutoModelForSequenceClassification`` and ``AutoModelForMaskedLM`` (a *ForMaskedLM is saved, so
no key is missing). The tokenizers keep each family's own conventions (WordPiece ``##``
continuations, byte-level BPE ``Ġ``, SentencePiece-style Unigram ``▁``, and each family's pair
template), so that what the harness does with words, special tokens and segments is tried on
every convention. The BPE and Unigram vocabularies are trained with the ``tokenizers`` library on
the texts of the tiny test data, so every word of them is made of pieces of the vocabulary.

In transformers 5 each tokenizer class builds its own normalizer, pre-tokenizer and template and,
loading a folder, keeps only the vocabulary (and merges) of its ``tokenizer.json``: the
vocabularies are therefore trained through the class's own normalizer and pre-tokenizer and
handed to the class, so what is saved is what loads.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pytest
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import (
    AlbertConfig,
    AlbertTokenizerFast,
    AutoModelForMaskedLM,
    BertConfig,
    BertTokenizerFast,
    DebertaV2Config,
    DebertaV2TokenizerFast,
    DistilBertConfig,
    DistilBertTokenizerFast,
    ElectraConfig,
    ElectraTokenizerFast,
    ModernBertConfig,
    PreTrainedConfig,
    PreTrainedTokenizerFast,
    RobertaConfig,
    RobertaTokenizerFast,
    XLMRobertaConfig,
    XLMRobertaTokenizerFast,
)

from tests.fixtures import SENTENCES, TINY_VOCAB, made_once

SEED = 0
# The words of TINY_VOCAB, and each of them with each continuation piece ("cat" + "##s").
WORDS = [token for token in TINY_VOCAB if not token.startswith(("[", "##"))]
SUFFIXES = [token.removeprefix("##") for token in TINY_VOCAB if token.startswith("##")]
# The texts of the tiny test data (write_tiny_data builds them from SENTENCES; its treebank and
# coreference words are among them) and the vocabulary's words. The inflected words matter to
# the Unigram trainer: it seeds its pieces with substrings shared by *different* words, so
# without "cats" no whole word ("▁cat") would be a piece.
CORPUS = [*SENTENCES, " ".join(WORDS + [word + suffix for word in WORDS if word.isalpha() for suffix in SUFFIXES])]
BERT_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")  # ALBERT's Unigram wants [UNK] at id 1
ROBERTA_SPECIALS = ("<s>", "<pad>", "</s>", "<unk>", "<mask>")  # XLM-R's Unigram wants <unk> at id 3
MODERNBERT_SPECIALS = ("[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]")  # ModernBERT's order (at the end there)
BERT_SIZES = {"hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 32}
# Large weights make attention far from uniform; every architecture stays finite at this range.
INITIALIZER_RANGE = 0.5


@dataclass(frozen=True)
class Architecture:
    """How one architecture's tiny checkpoint is made: its tokenizer, its config (sized to the
    tokenizer), and the tokenizer's word-boundary convention: ``##`` begins a continuation
    piece, ``Ġ`` and ``▁`` begin a word's first piece."""

    tokenizer: Callable[[], PreTrainedTokenizerFast]
    config: Callable[[PreTrainedTokenizerFast], PreTrainedConfig]
    word_prefix: str


def wordpiece(tokenizer_class: type[BertTokenizerFast]) -> BertTokenizerFast:
    """A lower-casing WordPiece tokenizer over TINY_VOCAB."""
    return tokenizer_class(vocab={token: index for index, token in enumerate(TINY_VOCAB)}, do_lower_case=True)


def byte_level_bpe(special_tokens: Sequence[str]) -> Tokenizer:
    """A byte-level BPE (all 256 bytes, then merges) trained on CORPUS, ``special_tokens`` its
    first ids. It is trained with a space before every text, so each word is a ``Ġ`` piece, and
    then encodes as the hub's RoBERTa and ModernBERT tokenizers do, without adding that space: a
    text's first word has no ``Ġ`` (and pre-split words are refused, as there)."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.train_from_iterator(
        CORPUS,
        trainers.BpeTrainer(
            special_tokens=list(special_tokens),
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    return tokenizer


def roberta_tokenizer() -> RobertaTokenizerFast:
    """RoBERTa's tokenizer on a trained byte-level BPE: ``<s> a </s></s> b </s>``."""
    trained = json.loads(byte_level_bpe(ROBERTA_SPECIALS).to_str())["model"]
    return RobertaTokenizerFast(
        vocab=trained["vocab"], merges=[tuple(merge) for merge in trained["merges"]], add_prefix_space=False
    )


def modernbert_tokenizer() -> PreTrainedTokenizerFast:
    """ModernBERT's kind of tokenizer: a byte-level BPE with BERT's special tokens and pair
    template, and no token types. transformers has no class for it: AutoTokenizer loads its
    ``tokenizer.json`` as it is."""
    backend = byte_level_bpe(MODERNBERT_SPECIALS)
    backend.post_processor = processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0",
        pair="[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
        special_tokens=[(token, backend.token_to_id(token)) for token in ("[CLS]", "[SEP]")],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        pad_token="[PAD]",
        mask_token="[MASK]",
        add_prefix_space=False,
        model_input_names=["input_ids", "attention_mask"],
    )


def unigram(
    tokenizer_class: type[PreTrainedTokenizerFast], special_tokens: Sequence[str], unk_token: str, **settings: object
) -> PreTrainedTokenizerFast:
    """``tokenizer_class`` on a Unigram vocabulary trained on CORPUS through the class's own
    normalizer and ``▁`` pre-tokenizer, ``special_tokens`` its first ids."""
    pipeline = tokenizer_class(unk_token=unk_token, **settings).backend_tokenizer
    trained = Tokenizer(models.Unigram())
    trained.normalizer, trained.pre_tokenizer = pipeline.normalizer, pipeline.pre_tokenizer
    trained.train_from_iterator(
        CORPUS, trainers.UnigramTrainer(special_tokens=list(special_tokens), unk_token=unk_token, show_progress=False)
    )
    vocab = [tuple(piece) for piece in json.loads(trained.to_str())["model"]["vocab"]]
    return tokenizer_class(vocab=vocab, unk_token=unk_token, **settings)


def tiny_config(
    config_class: type[PreTrainedConfig], tokenizer: PreTrainedTokenizerFast, positions: int = 128, **settings: object
) -> PreTrainedConfig:
    """``config_class`` with ``settings``, its vocabulary the tokenizer's, its special ids the
    tokenizer's ([CLS]/<s> begins, [SEP]/</s> ends), ``positions`` position embeddings, large
    weights and eager attention."""
    return config_class(
        vocab_size=len(tokenizer),
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.cls_token_id,
        eos_token_id=tokenizer.sep_token_id,
        max_position_embeddings=positions,
        initializer_range=INITIALIZER_RANGE,
        attn_implementation="eager",
        **settings,
    )


def modernbert_config(tokenizer: PreTrainedTokenizerFast) -> ModernBertConfig:
    """Three layers, the first global and the other two local; a window of 4 tokens, so the
    window bites on the test sentences."""
    return tiny_config(
        ModernBertConfig,
        tokenizer,
        hidden_size=32,
        num_hidden_layers=3,
        num_attention_heads=4,
        intermediate_size=32,
        global_attn_every_n_layers=3,
        local_attention=4,
        cls_token_id=tokenizer.cls_token_id,
        sep_token_id=tokenizer.sep_token_id,
    )


ARCHITECTURES: dict[str, Architecture] = {
    "bert": Architecture(partial(wordpiece, BertTokenizerFast), partial(tiny_config, BertConfig, **BERT_SIZES), "##"),
    "electra": Architecture(
        partial(wordpiece, ElectraTokenizerFast),
        partial(tiny_config, ElectraConfig, embedding_size=8, **BERT_SIZES),
        "##",
    ),
    "distilbert": Architecture(
        partial(wordpiece, DistilBertTokenizerFast),
        partial(tiny_config, DistilBertConfig, dim=16, n_layers=2, n_heads=4, hidden_dim=32),
        "##",
    ),
    # RoBERTa's positions start after its padding id (1): 130 hold 128 tokens, as roberta-base's 514 hold 512
    "roberta": Architecture(roberta_tokenizer, partial(tiny_config, RobertaConfig, positions=130, **BERT_SIZES), "Ġ"),
    "xlm-roberta": Architecture(
        partial(unigram, XLMRobertaTokenizerFast, ROBERTA_SPECIALS, "<unk>"),
        partial(tiny_config, XLMRobertaConfig, positions=130, **BERT_SIZES),
        "▁",
    ),
    "albert": Architecture(
        partial(
            unigram,
            AlbertTokenizerFast,
            BERT_SPECIALS,
            "[UNK]",
            pad_token="[PAD]",
            # AlbertTokenizer leaves token types out of its inputs; ALBERT's model takes them
            model_input_names=["input_ids", "token_type_ids", "attention_mask"],
        ),
        partial(tiny_config, AlbertConfig, embedding_size=8, **BERT_SIZES),
        "▁",
    ),
    "deberta-v2": Architecture(  # DeBERTa-v3's settings: relative positions in buckets, no absolute ones
        partial(unigram, DebertaV2TokenizerFast, BERT_SPECIALS, "[UNK]"),
        partial(
            tiny_config,
            DebertaV2Config,
            relative_attention=True,
            pos_att_type=["p2c", "c2p"],
            position_buckets=8,
            max_relative_positions=16,
            norm_rel_ebd="layer_norm",
            share_att_key=True,
            position_biased_input=False,
            type_vocab_size=0,
            **BERT_SIZES,
        ),
        "▁",
    ),
    "modernbert": Architecture(modernbert_tokenizer, modernbert_config, "Ġ"),
}
WORD_PREFIXES = {name: architecture.word_prefix for name, architecture in ARCHITECTURES.items()}


def build_architecture(name: str, folder: Path) -> None:
    """Architecture ``name``'s tokenizer and masked LM (seeded, in eval mode) saved in ``folder``."""
    architecture = ARCHITECTURES[name]
    tokenizer = architecture.tokenizer()
    torch.manual_seed(SEED)
    AutoModelForMaskedLM.from_config(architecture.config(tokenizer)).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def architecture_folder(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """Architecture ``name``'s folder, made once per test session (once for all xdist workers)."""
    return made_once(tmp_path_factory, f"arch-{name}", partial(build_architecture, name))
