import pytest

from tasks.errors import InputError
from tasks.treebank import read_treebank
from tests.fixtures import SHARED_DATA

EWT = SHARED_DATA / "ud-english-ewt"

CONLLU = """# sent_id = s1
# text = They didn't go.
1-2\tThey'd\t_\t_\t_\t_\t_\t_\t_\t_
1\tThey\tthey\tPRON\tPRP\t_\t4\tnsubj\t4:nsubj\t_
2\tdid\tdo\tAUX\tVBD\t_\t4\taux\t4:aux\t_
3\tn't\tnot\tPART\tRB\t_\t4\tadvmod\t4:advmod\t_
3.1\tgo\tgo\tVERB\tVB\t_\t_\t_\t4:conj\t_
4\tgo\tgo\tVERB\tVB\t_\t0\troot\t0:root\t_
5\t.\t.\tPUNCT\t.\t_\t4\tpunct\t4:punct\t_

1\tHi\thi\tINTJ\tUH\t_\t0\troot\t0:root\t_
"""

CONLLX = """1\tThe\t_\tDT\tDT\t_\t2\tdet\t_\t_
2\tcat\t_\tNN\tNN\t_\t3\tnsubj\t_\t_
3\tsat\t_\tVB\tVBD\t_\t0\troot\t_\t_

1 Hi _ UH UH _ 0 root _ _
"""


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_conllu_skips_ranges_and_empty_nodes(tmp_path):
    first, second = read_treebank(write(tmp_path, "x.conllu", CONLLU))
    assert first.words == ["They", "did", "n't", "go", "."]
    assert first.heads == [4, 4, 4, 0, 4]
    assert first.relations == ["nsubj", "aux", "advmod", "root", "punct"]
    assert first.upos[2] == "PART" and first.xpos[0] == "PRP" and first.sent_id == "s1"
    assert second.words == ["Hi"] and second.heads == [0]


def test_conllx_reads_tabs_and_space_separated_lines(tmp_path):
    first, second = read_treebank(write(tmp_path, "x.conllx", CONLLX))
    assert first.words == ["The", "cat", "sat"] and first.heads == [2, 3, 0]
    assert first.xpos == ["DT", "NN", "VBD"] and first.relations[1] == "nsubj"
    assert second.words == ["Hi"]


@pytest.mark.parametrize(
    "bad, message",
    [
        ("1\tThe\t_\tDT\tDT\t_\t2\tdet\t_\n", r"x\.conllu:1: expected 10"),
        (
            "1\tThe\t_\tDT\tDT\t_\t2\tdet\t_\t_\n3\tcat\t_\tNN\tNN\t_\t0\troot\t_\t_\n",
            r"x\.conllu:2: word id '3' should be 2",
        ),
        ("1\tThe\t_\tDT\tDT\t_\t_\tdet\t_\t_\n", r"x\.conllu:1: head '_'"),
        ("1\tThe\t_\tDT\tDT\t_\t7\tdet\t_\t_\n", r"x\.conllu:1: head 7 points past"),
    ],
)
def test_malformed_lines_name_file_and_line(tmp_path, bad, message):
    with pytest.raises(InputError, match=message):
        read_treebank(write(tmp_path, "x.conllu", bad))


def test_unknown_suffix_and_missing_file_are_clear_errors(tmp_path):
    with pytest.raises(InputError, match=r"\.conllu or \.conllx"):
        read_treebank(write(tmp_path, "x.txt", CONLLX))
    with pytest.raises(InputError, match="not found"):
        read_treebank(tmp_path / "missing.conllu")


def test_real_ud_ewt_matches_its_readme():
    dev = read_treebank(EWT / "en_ewt-ud-dev.conllu")
    train = read_treebank(EWT / "en_ewt-ud-train.conllu")
    assert (len(train), len(dev)) == (12544, 2001)  # README: train 12544 sent., dev 2001 sent.
    for sentence in dev:
        assert sentence.heads.count(0) >= 1
        assert all(0 <= head <= len(sentence) for head in sentence.heads)
        assert "_" not in sentence.upos  # multi-word range lines have "_" tags and are skipped


def test_a_head_of_digits_int_refuses_is_one_line(tmp_path):
    superscript = "1\tThe\t_\tDT\tDT\t_\t2\tdet\t_\t_\n2\tcat\t_\tNN\tNN\t_\t\u00b2\troot\t_\t_\n"
    with pytest.raises(InputError, match="x.conllu:2: head '\u00b2' is not a word index; every word needs a gold head"):
        read_treebank(write(tmp_path, "x.conllu", superscript))


def test_comments_give_each_sentence_its_text_document_and_paragraph(tmp_path):
    first, second = read_treebank(write(tmp_path, "x.conllu", "# newdoc id = d\n# newpar\n" + CONLLU))
    assert first.text == "They didn't go." and first.new_document and first.new_paragraph
    assert second.text == "Hi" and not second.new_document and not second.new_paragraph  # no comment: its words
    dev = read_treebank(EWT / "en_ewt-ud-dev.conllu")
    # grep -c of the file: 318 "# newdoc" and 750 "# newpar" lines, and a "# text" line for every sentence
    assert sum(s.new_document for s in dev) == 318 and sum(s.new_paragraph for s in dev) == 750
    assert dev[0].text == "From the AP comes this story :" and all(s.text for s in dev)
