import random

import pytest
import torch

from harness.config import AnalysisConfig
from harness.inputs.sources import SOURCES, SourceContext
from harness.inputs.sources.corpus import Segment, encode_segments, pack_corpus, trim_pair
from tasks.errors import InputError
from tasks.examples import Example
from tasks.registry import get_task

TEXT = """the cat sat on the mat .
the dog ran .
he is not happy , she is happy .

a lone paragraph without a partner .

the cat sat .
the dog sat .
it ran .
"""


def test_packs_paragraph_pairs_as_cls_a_sep_b_sep(tiny_tokenizer, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT)
    segments, counts = pack_corpus(corpus, tiny_tokenizer, max_tokens=128, max_segments=10, seed=0)
    assert counts.segments == 2 and counts.unpaired_paragraphs == 1 and counts.truncated_segments == 0
    assert [segment.start for segment in segments] == ["corpus.txt:1", "corpus.txt:7"]
    first = segments[0]
    assert (
        " ".join(first.tokens_a + first.tokens_b)
        == "the cat sat on the mat . the dog ran . he is not happy , she is happy ."
    )
    batch = encode_segments(tiny_tokenizer, segments)
    tokens = tiny_tokenizer.convert_ids_to_tokens(batch.input_ids[0, : len(first)].tolist())
    assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]" and tokens.count("[SEP]") == 2
    boundary = tokens.index("[SEP]")
    assert (
        batch.token_type_ids[0, : boundary + 1].eq(0).all()
        and batch.token_type_ids[0, boundary + 1 : len(first)].eq(1).all()
    )
    assert batch.attention_mask.sum(dim=1).tolist() == [len(s) for s in segments]


def test_segments_fit_max_tokens_and_packing_is_seeded(tiny_tokenizer, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(["the cat sat on the mat and the dog sat on the mat ."] * 12) + "\n")
    segments, counts = pack_corpus(corpus, tiny_tokenizer, max_tokens=20, max_segments=100, seed=3)
    assert all(len(segment) <= 20 for segment in segments) and counts.truncated_segments == len(segments) > 0
    assert all(segment.tokens_a and segment.tokens_b for segment in segments)
    assert segments == pack_corpus(corpus, tiny_tokenizer, max_tokens=20, max_segments=100, seed=3)[0]
    assert len(pack_corpus(corpus, tiny_tokenizer, max_tokens=20, max_segments=2, seed=3)[0]) == 2


def test_trim_pair_cuts_the_longer_part():
    a, b = list("abcdef"), list("xy")
    assert trim_pair(a, b, 5, random.Random(0)) and len(a) == 3 and b == ["x", "y"]
    assert not trim_pair(a, b, 5, random.Random(0))
    assert len(Segment("corpus.txt:1", ("a",), ("b",), 3)) == 5


def test_missing_or_useless_corpus_is_one_clear_error(tiny_tokenizer, tmp_path):
    with pytest.raises(InputError, match="no such file"):
        pack_corpus(tmp_path / "absent.txt", tiny_tokenizer, 128, 10, 0)
    lonely = tmp_path / "lonely.txt"
    lonely.write_text("one paragraph .\n\nanother document .\n")
    with pytest.raises(InputError, match="at least two"):
        pack_corpus(lonely, tiny_tokenizer, 128, 10, 0)


def test_without_a_corpus_the_source_is_the_task_dev_sample(tiny_tokenizer, tmp_path):
    examples = [Example("1", "the cat sat .", "a dog", 1), Example("2", "he ran", "it sat", 0)]
    rte = get_task("rte")
    fallback = SOURCES["corpus"](
        SourceContext(tiny_tokenizer, AnalysisConfig(eval_batch_size=1), task=rte, task_examples=examples)
    )
    assert fallback.streams_as() == "task"
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT)
    source = SOURCES["corpus"](
        SourceContext(tiny_tokenizer, AnalysisConfig(corpus=corpus), task=rte, task_examples=examples)
    )
    assert source.streams_as() == "corpus"
    stream = source.stream()
    batches = list(stream.batches)
    assert stream.num_items == 2 and stream.notes["skipped_unpaired_paragraphs"] == 1
    assert isinstance(batches[0].items[0], Segment) and batches[0].input_ids.dtype == torch.long
