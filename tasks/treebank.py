"""Dependency treebank readers: CoNLL-U (Universal Dependencies) and CoNLL-X (e.g. the Penn
Treebank converted to Stanford Dependencies, Clark et al.'s setting).

Both give `Sentence`s of syntactic words with gold tags, heads (1-based, 0 = root) and
relations. CoNLL-U multi-word token ranges (``1-2 didn't``) are skipped, because the
syntactic words ``did`` and ``n't`` follow on their own lines, and empty nodes (``8.1``,
enhanced dependencies only) are skipped, because they are not part of the basic tree.
CoNLL-U's comments give each sentence its id (``# sent_id``), its text (``# text``) and
whether it opens a document (``# newdoc``) or a paragraph (``# newpar``): the running text
of the treebank, in its documents and paragraphs. `read_treebank` picks the format from the
file name.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tasks.errors import InputError, clipped
from tasks.files import parsed_once, text_lines

COLUMNS = 10
PUNCT_RELATIONS = frozenset({"punct"})
TREEBANK_SUFFIXES = (".conllu", ".conllx")
_RANGE = re.compile(r"^\d+-\d+$")
_EMPTY_NODE = re.compile(r"^\d+\.\d+$")


@dataclass(frozen=True)
class Sentence:
    """One dependency-annotated sentence; all lists have one entry per word (read-only: a
    treebank's sentences are shared by everything that reads it in a process, `read_treebank`).

    ``heads[i]`` is the 1-based index of word i's head (0 for the root); ``upos`` holds the
    coarse tag (UPOS in CoNLL-U, CPOSTAG in CoNLL-X) and ``xpos`` the fine one (Penn tags in
    UD English EWT and PTB conversions). ``text``: the sentence as written (its ``# text``,
    else its words joined as their ``SpaceAfter=No`` marks say); ``new_document`` and
    ``new_paragraph``: whether a ``# newdoc`` or ``# newpar`` comment opens it.
    """

    words: list[str]
    upos: list[str]
    xpos: list[str]
    heads: list[int]
    relations: list[str]
    sent_id: str = ""
    lemmas: list[str] = field(default_factory=list)
    text: str = ""
    new_document: bool = False
    new_paragraph: bool = False

    def __len__(self) -> int:
        return len(self.words)


def _fields(line: str, path: Path, number: int, format_name: str) -> list[str]:
    columns = line.split("\t")
    if len(columns) != COLUMNS and format_name == "CoNLL-X":
        columns = line.split()  # some CoNLL-X conversions separate columns by spaces
    if len(columns) != COLUMNS:
        raise InputError(
            f"{path}:{number}: expected {COLUMNS} tab-separated {format_name} columns, found {len(columns)}; "
            f"fix the line or check that the file really is {format_name}"
        )
    return columns


def _comment(line: str) -> tuple[str, str]:
    """A comment line's name and value: ``# newdoc id = a`` is ("newdoc", "a"), ``# newpar`` ("newpar", "")."""
    name, _, value = line.lstrip("#").partition("=")
    words = name.split()
    return (words[0] if words else ""), value.strip()


def _parse(path: Path, format_name: str) -> Iterator[Sentence]:
    rows: list[list[str]] = []
    comments: dict[str, str] = {}
    start = 1
    for number, raw in enumerate(text_lines(path), start=1):
        line = raw.rstrip("\n").rstrip("\r")
        if not line.strip():
            if rows:
                yield _sentence(rows, comments, path, start)
            rows, comments = [], {}
            continue
        if line.startswith("#"):
            name, value = _comment(line)
            comments.setdefault(name, value)
            continue
        columns = _fields(line, path, number, format_name)
        if _RANGE.match(columns[0]) or _EMPTY_NODE.match(columns[0]):
            continue  # surface token spanning several words, or an enhanced-graph empty node
        if not rows:
            start = number
        rows.append(columns + [str(number)])
    if rows:
        yield _sentence(rows, comments, path, start)


def _written(words: list[str], misc: list[str]) -> str:
    """The words as written: a space after each but those whose MISC column says ``SpaceAfter=No``."""
    spaces = ["" if "SpaceAfter=No" in extra.split("|") else " " for extra in misc]
    return "".join(word + space for word, space in zip(words, spaces)).strip()


def _sentence(rows: list[list[str]], comments: dict[str, str], path: Path, start: int) -> Sentence:
    words, upos, xpos, heads, relations, lemmas = [], [], [], [], [], []
    for position, columns in enumerate(rows, start=1):
        line = columns[COLUMNS]
        if columns[0] != str(position):
            raise InputError(
                f"{path}:{line}: word id {clipped(repr(columns[0]))} should be {position} (ids count "
                "1, 2, ... within a sentence); fix the numbering or separate sentences by a blank line"
            )
        if not (columns[6].isascii() and columns[6].isdigit()):  # int() refuses other digits, such as "²"
            raise InputError(
                f"{path}:{line}: head {clipped(repr(columns[6]))} is not a word index; "
                "every word needs a gold head (0 for the root)"
            )
        head = int(columns[6])
        if head > len(rows):
            raise InputError(
                f"{path}:{line}: head {head} points past the end of the sentence "
                f"starting at line {start} ({len(rows)} words); fix the head column"
            )
        words.append(columns[1])
        lemmas.append(columns[2])
        upos.append(columns[3])
        xpos.append(columns[4])
        heads.append(head)
        relations.append(columns[7])
    sent_id = comments.get("sent_id", "")
    problem = tree_problem(heads)
    if problem:
        raise InputError(
            f"{path}:{start}: the heads of sentence {sent_id or start} do not form a tree ({problem}); "
            "fix the head column (7) so that one word has head 0 and every word leads to it"
        )
    return Sentence(
        words,
        upos,
        xpos,
        heads,
        relations,
        sent_id or f"{path.name}:{start}",
        lemmas,
        comments.get("text") or _written(words, [columns[9] for columns in rows]),
        "newdoc" in comments,
        "newpar" in comments,
    )


def tree_problem(heads: list[int]) -> str | None:
    """Why 1-based ``heads`` (0 = root) are not a dependency tree, or None when they are one."""
    roots = [word for word, head in enumerate(heads, start=1) if head == 0]
    if len(roots) != 1:
        return f"{len(roots)} roots" if roots else "no root"
    for word in range(1, len(heads) + 1):
        seen = set()
        while word and word not in seen:
            seen.add(word)
            word = heads[word - 1]
        if word:
            return f"word {word} is on a cycle"
    return None


def read_conllu(path: Path) -> list[Sentence]:
    """Sentences of a CoNLL-U file (basic dependencies; ranges and empty nodes skipped)."""
    return list(_parse(Path(path), "CoNLL-U"))


def read_conllx(path: Path) -> list[Sentence]:
    """Sentences of a CoNLL-X file (ID FORM LEMMA CPOSTAG POSTAG FEATS HEAD DEPREL PHEAD PDEPREL)."""
    return list(_parse(Path(path), "CoNLL-X"))


def read_treebank(path: Path | str) -> list[Sentence]:
    """Read a dependency treebank, choosing the reader from the suffix (``.conllu`` or ``.conllx``)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"treebank {path} not found; pass a .conllu or .conllx file with --syntax-data")
    readers = {".conllu": read_conllu, ".conllx": read_conllx}
    if path.suffix not in readers:
        raise InputError(
            f"{path}: cannot tell the treebank format from the name; use a file ending in "
            f"{' or '.join(TREEBANK_SUFFIXES)} (CoNLL-U or CoNLL-X)"
        )
    sentences = parsed_once(path, readers[path.suffix])
    if not sentences:
        raise InputError(f"{path} holds no sentences; check that it is a {path.suffix} treebank")
    return list(sentences)
