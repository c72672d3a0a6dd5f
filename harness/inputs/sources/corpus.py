"""The ``"corpus"`` text source of Clark et al.'s surface analyses.

With ``--corpus FILE`` (plain text, one paragraph per line, blank lines between documents)
consecutive paragraphs of a document are packed into ``[CLS] p1 [SEP] p2 [SEP]`` segments (the
tokenizer's own pair template: `PairTemplate`) of at most ``max_tokens`` tokens, as Clark et
al.'s ``preprocess_unlabeled.py`` did: paragraphs
are gathered until the segment is full, split into parts A and B at a seeded random paragraph
boundary, and the longer part is trimmed token by token (front or back at random) until the
pair fits. Without a corpus its analyses read the task's dev sample: the run streams the
``"task"`` source once for them and the task's own analyses (`Source.streams_as`). The
``"running-text"`` source packs a treebank's paragraphs the same way (`pack_documents`).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import torch
from transformers.tokenization_utils_base import PreTrainedTokenizerBase

from harness.config import AnalysisConfig
from harness.inputs.batches import EncodedBatch
from harness.inputs.encoding import PairTemplate, token_ids
from harness.inputs.sources.base import Source, SourceStream, register_source
from harness.inputs.sources.task import TaskSource
from harness.results.store import SourceIdentity
from tasks.errors import InputError
from tasks.files import text_lines

CORPUS_LAYOUT = "give plain text with one paragraph per line and a blank line between documents"


Paragraphs = list[tuple[str, str]]  # one document: (where each paragraph starts, its text)


@dataclass(frozen=True)
class Segment:
    """One packed input: the tokens of parts A and B, where its text starts (``file:line`` of a
    corpus, the ``sent_id`` of a treebank's sentence), and the special tokens the tokenizer's
    pair template adds."""

    start: str
    tokens_a: tuple[str, ...]
    tokens_b: tuple[str, ...]
    specials: int

    def __len__(self) -> int:
        return len(self.tokens_a) + len(self.tokens_b) + self.specials


@dataclass
class PackingCounts:
    """What packing did to the text, logged with the run."""

    segments: int = 0
    truncated_segments: int = 0
    unpaired_paragraphs: int = 0


def read_documents(path: Path) -> Iterator[Paragraphs]:
    """Documents of a plain-text file as lists of (``file:line``, paragraph)."""
    if not path.is_file():
        raise InputError(f"--corpus {path}: no such file; give a plain-text file with one paragraph per line")
    document: Paragraphs = []
    for number, line in enumerate(text_lines(path), start=1):
        text = line.strip()
        if text:
            document.append((f"{path.name}:{number}", text))
        elif document:
            yield document
            document = []
    if document:
        yield document


def check_corpus(path: Path) -> None:
    """The whole file read as `pack_corpus` reads it: text, with a document of at least two
    paragraphs to pair (the tokenizer is not needed to tell); else one line naming it."""
    paragraphs = [len(document) for document in read_documents(path)]  # of each document
    if not paragraphs:
        raise InputError(f"--corpus {path}: no text (the file is empty or blank); {CORPUS_LAYOUT}")
    if max(paragraphs) < 2:
        raise InputError(
            f"--corpus {path}: none of its {len(paragraphs)} documents has two paragraphs, and each "
            f"segment pairs paragraphs of one document; {CORPUS_LAYOUT}"
        )


def trim_pair(tokens_a: list[str], tokens_b: list[str], budget: int, rng: random.Random) -> bool:
    """Drop tokens from the longer part, at its front or back at random, until both fit; True if any were cut."""
    cut = False
    while len(tokens_a) + len(tokens_b) > budget:
        longer = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
        del longer[0 if rng.random() < 0.5 else -1]
        cut = True
    return cut


def pack_document(
    paragraphs: Sequence[tuple[str, list[str]]],
    max_tokens: int,
    specials: int,
    rng: random.Random,
    counts: PackingCounts,
) -> Iterator[Segment]:
    """Segments of one document: chunks of at least two paragraphs, filled up to ``max_tokens``
    with the ``specials`` special tokens."""
    budget = max_tokens - specials
    chunk: list[tuple[str, list[str]]] = []
    for index, paragraph in enumerate(paragraphs):
        chunk.append(paragraph)
        full = sum(len(tokens) for _, tokens in chunk) >= budget and len(chunk) >= 2
        if not full and index < len(paragraphs) - 1:
            continue
        if len(chunk) < 2:  # a document's lone last paragraph has no partner: skipped, as in Clark's code
            counts.unpaired_paragraphs += 1
        else:
            split = rng.randint(1, len(chunk) - 1)
            tokens_a = [token for _, tokens in chunk[:split] for token in tokens]
            tokens_b = [token for _, tokens in chunk[split:] for token in tokens]
            counts.truncated_segments += trim_pair(tokens_a, tokens_b, budget, rng)
            counts.segments += 1
            yield Segment(chunk[0][0], tuple(tokens_a), tuple(tokens_b), specials)
        chunk = []


def pack_documents(
    documents: Iterable[Paragraphs],
    tokenizer: PreTrainedTokenizerBase,
    max_tokens: int,
    seed: int,
    counts: PackingCounts,
) -> Iterator[Segment]:
    """The segments of ``documents`` in order, each document packed by `pack_document` from its
    paragraphs in the tokenizer's tokens (a paragraph of no token left out); one seeded random
    generator draws every split and cut."""
    rng = random.Random(seed)
    specials = PairTemplate.of(tokenizer).count
    for document in documents:
        # not verbose: a paragraph longer than the model's inputs is cut to its segment, never fed whole
        paragraphs = [
            (start, tokens) for start, text in document if (tokens := tokenizer.tokenize(text, verbose=False))
        ]
        yield from pack_document(paragraphs, max_tokens, specials, rng, counts)


def pack_corpus(
    path: Path, tokenizer: PreTrainedTokenizerBase, max_tokens: int, max_segments: int, seed: int
) -> tuple[list[Segment], PackingCounts]:
    """The first ``max_segments`` segments of the file (Clark et al. used 1000 of 128 tokens)."""
    counts = PackingCounts()
    segments = list(islice(pack_documents(read_documents(path), tokenizer, max_tokens, seed, counts), max_segments))
    if not segments:
        raise InputError(
            f"--corpus {path}: no segment could be built; the file needs documents of at least two "
            "non-empty paragraphs (one paragraph per line, blank lines between documents)"
        )
    return segments, counts


def encode_segments(tokenizer: PreTrainedTokenizerBase, segments: Sequence[Segment]) -> EncodedBatch:
    """``[CLS] a [SEP] b [SEP]`` ids in the tokenizer's own pair template, with its token types
    where it has them, right-padded to the longest segment."""
    template = PairTemplate.of(tokenizer)
    seq_len = max(len(segment) for segment in segments)
    input_ids = torch.full((len(segments), seq_len), tokenizer.pad_token_id, dtype=torch.long)
    token_type_ids = torch.zeros((len(segments), seq_len), dtype=torch.long)
    second_text = torch.zeros((len(segments), seq_len), dtype=torch.long)
    attention_mask = torch.zeros((len(segments), seq_len), dtype=torch.long)
    for row, segment in enumerate(segments):
        ids_a, ids_b = (token_ids(tokenizer, part) for part in (segment.tokens_a, segment.tokens_b))
        ids, types = template.assemble(ids_a, ids_b)
        input_ids[row, : len(ids)] = torch.tensor(ids)
        if types is not None:
            token_type_ids[row, : len(ids)] = torch.tensor(types)
        start = template.second_start(ids_a)
        second_text[row, start : start + len(ids_b)] = 1
        attention_mask[row, : len(ids)] = 1
    return EncodedBatch(
        input_ids,
        attention_mask,
        token_type_ids if template.token_types is not None else None,
        list(segments),
        second_text,
    )


def segment_batches(
    tokenizer: PreTrainedTokenizerBase, segments: Sequence[Segment], batch_size: int
) -> Iterator[EncodedBatch]:
    """Batches of similar length (less padding), encoded lazily."""
    ordered = sorted(segments, key=len)
    for start in range(0, len(ordered), batch_size):
        yield encode_segments(tokenizer, ordered[start : start + batch_size])


@register_source
class CorpusSource(Source):
    """Packed segments of ``--corpus``; without a corpus its analyses read the task source."""

    name = "corpus"
    data_flag = "corpus"  # instead of the task's dev sample

    def streams_as(self) -> str:
        return self.name if self.context.settings.corpus is not None else TaskSource.name

    @property
    def corpus_file(self) -> Path:
        """The --corpus file; without one the task source streams instead (`streams_as`)."""
        if self.context.settings.corpus is None:
            raise ValueError("no --corpus: its analyses read the task source")
        return Path(self.context.settings.corpus)

    def identity(self) -> SourceIdentity:
        settings = self.context.settings
        return {
            "source": self.name,
            **self.context.hashes.describe(self.corpus_file),
            "max_tokens": settings.max_tokens,
            "max_segments": settings.max_eval_examples,
            "seed": self.context.seed,
        }

    @classmethod
    def check(cls, settings: AnalysisConfig) -> None:
        if settings.corpus is not None:
            check_corpus(Path(settings.corpus))

    def stream(self) -> SourceStream:
        context = self.context
        settings = context.settings
        segments, counts = pack_corpus(
            self.corpus_file, context.tokenizer, settings.max_tokens, settings.max_eval_examples, context.seed
        )
        return SourceStream(
            batches=segment_batches(context.tokenizer, segments, settings.eval_batch_size),
            num_items=len(segments),
            notes={
                "corpus": self.corpus_file.name,
                "max_tokens": settings.max_tokens,
                "segments": counts.segments,
                "truncated_segments": counts.truncated_segments,
                "skipped_unpaired_paragraphs": counts.unpaired_paragraphs,
            },
        )
