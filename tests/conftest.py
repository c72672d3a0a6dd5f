"""Shared fixtures: a tiny BERT built from a config, and paths to the real shared data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

from harness.config import SHARED_DATA

GLUE_DIR = Path(os.environ.get("GLUE_DIR", SHARED_DATA / "glue"))

TINY_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ",", "the", "a", "cat", "dog",
              "sat", "on", "mat", "is", "not", "happy", "ran", "##s", "he", "she", "it", "and"]


@pytest.fixture(scope="session")
def tiny_tokenizer(tmp_path_factory: pytest.TempPathFactory) -> BertTokenizerFast:
    vocab = tmp_path_factory.mktemp("tiny_vocab") / "vocab.txt"
    vocab.write_text("\n".join(TINY_VOCAB) + "\n")
    # transformers 5 ignores vocab_file in the constructor (leaving only the special tokens),
    # so load the folder as a saved tokenizer.
    return BertTokenizerFast.from_pretrained(str(vocab.parent), do_lower_case=True)


def tiny_bert(seed: int, num_labels: int = 2) -> BertForSequenceClassification:
    """A 2-layer, 4-head BERT, eager attention; large init so its attention is far from uniform."""
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=len(TINY_VOCAB), hidden_size=16, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=32, max_position_embeddings=64,
                        num_labels=num_labels, initializer_range=0.5,
                        attn_implementation="eager")
    return BertForSequenceClassification(config).eval()


@pytest.fixture
def tiny_pair() -> dict[str, BertForSequenceClassification]:
    """Two different tiny BERTs standing in for the pre-trained and fine-tuned checkpoints."""
    return {"pretrained": tiny_bert(0), "finetuned": tiny_bert(1)}


def run_analysis(analysis_cls, checkpoints, tokenizer, examples, batch_size, **options):
    """Stream ``examples`` through ``checkpoints`` into one analysis; returns its result."""
    from harness.analyses.base import AnalysisContext
    from harness.attention import stream_attention
    from harness.encoding import batched

    config = next(iter(checkpoints.values())).config
    context = AnalysisContext(config.num_hidden_layers, config.num_attention_heads, tokenizer, checkpoints, "test",
                              options=options)
    analysis = analysis_cls(context)
    for batch in stream_attention(checkpoints, batched(tokenizer, examples, batch_size, 32)):
        analysis.update(batch)
    return analysis.result()
