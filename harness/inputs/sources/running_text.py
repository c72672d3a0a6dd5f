"""The ``"running-text"`` source: Clark et al.'s kind of input for their surface analyses.

Clark et al. measured BERT's attention on 1000 Wikipedia segments ``[CLS] p1 [SEP] p2 [SEP]``
of at most 128 tokens, p1 and p2 consecutive paragraphs of one document. The running text
the harness has in documents and paragraphs is UD English EWT (a pinned default corpus,
`tasks.corpora`: weblogs, newsgroups, e-mails, reviews and answers): its ``# newdoc`` and
``# newpar`` comments mark documents and paragraphs, its ``# text`` comments the sentences as
written. The paragraphs of its dev and train files are packed document by document as
``--corpus`` text is (`harness.inputs.sources.corpus.pack_documents`, Clark's packing, in the
tokenizer's own pair template), never across documents, and a seeded sample of
``--max-eval-examples`` segments (1000 by default, Clark's count) is kept. With ``--corpus`` the
corpus replaces it: the source streams as ``"corpus"``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from statistics import mean

from transformers.tokenization_utils_base import PreTrainedTokenizerBase

from harness.config import AnalysisConfig
from harness.corpus_lookup import default_corpus_path, looked_in
from harness.inputs.sampling import sample
from harness.inputs.sources.base import Source, SourceStream, register_source
from harness.inputs.sources.corpus import (
    CorpusSource,
    PackingCounts,
    Paragraphs,
    Segment,
    check_corpus,
    pack_documents,
    segment_batches,
)
from harness.inputs.sources.treebank import train_sibling
from harness.results.store import SourceIdentity, SourceNotes
from tasks.corpora import DOWNLOAD_COMMAND, UD_ENGLISH_EWT
from tasks.errors import InputError
from tasks.treebank import Sentence, read_treebank


def running_text_files() -> tuple[Path, Path]:
    """UD English EWT's dev and train files, from the data cache or ../shared/data."""
    dev = default_corpus_path(UD_ENGLISH_EWT)
    if dev is None:
        raise InputError(
            f"no {UD_ENGLISH_EWT.title} {UD_ENGLISH_EWT.version} {looked_in()} for the running text of "
            f"Clark's surface analyses; run `{DOWNLOAD_COMMAND} {UD_ENGLISH_EWT.name}`, or pass --corpus"
        )
    return dev, train_sibling(dev)


def treebank_documents(sentences: Iterable[Sentence]) -> Iterator[Paragraphs]:
    """A treebank's documents, each a list of (the ``sent_id`` of a paragraph's first sentence,
    the paragraph's text), as its ``# newdoc`` and ``# newpar`` comments divide them: a sentence
    that opens neither continues the paragraph before it."""
    document: Paragraphs = []
    for sentence in sentences:
        if sentence.new_document and document:
            yield document
            document = []
        if sentence.new_paragraph or not document:
            document.append((sentence.sent_id, sentence.text))
        else:
            start, text = document[-1]
            document[-1] = (start, f"{text} {sentence.text}")
    if document:
        yield document


def read_running_text(paths: Sequence[Path]) -> list[Paragraphs]:
    """The documents of every treebank file, in order; one line when none has two paragraphs to pair."""
    documents = [document for path in paths for document in treebank_documents(read_treebank(path))]
    if not any(len(document) >= 2 for document in documents):
        raise InputError(
            f"{', '.join(str(path) for path in paths)}: no document has two paragraphs (no # newdoc "
            "and # newpar comments?); Clark's segments pair consecutive paragraphs of one document"
        )
    return documents


def running_text_segments(
    paths: Sequence[Path], tokenizer: PreTrainedTokenizerBase, max_tokens: int, max_segments: int, seed: int
) -> tuple[list[Segment], SourceNotes]:
    """Every segment of the treebank files' documents packed, then a seeded sample of at most
    ``max_segments`` of them in their order; with notes on what was read, packed and kept."""
    documents = read_running_text(paths)
    counts = PackingCounts()
    packed = list(pack_documents(documents, tokenizer, max_tokens, seed, counts))
    segments = sample(packed, max_segments, seed, in_order=True)
    return segments, {
        "treebank": ", ".join(path.name for path in paths),
        "documents": len(documents),
        "paragraphs": sum(map(len, documents)),
        "packed_segments": counts.segments,
        "truncated_packed_segments": counts.truncated_segments,
        "skipped_unpaired_paragraphs": counts.unpaired_paragraphs,
        "segments": len(segments),
        "mean_tokens": round(mean(map(len, segments)), 1),
    }


@register_source
class RunningTextSource(Source):
    """Seeded segments of two consecutive paragraphs of UD English EWT; items are `Segment`s."""

    name = "running-text"
    corpus, data_flag = UD_ENGLISH_EWT, "corpus"

    def streams_as(self) -> str:
        return CorpusSource.name if self.context.settings.corpus is not None else self.name

    def identity(self) -> SourceIdentity:
        settings = self.context.settings
        return {
            "source": self.name,
            "treebank": [self.context.hashes.describe(path) for path in running_text_files()],
            "max_tokens": settings.max_tokens,
            "max_segments": settings.max_eval_examples,
            "seed": self.context.seed,
        }

    @classmethod
    def check(cls, settings: AnalysisConfig) -> None:
        """The ``--corpus`` file read as the corpus source reads it; the default treebank only found:
        its files are pinned (size-checked where found, hashed when downloaded), and reading the
        train file's 12,544 sentences twice would cost every run seconds."""
        if settings.corpus is not None:
            check_corpus(Path(settings.corpus))
        else:
            running_text_files()

    def stream(self) -> SourceStream:
        context = self.context
        settings = context.settings
        segments, notes = running_text_segments(
            running_text_files(), context.tokenizer, settings.max_tokens, settings.max_eval_examples, context.seed
        )
        notes = {"text": f"{UD_ENGLISH_EWT.title} {UD_ENGLISH_EWT.version}", **notes}
        return SourceStream(
            batches=segment_batches(context.tokenizer, segments, settings.eval_batch_size),
            num_items=len(segments),
            notes=notes,
        )
