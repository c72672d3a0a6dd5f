"""Coreference corpora as `Document`s: CoNLL-2012, e2e-coref JSON lines, and LitBank.

`read_coreference(path)` recognises the format from the path:

* ``*_conll`` / ``*.conll`` file, or a folder holding such files (searched recursively, so a
  LitBank ``conll/`` folder and the CoNLL-2012 ``annotations/`` tree both work): CoNLL-2012
  columns (document, part, word index, word, POS, parse, ...), the coreference brackets in the
  **last** column, documents between ``#begin document (name); part N`` and ``#end document``,
  sentences separated by blank lines. LitBank uses the same layout with ``_`` in the POS and
  parse columns and an empty last column where there is no mention.
* ``*.jsonlines`` / ``*.jsonl``: the e2e-coref format, one JSON object per line with
  ``doc_key``, ``sentences`` (lists of words) and ``clusters`` (lists of ``[start, end]``
  inclusive word spans over the flattened document), optionally ``pos_tags`` or ``pos`` (Penn
  Treebank tags: one flat list for the document, as e2e-coref's CoNLL-2012 files have them, or one
  list per sentence). Every value's type and every span's place in its
  document is checked as the line is read: a bad one is `InputError` ``file:line: ...``.

The module also holds the two word-level decisions the coreference analysis needs and that
depend only on the text: the head word of a mention (`mention_head`) and its type
(`mention_type`: pronoun, proper or nominal). Both are documented in ``docs/coreference.md``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tasks.errors import InputError, clipped
from tasks.files import parsed_once, text_lines

COREF_FIX = "give --coref-data a CoNLL-2012 *_gold_conll file, an e2e-coref .jsonlines file or a LitBank conll/ folder"
JSON_FIX = (
    "each line must be a JSON object with 'sentences' (lists of words) and 'clusters' (lists of [start, end] "
    "word spans)"
)
POS_KEYS = ("pos_tags", "pos")  # the public CoNLL-2012 converters' name, then the one e2e-coref files have used

# Penn Treebank escapes used in CoNLL-2012 word columns, mapped back to the text BERT saw.
PTB_ESCAPES = {
    "-LRB-": "(",
    "-RRB-": ")",
    "-LSB-": "[",
    "-RSB-": "]",
    "-LCB-": "{",
    "-RCB-": "}",
    "/.": ".",
    "/?": "?",
    "/-": "-",
}
NO_MENTION = {"", "-", "_"}
BRACKET = re.compile(r"^(\()?(\d+)(\))?$")
BEGIN = re.compile(r"^#begin document \(?(.*?)\)?;\s*part\s+(\w+)")


@dataclass(frozen=True, order=True)
class Mention:
    """A mention: words ``start..end`` (inclusive) of its document, in coreference ``cluster``."""

    start: int
    end: int
    cluster: int


@dataclass(frozen=True)
class Document:
    """One document: its words, where its sentences start, and its gold mentions (read-only: a
    file's documents are read once per process and shared, `parsed_once`).

    ``mentions`` are sorted by (start, end); ``pos`` holds one Penn Treebank tag per word when
    the format has them (CoNLL-2012), else None (LitBank, JSON lines without ``pos_tags`` or
    ``pos``). ``cluster_sizes`` and ``lowercase_words`` describe the whole document, also in a `window`
    of it: how many mentions each cluster has, and which words occur in lower case.
    """

    name: str
    words: list[str]
    sentence_starts: list[int]
    mentions: list[Mention]
    pos: list[str] | None = None
    source: str = ""
    cluster_sizes: dict[int, int] = field(default_factory=dict)
    lowercase_words: frozenset[str] = frozenset()
    sentence_start_set: frozenset[int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.cluster_sizes:
            for mention in self.mentions:
                self.cluster_sizes[mention.cluster] = self.cluster_sizes.get(mention.cluster, 0) + 1
        if not self.lowercase_words:
            object.__setattr__(self, "lowercase_words", frozenset(word for word in self.words if word.islower()))
        object.__setattr__(self, "sentence_start_set", frozenset(self.sentence_starts))

    @property
    def clusters(self) -> dict[int, list[Mention]]:
        """Mentions grouped by cluster, each group in document order."""
        grouped: dict[int, list[Mention]] = {}
        for mention in self.mentions:
            grouped.setdefault(mention.cluster, []).append(mention)
        return grouped

    def window(self, start: int, end: int) -> Document:
        """Words ``start..end-1`` as a document of their own, with the mentions wholly inside."""
        return Document(
            name=f"{self.name}[{start}:{end}]",
            words=self.words[start:end],
            sentence_starts=[s - start for s in self.sentence_starts if start <= s < end],
            mentions=[
                Mention(m.start - start, m.end - start, m.cluster)
                for m in self.mentions
                if start <= m.start and m.end < end
            ],
            pos=self.pos[start:end] if self.pos is not None else None,
            source=self.source,
            cluster_sizes=self.cluster_sizes,
            lowercase_words=self.lowercase_words,
        )


@dataclass
class _DocumentBuilder:
    """Accumulates the lines of one CoNLL document and checks its brackets."""

    name: str
    path: Path
    line: int
    words: list[str] = field(default_factory=list)
    pos: list[str] = field(default_factory=list)
    sentence_starts: list[int] = field(default_factory=list)
    mentions: set[Mention] = field(default_factory=set)
    open_mentions: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    cluster_ids: dict[str, int] = field(default_factory=dict)
    in_sentence: bool = False

    def add_token(self, cells: list[str], line: int) -> None:
        """Add one token line's ``cells`` (the word in column 4, PTB escapes undone; the POS tag in column 5; the
        coreference brackets in the last), opening a sentence if none is open; ``line`` numbers it in errors."""
        index = len(self.words)
        if not self.in_sentence:
            self.sentence_starts.append(index)
            self.in_sentence = True
        self.words.append(PTB_ESCAPES.get(cells[3], cells[3]))
        self.pos.append(cells[4] if len(cells) > 4 else "_")
        coref = cells[-1].strip()
        if coref not in NO_MENTION:
            for part in coref.split("|"):
                self._bracket(part, index, line)

    def end_sentence(self) -> None:
        """Close the open sentence (a blank line): the next token starts a new one."""
        self.in_sentence = False

    def _bracket(self, part: str, index: int, line: int) -> None:
        match = BRACKET.match(part)
        if not match or not (match.group(1) or match.group(3)):
            raise InputError(
                f"{self.path}:{line}: coreference cell part {clipped(repr(part))} is not '(N', 'N)' or "
                "'(N)'; the coreference brackets must be in the last column"
            )
        opens, label, closes = match.groups()
        if opens:
            self.open_mentions.setdefault(label, []).append((index, line))
        if closes:
            if not self.open_mentions.get(label):
                raise InputError(
                    f"{self.path}:{line}: mention {label}) closes but was never opened; "
                    "fix the brackets in the last column"
                )
            start, _ = self.open_mentions[label].pop()
            cluster = self.cluster_ids.setdefault(label, len(self.cluster_ids))
            self.mentions.add(Mention(start, index, cluster))

    def finish(self) -> Document:
        """The document read so far (POS tags None when the file has none); raises `InputError` at a mention
        left open."""
        for label, starts in self.open_mentions.items():
            if starts:
                raise InputError(
                    f"{self.path}:{starts[-1][1]}: mention ({label} is never closed before "
                    "#end document; fix the brackets in the last column"
                )
        has_pos = any(tag not in NO_MENTION for tag in self.pos)
        return Document(
            self.name,
            self.words,
            self.sentence_starts,
            sorted(self.mentions),
            self.pos if has_pos else None,
            f"{self.path}:{self.line}",
        )


def read_conll_file(path: Path) -> Iterator[Document]:
    """Documents of one CoNLL-2012 or LitBank file (one per ``#begin document ... part``)."""
    builder: _DocumentBuilder | None = None
    for number, raw in enumerate(text_lines(path), start=1):
        line = raw.rstrip("\r\n")
        if line.startswith("#begin document"):
            if builder is not None:
                raise InputError(
                    f"{path}:{number}: #begin document inside document {clipped(repr(builder.name))}; "
                    "add the missing #end document line"
                )
            match = BEGIN.match(line)
            name = f"{match.group(1)}/part {match.group(2)}" if match else line[len("#begin document") :].strip()
            builder = _DocumentBuilder(name, path, number)
        elif line.startswith("#end document"):
            if builder is None:
                raise InputError(f"{path}:{number}: #end document without #begin document")
            yield builder.finish()
            builder = None
        elif not line.strip():
            if builder is not None:
                builder.end_sentence()
        elif not line.startswith("#"):
            cells = line.split("\t") if "\t" in line else line.split()
            if builder is None:
                raise InputError(
                    f"{path}:{number}: token line outside a document; "
                    "CoNLL coreference files need '#begin document (name); part 0' first"
                )
            if len(cells) < 5:
                raise InputError(
                    f"{path}:{number}: {len(cells)} columns, expected at least 5 "
                    "(document, part, index, word, ..., coreference last)"
                )
            builder.add_token(cells, number)
    if builder is not None:
        raise InputError(f"{path}:{builder.line}: document {clipped(repr(builder.name))} has no #end document line")


def read_jsonlines(path: Path) -> Iterator[Document]:
    """Documents of an e2e-coref JSON-lines file (``sentences`` and inclusive ``clusters`` spans)."""
    for number, line in enumerate(text_lines(path), start=1):
        if line.strip():
            yield _json_document(path, number, line)


def _json_document(path: Path, number: int, line: str) -> Document:
    """The document of line ``number``, each value checked (`InputError` ``file:line: ...``)."""
    where = f"{path}:{number}"
    record = _json_record(where, line)
    sentences = _json_sentences(where, record["sentences"])
    words = [word for sentence in sentences for word in sentence]
    starts, position = [], 0
    for sentence in sentences:
        if sentence:
            starts.append(position)
        position += len(sentence)
    name = str(record.get("doc_key", f"{path.name}:{number}"))
    return Document(
        name,
        words,
        starts,
        _json_mentions(where, record["clusters"], len(words)),
        _json_pos(where, name, record, sentences),
        where,
    )


def _json_record(where: str, line: str) -> dict:
    """The JSON object of one line, with its ``sentences`` and ``clusters``."""
    try:
        record = json.loads(line)
    except RecursionError:
        raise InputError(f"{where}: nested too deeply; {JSON_FIX}") from None
    except ValueError as error:  # not JSON, or an integer of thousands of digits
        raise InputError(f"{where}: not JSON ({clipped(str(error))}); {JSON_FIX}") from None
    if not isinstance(record, dict):
        raise InputError(f"{where}: a JSON {type(record).__name__}, not an object; {JSON_FIX}")
    missing = [key for key in ("sentences", "clusters") if key not in record]
    if missing:
        raise InputError(f"{where}: no {' or '.join(map(repr, missing))}; {JSON_FIX}")
    return record


def _json_sentences(where: str, sentences: object) -> list[list[str]]:
    """``sentences`` checked: a non-empty list of lists of words (strings), with at least one word."""
    if not isinstance(sentences, list) or not sentences:
        raise InputError(
            f"{where}: 'sentences' must be a non-empty list of sentences, not {clipped(repr(sentences))}; {JSON_FIX}"
        )
    for index, sentence in enumerate(sentences):
        if not (isinstance(sentence, list) and all(isinstance(word, str) for word in sentence)):
            raise InputError(
                f"{where}: 'sentences' must be a list of lists of words (strings); sentence {index} "
                f"is {clipped(repr(sentence))}"
            )
    if not any(sentences):
        raise InputError(f"{where}: 'sentences' holds no words; leave out a document without text")
    return sentences


def _json_mentions(where: str, clusters: object, words: int) -> list[Mention]:
    """The mentions of ``clusters`` (lists of inclusive ``[start, end]`` spans of integer word
    indices inside the document's ``words``), sorted."""
    if not (isinstance(clusters, list) and all(isinstance(spans, list) for spans in clusters)):
        raise InputError(
            f"{where}: 'clusters' must be a list of clusters, each a list of [start, end] spans, not "
            f"{clipped(repr(clusters))}"
        )
    mentions = set()
    for cluster, spans in enumerate(clusters):
        for span in spans:
            # type(), not isinstance: a bool is an int to Python, and true is no word index
            if not (isinstance(span, list) and len(span) == 2 and all(type(index) is int for index in span)):
                raise InputError(
                    f"{where}: cluster {cluster} has span {clipped(repr(span))}; spans are [start, end] "
                    "pairs of integer word indices"
                )
            if not 0 <= span[0] <= span[1] < words:
                raise InputError(
                    f"{where}: cluster {cluster} has span {clipped(repr(span))} outside the document's "
                    f"{words} words; spans are inclusive [start, end] word indices, start <= end"
                )
            mentions.add(Mention(span[0], span[1], cluster))
    return sorted(mentions)


def _json_pos(where: str, name: str, record: dict, sentences: list[list[str]]) -> list[str] | None:
    """The POS tags of the record's words, flattened, from `POS_KEYS`: one flat list for the
    document's words (as e2e-coref's CoNLL-2012 files have them) or one list per sentence, each
    as long as what it tags; None when the record has none."""
    key = next((key for key in POS_KEYS if record.get(key) is not None), None)
    if key is None:
        return None
    tags = record[key]
    document = f"{key!r} of document {clipped(repr(name))}"
    words = sum(len(sentence) for sentence in sentences)
    fix = f"give one tag per word, as one list for the document or one list per sentence, or leave {key!r} out"
    if not isinstance(tags, list):
        raise InputError(f"{where}: {document} is {clipped(repr(tags))}, not a list of tags; {fix}")
    if any(isinstance(tag, list) for tag in tags):
        return _sentence_tags(where, document, tags, sentences, fix)
    _check_tags(where, document, tags)
    if len(tags) != words:
        raise InputError(
            f"{where}: {document} has {len(tags)} tags for its {words} words in {len(sentences)} sentences; {fix}"
        )
    return tags


def _sentence_tags(where: str, document: str, tags: list, sentences: list[list[str]], fix: str) -> list[str]:
    """Tags given as one list per sentence, checked against the sentences and flattened."""
    mixed = next((index for index, tag_list in enumerate(tags) if not isinstance(tag_list, list)), None)
    if mixed is not None:
        raise InputError(
            f"{where}: {document} mixes tags and lists of tags (item {mixed} is {clipped(repr(tags[mixed]))}); {fix}"
        )
    if len(tags) != len(sentences):
        raise InputError(f"{where}: {document} has {len(tags)} tag lists for {len(sentences)} sentences; {fix}")
    for index, (tag_list, sentence) in enumerate(zip(tags, sentences)):
        _check_tags(where, f"{document}, sentence {index},", tag_list)
        if len(tag_list) != len(sentence):
            raise InputError(
                f"{where}: {document}, sentence {index}, has {len(tag_list)} tags for its {len(sentence)} words; {fix}"
            )
    return [tag for tag_list in tags for tag in tag_list]


def _check_tags(where: str, what: str, tags: list) -> None:
    """Every tag a string (a Penn Treebank tag), else `InputError` quoting the list."""
    if not all(isinstance(tag, str) for tag in tags):
        raise InputError(f"{where}: {what} is {clipped(repr(tags))}; tags are strings (Penn Treebank tags)")


def coreference_format(path: Path) -> str:
    """``"conll"`` or ``"jsonlines"`` from the path, or a clear error for anything else."""
    name = path.name
    if path.is_dir():
        return "conll"
    if name.endswith((".jsonlines", ".jsonl")):
        return "jsonlines"
    if name.endswith(("_conll", ".conll")):
        return "conll"
    if name.endswith((".conllu", ".conllx")):
        raise InputError(f"{path} is a dependency treebank with no coreference annotation; {COREF_FIX}")
    raise InputError(
        f"{path}: unknown coreference format (expected *_conll, *.conll, *.jsonlines or a "
        f"folder of .conll files); {COREF_FIX}"
    )


def conll_files(folder: Path) -> list[Path]:
    """The CoNLL coreference files under ``folder``, in a stable order."""
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.name.endswith(("_conll", ".conll")))
    if not files:
        raise InputError(f"{folder} holds no *.conll or *_conll files; {COREF_FIX}")
    return files


def read_coreference(path: str | Path) -> list[Document]:
    """Every document at ``path`` (a file or a folder), format recognised from the path."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path} not found; {COREF_FIX}")
    if coreference_format(path) == "jsonlines":
        documents = list(parsed_once(path, read_jsonlines))
    else:
        files = conll_files(path) if path.is_dir() else [path]
        documents = [document for file in files for document in parsed_once(file, read_conll_file)]
    if not documents:
        raise InputError(f"{path} holds no documents; {COREF_FIX}")
    return documents


# --- Head words and mention types (no parses in LitBank; see docs/coreference.md) ---------

PRONOUNS = frozenset(
    "i me my mine myself you your yours yourself yourselves thou thee thy thine thyself ye "
    "he him his himself she her hers herself it its itself oneself "
    "we us our ours ourselves ourself they them their theirs themselves themself "
    "who whom whose".split()
)
# Words that end a noun phrase's pre-head part: the head is the last word before them
# ("the face [of the earth]", "a man [who ...]", "Mr. Brown [, the baker]").
POST_MODIFIER_STARTS = frozenset(
    "of in on at by with from to for about into onto upon over under after before through "
    "between among against without within during like than as near behind beyond "
    'who whom whose which that where when while whilst , ; : ( -- — - " “ ” ‘ ’'.split()
)
POST_MODIFIER_TAGS = ("IN", "TO", "WDT", "WP", "WP$", "WRB", ",", ":", "-LRB-", "VB", "MD", "``", "''")
SKIPPED_AT_END = frozenset("'s ' ’s ’ . , ; : ! ? \" “ ” ‘ ` `` '' ) ] -- —".split())
HEAD_TAGS = ("NN", "PRP", "CD", "EX")


def _is_post_modifier(document: Document, index: int) -> bool:
    if document.pos is not None:
        return document.pos[index].startswith(POST_MODIFIER_TAGS)
    return document.words[index].lower() in POST_MODIFIER_STARTS


def mention_head(document: Document, mention: Mention) -> int:
    """Index of the head word of ``mention`` (English noun phrases are head-final before
    their post-modifiers).

    The mention is cut before its first post-modifier (a preposition, relative pronoun,
    comma, dash or quote after its first word; with POS tags: IN, TO, W*, VB*, MD,
    punctuation); the head is the last word of what remains that is not a possessive marker
    or punctuation, and with POS tags the last noun, pronoun or number among them if any.
    """
    end = mention.end
    for index in range(mention.start + 1, mention.end + 1):
        if _is_post_modifier(document, index):
            end = index - 1
            break
    candidates = [i for i in range(mention.start, end + 1) if document.words[i].lower() not in SKIPPED_AT_END]
    if document.pos is not None:
        nouns = [i for i in candidates if document.pos[i].startswith(HEAD_TAGS)]
        candidates = nouns or candidates
    return candidates[-1] if candidates else mention.start


MENTION_TYPES = ("pronoun", "proper", "nominal")


def mention_type(document: Document, mention: Mention, head: int) -> str:
    """``"pronoun"``, ``"proper"`` or ``"nominal"``, decided on the head word.

    With POS tags: PRP/PRP$ (or a word of `PRONOUNS`) is a pronoun, NNP/NNPS proper, else
    nominal. Without: a pronoun if the head is in `PRONOUNS`; proper if it is capitalised and
    either not the first word of its sentence or never written in lower case in the document
    (so "The man" stays nominal and a sentence-initial "Holmes" is proper); else nominal.
    """
    word = document.words[head]
    if word.lower() in PRONOUNS and (document.pos is None or not document.pos[head].startswith("NN")):
        return "pronoun"
    if document.pos is not None:
        tag = document.pos[head]
        return "pronoun" if tag.startswith("PRP") else "proper" if tag.startswith("NNP") else "nominal"
    if word[:1].isupper() and (head not in document.sentence_start_set or word.lower() not in document.lowercase_words):
        return "proper"
    return "nominal"
