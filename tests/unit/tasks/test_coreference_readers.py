import json

import pytest

from tasks.coreference import Mention, coreference_format, read_coreference
from tasks.errors import InputError
from tests.fixtures import SHARED_DATA

LITBANK = SHARED_DATA / "litbank" / "conll"

# Two CoNLL-2012 documents (space-separated columns, POS and parse present, PTB escapes).
CONLL_2012 = """#begin document (bc/cctv/00/cctv_0000); part 000
bc/cctv/00/cctv_0000   0   0        John   NNP   (TOP(S(NP*)   -   -   -   Speaker#1   *   (0)
bc/cctv/00/cctv_0000   0   1        said   VBD          (VP*   say   01   -   Speaker#1   *   -
bc/cctv/00/cctv_0000   0   2          he   PRP       (S(NP*)   -   -   -   Speaker#1   *   (0)
bc/cctv/00/cctv_0000   0   3       liked   VBD          (VP*   -   -   -   Speaker#1   *   -
bc/cctv/00/cctv_0000   0   4         his   PRP$       (NP*   -   -   -   Speaker#1   *   (0)|(1
bc/cctv/00/cctv_0000   0   5      sister    NN      *))))))   -   -   -   Speaker#1   *   1)
bc/cctv/00/cctv_0000   0   6          /.     .           *)   -   -   -   Speaker#1   *   -

bc/cctv/00/cctv_0000   0   0       -LRB-  -LRB-        (TOP*   -   -   -   Speaker#1   *   -
bc/cctv/00/cctv_0000   0   1         She   PRP           *)   -   -   -   Speaker#1   *   (1)
#end document
#begin document (bc/cctv/00/cctv_0000); part 001
bc/cctv/00/cctv_0000   1   0        Rain    NN   (TOP*)   -   -   -   Speaker#1   *   -
#end document
"""


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.skipif(not LITBANK.is_dir(), reason="needs ../shared/data/litbank")
def test_litbank_folder_counts_match_its_readme():
    documents = read_coreference(LITBANK)
    assert len(documents) == 100
    assert sum(len(document.sentence_starts) for document in documents) == 8562
    assert sum(len(document.mentions) for document in documents) == 29103
    assert sum(len(document.words) for document in documents) == 210532  # "210,532 tokens"
    assert all(document.pos is None for document in documents)  # LitBank has no POS column


@pytest.mark.skipif(not LITBANK.is_dir(), reason="needs ../shared/data/litbank")
def test_litbank_first_document_reads_nested_and_multiword_mentions():
    bleak_house = read_coreference(LITBANK / "1023_bleak_house_brat.conll")[0]
    assert bleak_house.name == "1023_bleak_house_brat/part 0"
    assert bleak_house.words[:6] == ["CHAPTER", "I", "In", "Chancery", "London", "."]
    assert bleak_house.sentence_starts[:3] == [0, 6, 22]
    spans = [" ".join(bleak_house.words[m.start : m.end + 1]) for m in bleak_house.mentions[:4]]
    assert spans == ["Chancery", "London", "Lord Chancellor", "Lincoln 's Inn Hall"]


def test_conll_2012_file_with_parts_pos_and_escapes(tmp_path):
    path = write(tmp_path, "cctv_0000.v4_gold_conll", CONLL_2012)
    first, second = read_coreference(path)
    assert first.name == "bc/cctv/00/cctv_0000/part 000" and second.name.endswith("part 001")
    assert first.words == ["John", "said", "he", "liked", "his", "sister", ".", "(", "She"]
    assert first.sentence_starts == [0, 7]
    assert first.pos[:2] == ["NNP", "VBD"]
    assert first.mentions == [Mention(0, 0, 0), Mention(2, 2, 0), Mention(4, 4, 0), Mention(4, 5, 1), Mention(8, 8, 1)]
    assert [len(group) for group in first.clusters.values()] == [3, 2]
    assert second.mentions == [] and second.words == ["Rain"]


def test_folder_of_conll_2012_files_is_searched_recursively(tmp_path):
    folder = tmp_path / "annotations" / "bc"
    folder.mkdir(parents=True)
    write(folder, "a.v4_gold_conll", CONLL_2012)
    write(folder, "notes.txt", "not a coreference file")
    assert len(read_coreference(tmp_path)) == 2


def test_jsonlines_spans_are_inclusive_over_the_flattened_document(tmp_path):
    record = {
        "doc_key": "nw/1",
        "sentences": [["Mary", "left", "."], ["She", "was", "tired", "."]],
        "clusters": [[[0, 0], [3, 3]]],
    }
    path = write(tmp_path, "dev.english.jsonlines", json.dumps(record) + "\n\n")
    (document,) = read_coreference(path)
    assert document.name == "nw/1" and document.sentence_starts == [0, 3]
    assert document.mentions == [Mention(0, 0, 0), Mention(3, 3, 0)]
    assert document.pos is None


@pytest.mark.parametrize(
    "name, expected",
    [("x.v4_gold_conll", "conll"), ("x.conll", "conll"), ("x.jsonlines", "jsonlines"), ("x.jsonl", "jsonlines")],
)
def test_format_is_recognised_from_the_path(tmp_path, name, expected):
    assert coreference_format(tmp_path / name) == expected


def test_treebank_given_as_coreference_data_is_a_clear_error(tmp_path):
    path = write(tmp_path, "en_ewt-ud-dev.conllu", "1\tHi\n")
    with pytest.raises(InputError, match="no coreference annotation.*--coref-data"):
        read_coreference(path)


def test_missing_path_names_the_fix(tmp_path):
    with pytest.raises(InputError, match="not found.*--coref-data"):
        read_coreference(tmp_path / "nope.jsonlines")


@pytest.mark.parametrize(
    "text, line, message",
    [
        ("#begin document (d); part 0\nd 0 0 John NNP * (0\n#end document\n", 2, "never closed"),
        ("#begin document (d); part 0\nd 0 0 John NNP * 0)\n#end document\n", 2, "never opened"),
        ("#begin document (d); part 0\nd 0 0 John NNP * (x)\n#end document\n", 2, "not '\\(N'"),
        ("d 0 0 John NNP * (0)\n", 1, "outside a document"),
        ("#begin document (d); part 0\nd 0 John\n#end document\n", 2, "expected at least 5"),
        ("#begin document (d); part 0\nd 0 0 John NNP * -\n", 1, "no #end document"),
    ],
)
def test_malformed_conll_names_file_and_line(tmp_path, text, line, message):
    path = write(tmp_path, "bad_gold_conll", text)
    with pytest.raises(InputError, match=f"bad_gold_conll:{line}: .*{message}"):
        read_coreference(path)


def test_malformed_jsonlines_names_file_and_line(tmp_path):
    good = json.dumps({"sentences": [["a"]], "clusters": []})
    path = write(tmp_path, "bad.jsonlines", good + "\n" + json.dumps({"sentences": [["a"]]}) + "\n")
    with pytest.raises(InputError, match="bad.jsonlines:2: .*'clusters'"):
        read_coreference(path)
    path = write(tmp_path, "span.jsonlines", json.dumps({"sentences": [["a"]], "clusters": [[[0, 3]]]}))
    with pytest.raises(InputError, match="span.jsonlines:1: .*outside"):
        read_coreference(path)


def test_jsonlines_pos_tags_are_read_under_either_name_flat_or_per_sentence(tmp_path):
    sentences = [["Mary", "left", "."], ["She", "was"]]
    per_sentence = [["NNP", "VBD", "."], ["PRP", "VBD"]]
    flat = ["NNP", "VBD", ".", "PRP", "VBD"]  # e2e-coref's CoNLL-2012 files: one list for the document
    for key in ("pos_tags", "pos"):
        for tags in (per_sentence, flat):
            path = write(tmp_path, f"{key}.jsonlines", json.dumps({"sentences": sentences, "clusters": [], key: tags}))
            (document,) = read_coreference(path)
            assert document.pos == flat and document.sentence_starts == [0, 3]


SENTENCES = [["he", "sat"], ["it", "ran", "."]]


@pytest.mark.parametrize(
    "record, message",
    [
        ([SENTENCES], "a JSON list, not an object"),
        ({"sentences": "he sat", "clusters": []}, "'sentences' must be a non-empty list of sentences, not 'he sat'"),
        ({"sentences": [[]], "clusters": []}, "'sentences' holds no words"),
        ({"sentences": [["he", None]], "clusters": []}, "sentence 0 is ['he', None]"),
        (
            {"sentences": SENTENCES, "clusters": [[[0, 0], [2.0, 2]]]},
            "cluster 0 has span [2.0, 2]; spans are [start, end] pairs of integer word indices",
        ),
        ({"sentences": SENTENCES, "clusters": [[[0, False]]]}, "cluster 0 has span [0, False]"),
        ({"sentences": SENTENCES, "clusters": [[[0, 1, 2]]]}, "cluster 0 has span [0, 1, 2]"),
        (
            {"sentences": SENTENCES, "clusters": [[[-1, 0]]]},
            "cluster 0 has span [-1, 0] outside the document's 5 words",
        ),
        ({"sentences": SENTENCES, "clusters": [[[4, 5]]]}, "cluster 0 has span [4, 5] outside the document's 5 words"),
        ({"sentences": SENTENCES, "clusters": [0, 1]}, "'clusters' must be a list of clusters, each a list of"),
        ({"sentences": SENTENCES, "clusters": [[0, 1]]}, "cluster 0 has span 0; spans are [start, end] pairs"),
        (
            {"sentences": SENTENCES, "clusters": [], "pos_tags": "PRP VBD"},
            "'pos_tags' of document 'bad.jsonlines:1' is 'PRP VBD', not a list of tags; give one tag per word",
        ),
        (
            {"sentences": SENTENCES, "clusters": [], "pos": [["PRP", "VBD"]]},
            "'pos' of document 'bad.jsonlines:1' has 1 tag lists for 2 sentences",
        ),
        (
            {"doc_key": "bc/cctv/00/cctv_0000_0", "sentences": SENTENCES, "clusters": [], "pos": ["PRP", "VBD"] * 2},
            "'pos' of document 'bc/cctv/00/cctv_0000_0' has 4 tags for its 5 words in 2 sentences; give one tag per "
            "word, as one list for the document or one list per sentence",
        ),
        (
            {"sentences": SENTENCES, "clusters": [], "pos": ["PRP", "VBD", "PRP", None, "."]},
            "'pos' of document 'bad.jsonlines:1' is ['PRP', 'VBD', 'PRP', None, '.']; tags are strings",
        ),
        (
            {"sentences": SENTENCES, "clusters": [], "pos": [["PRP", "VBD"], "PRP", "VBD", "."]},
            "'pos' of document 'bad.jsonlines:1' mixes tags and lists of tags (item 1 is 'PRP')",
        ),
        (
            {"sentences": SENTENCES, "clusters": [], "pos": [["PRP", "VBD"], ["PRP", "VBD", 1.5]]},
            "'pos' of document 'bad.jsonlines:1', sentence 1, is ['PRP', 'VBD', 1.5]; tags are strings",
        ),
        (
            {"sentences": SENTENCES, "clusters": [], "pos": [["PRP"], ["PRP", "VBD", "."]]},
            "'pos' of document 'bad.jsonlines:1', sentence 0, has 1 tags for its 2 words; give one tag per word",
        ),
    ],
)
def test_jsonlines_values_of_the_wrong_type_or_place_are_one_line(tmp_path, record, message):
    path = write(tmp_path, "bad.jsonlines", json.dumps(record) + "\n")
    with pytest.raises(InputError) as raised:
        read_coreference(path)
    assert str(raised.value).startswith(f"{path}:1: ") and message in str(raised.value)
    assert "\n" not in str(raised.value) and len(str(raised.value)) < 500


def test_a_huge_value_is_quoted_in_a_few_hundred_characters(tmp_path):
    path = write(tmp_path, "huge.jsonlines", json.dumps({"sentences": [["w"] * 100_000 + [0]], "clusters": []}))
    with pytest.raises(InputError, match=r"sentence 0 is \['w', .*\.\.\. \(500,003 characters\)$") as raised:
        read_coreference(path)
    assert len(str(raised.value)) < len(str(path)) + 400


def test_conll_that_is_not_utf8_names_file_and_line(tmp_path):
    path = tmp_path / "latin_gold_conll"
    path.write_bytes(b"#begin document (d); part 0\nd 0 0 John NNP * (0)\nd 0 1 caf\xe9 NN * -\n#end document\n")
    with pytest.raises(InputError, match=r"latin_gold_conll:3: not UTF-8 text \(byte b'\\xe9'\); re-save"):
        read_coreference(path)


def test_a_line_that_is_no_json_value_is_one_line(tmp_path):
    path = write(tmp_path, "bad.jsonlines", '{"sentences": [["a"]], "clusters": [[[0, 1' + "0" * 5000 + "]]]}\n")
    with pytest.raises(InputError, match=r"bad.jsonlines:1: not JSON \(Exceeds the limit .*; each line must be"):
        read_coreference(path)
