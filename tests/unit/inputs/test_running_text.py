"""The running-text source: Clark's segments of two consecutive paragraphs of one document, from a
treebank's ``# newdoc`` and ``# newpar`` comments, in the tokenizer's own pair template."""

from __future__ import annotations

import pytest
from huggingface_hub import constants as hub_constants

import harness.corpus_lookup
from harness.analyses.surface_text import SurfaceText
from harness.config import AnalysisConfig
from harness.inputs.sources import SOURCES, SourceContext
from harness.inputs.sources.corpus import encode_segments
from harness.inputs.sources.running_text import running_text_segments, treebank_documents
from harness.run.plan import Downloads, leave_out
from tasks.errors import InputError
from tasks.treebank import read_treebank
from tests.fixtures import SHARED_DATA
from tests.unit.model.architectures import roberta_tokenizer

# Three documents: the first of three paragraphs (its first of two sentences, one without a
# ``# text`` line), the second of one paragraph (no partner: never in a segment), the third of
# two. The first and third share no word, so a segment across documents would show.
DOCUMENTS = [
    ("d1", [["the cat sat .", "the dog sat ."], ["the cat ran ."], ["a dog sat on the mat ."]]),
    ("d2", [["a cat ."]]),
    ("d3", [["he is happy ,"], ["she is not happy ,"]]),
]
UNWRITTEN = "d1-2"  # the sentence whose text is left to its words and their SpaceAfter marks


def conllu_sentence(sent_id: str, text: str, new_document: str | None, new_paragraph: bool) -> str:
    """One sentence, every word headed by the first; its ``# text`` left out for `UNWRITTEN`,
    where the last word follows the one before it with no space."""
    words = text.split()
    comments = [f"# newdoc id = {new_document}"] * (new_document is not None) + [f"# sent_id = {sent_id}"]
    comments += ["# newpar"] * new_paragraph + [f"# text = {text}"] * (sent_id != UNWRITTEN)
    rows = [
        f"{index}\t{word}\t_\tX\tX\t_\t{0 if index == 1 else 1}\t{'root' if index == 1 else 'dep'}\t_\t"
        f"{'SpaceAfter=No' if index == len(words) - 1 and sent_id == UNWRITTEN else '_'}"
        for index, word in enumerate(words, start=1)
    ]
    return "\n".join(comments + rows) + "\n"


def write_treebank(tmp_path):
    sentences = []
    for document, paragraphs in DOCUMENTS:
        number = 0
        for _paragraph_index, paragraph in enumerate(paragraphs):
            for sentence_index, text in enumerate(paragraph):
                number += 1
                sentences.append(
                    conllu_sentence(
                        f"{document}-{number}", text, document if number == 1 else None, sentence_index == 0
                    )
                )
    path = tmp_path / "documents.conllu"
    path.write_text("\n".join(sentences))
    return path


def test_the_treebank_is_read_as_documents_of_paragraphs(tmp_path):
    documents = list(treebank_documents(read_treebank(write_treebank(tmp_path))))
    assert documents == [
        [("d1-1", "the cat sat . the dog sat."), ("d1-3", "the cat ran ."), ("d1-4", "a dog sat on the mat .")],
        [("d2-1", "a cat .")],
        [("d3-1", "he is happy ,"), ("d3-2", "she is not happy ,")],
    ]


@pytest.fixture(params=["bert", "byte-level BPE"])
def tokenizer_and_template(request, tiny_tokenizer):
    """A tokenizer and how it writes a pair (a, b): BERT's WordPiece and RoBERTa's byte-level BPE."""
    if request.param == "bert":
        return tiny_tokenizer, lambda a, b: ["[CLS]", *a, "[SEP]", *b, "[SEP]"]
    return roberta_tokenizer(), lambda a, b: ["<s>", *a, "</s>", "</s>", *b, "</s>"]


def document_tokens(tokenizer, document: str) -> set[str]:
    return {
        token for paragraph in dict(DOCUMENTS)[document] for text in paragraph for token in tokenizer.tokenize(text)
    }


def test_two_whole_paragraphs_make_a_segment_in_the_tokenizers_own_template(tmp_path, tokenizer_and_template):
    tokenizer, template = tokenizer_and_template
    segments, notes = running_text_segments([write_treebank(tmp_path)], tokenizer, 128, 1000, seed=0)
    assert notes["documents"] == 3 and notes["paragraphs"] == 6 and notes["skipped_unpaired_paragraphs"] == 1
    assert notes["segments"] == notes["packed_segments"] == 2 and notes["truncated_packed_segments"] == 0
    first, third = segments
    assert first.start == "d1-1" and third.start == "d3-1"
    assert third.tokens_a == tuple(tokenizer.tokenize("he is happy ,"))
    assert third.tokens_b == tuple(tokenizer.tokenize("she is not happy ,"))
    batch = encode_segments(tokenizer, segments)
    row = batch.input_ids[1, : len(third)].tolist()
    assert tokenizer.convert_ids_to_tokens(row) == template(third.tokens_a, third.tokens_b)


def test_segments_fit_the_budget_and_never_cross_documents(tmp_path, tokenizer_and_template):
    tokenizer, template = tokenizer_and_template
    segments, notes = running_text_segments([write_treebank(tmp_path)], tokenizer, 9, 1000, seed=0)
    assert notes["truncated_packed_segments"] >= 1 and all(len(segment) <= 9 for segment in segments)
    for segment in segments:
        own = document_tokens(tokenizer, segment.start.split("-")[0])
        assert segment.tokens_a and segment.tokens_b and set(segment.tokens_a + segment.tokens_b) <= own
    batch = encode_segments(tokenizer, segments)
    assert batch.attention_mask.sum(dim=1).max() <= 9
    specials = [token for token in template(["a"], ["b"]) if token not in ("a", "b")]
    for row, segment in enumerate(segments):
        tokens = tokenizer.convert_ids_to_tokens(batch.input_ids[row, : len(segment)].tolist())
        assert [token for token in tokens if token in specials] == specials


def test_the_sample_is_seeded_and_kept_in_order(tmp_path, tiny_tokenizer):
    path = write_treebank(tmp_path)
    everything, _ = running_text_segments([path], tiny_tokenizer, 9, 1000, seed=0)
    one, notes = running_text_segments([path], tiny_tokenizer, 9, 1, seed=0)
    assert notes["packed_segments"] == len(everything) > 1 and notes["segments"] == 1 and one[0] in everything
    assert running_text_segments([path], tiny_tokenizer, 9, 1, seed=0)[0] == one


def test_a_treebank_without_paragraphs_to_pair_is_one_line(tmp_path, tiny_tokenizer):
    path = tmp_path / "flat.conllu"
    path.write_text("1\tthe\t_\tX\tX\t_\t0\troot\t_\t_\n2\tcat\t_\tX\tX\t_\t1\tdep\t_\t_\n")
    with pytest.raises(InputError, match="no document has two paragraphs"):
        running_text_segments([path], tiny_tokenizer, 128, 10, seed=0)


@pytest.mark.skipif(not (SHARED_DATA / "ud-english-ewt").is_dir(), reason="needs UD English EWT in ../shared/data")
def test_the_source_names_the_pinned_files_and_corpus_replaces_it(tiny_tokenizer, tmp_path):
    source = SOURCES["running-text"](SourceContext(tiny_tokenizer, AnalysisConfig(max_eval_examples=10)))
    identity = source.identity()
    assert [file["file"] for file in identity["treebank"]] == ["en_ewt-ud-dev.conllu", "en_ewt-ud-train.conllu"]
    assert identity["max_segments"] == 10 and identity["seed"] == 42 and source.streams_as() == "running-text"
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat .\nthe dog ran .\n")
    assert (
        SOURCES["running-text"](SourceContext(tiny_tokenizer, AnalysisConfig(corpus=corpus))).streams_as() == "corpus"
    )


def test_without_the_treebank_offline_the_analysis_is_left_out_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_DATA", str(tmp_path / "data-cache"))
    monkeypatch.setattr(harness.corpus_lookup, "SHARED_DATA", tmp_path / "no-shared-data")
    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", True)
    skipped = leave_out(AnalysisConfig(), [SurfaceText], Downloads())
    assert skipped == {
        "surface_text": "no UD English EWT r2.16 in the data cache or ../shared/data, and nothing is "
        "downloaded offline (HF_HUB_OFFLINE is set); `harness data download "
        "ud-english-ewt` fetches it"
    }
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat .\nthe dog ran .\n")
    assert leave_out(AnalysisConfig(corpus=corpus), [SurfaceText], Downloads()) == {}
    with pytest.raises(InputError, match="--analyses surface_text: no UD English EWT .* or pass --corpus$"):
        leave_out(AnalysisConfig(analyses=["surface_text"]), [SurfaceText], Downloads())
