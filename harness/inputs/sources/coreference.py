"""The ``"coreference"`` source: documents of a coreference corpus (``--coref-data``,
default LitBank from the data cache or ../shared/data: `tasks.corpora`), one document per
row, cut to ``--max-tokens`` word pieces (Clark et al. used 128) or, with ``--coref-windows``,
split into consecutive windows of whole sentences that fit."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from functools import cache
from pathlib import Path

from transformers.tokenization_utils_base import PreTrainedTokenizerBase

from harness.config import AnalysisConfig
from harness.corpus_lookup import default_corpus_path
from harness.inputs.batches import EncodedBatch
from harness.inputs.sampling import sample
from harness.inputs.sources.base import Source, SourceStream, register_source
from harness.inputs.words import encode_words
from harness.results.store import SourceIdentity, SourceNotes
from harness.views.coreference import CoreferenceSourceSettings
from tasks.coreference import Document, coreference_format, read_coreference
from tasks.corpora import DOWNLOAD_COMMAND, LITBANK, cache_folder
from tasks.errors import InputError

log = logging.getLogger(__name__)


def coref_data_path(value: str | Path | None) -> Path:
    """``--coref-data`` if given, else LitBank's conll/ folder from the data cache or ../shared/data,
    else a clear error."""
    if value:
        return Path(value)
    default = default_corpus_path(LITBANK)
    if default is None:
        raise InputError(
            f"no --coref-data given and {LITBANK.title} {LITBANK.version} is neither in the data cache "
            f"({cache_folder(LITBANK)}) nor in ../shared/data; run `{DOWNLOAD_COMMAND} {LITBANK.name}`, "
            "or pass --coref-data with a CoNLL-2012 *_gold_conll file, a .jsonlines file or a LitBank "
            "conll/ folder"
        )
    return default


@cache  # once per file: a study checks it for each of its runs
def say_untagged(path: Path, untagged: int, documents: int) -> None:
    """One line when documents of the JSON-lines file ``path`` have no POS tags: their head
    words and mention types then come from the word rules (`tasks.coreference.mention_head`)."""
    if untagged:
        log.warning(
            "%s: %d of %d documents have no 'pos_tags' or 'pos'; their head words and mention types come "
            "from word lists and capitalisation instead of POS tags (docs/coreference.md)",
            path,
            untagged,
            documents,
        )


def document_windows(document: Document, sentence_tokens: list[int], budget: int) -> Iterator[Document]:
    """Consecutive runs of whole sentences of at most ``budget`` word pieces each."""
    starts = document.sentence_starts
    ends = [*starts[1:], len(document.words)]
    first, used = 0, 0
    for index, tokens in enumerate(sentence_tokens):
        if used and used + tokens > budget:
            yield document.window(starts[first], ends[index - 1])
            first, used = index, 0
        used += tokens
    if starts:
        yield document.window(starts[first], ends[-1])


def split_into_windows(
    tokenizer: PreTrainedTokenizerBase, documents: list[Document], max_tokens: int
) -> list[Document]:
    """Every document as consecutive sentence windows that fit ``max_tokens`` with [CLS]/[SEP]."""
    budget = max_tokens - tokenizer.num_special_tokens_to_add(pair=False)
    windows: list[Document] = []
    for document in documents:
        sentences = [
            document.words[s:e]
            for s, e in zip(document.sentence_starts, [*document.sentence_starts[1:], len(document.words)])
        ]
        counts = (
            [len(ids) for ids in tokenizer(sentences, add_special_tokens=False, is_split_into_words=True)["input_ids"]]
            if sentences
            else []
        )
        windows.extend(document_windows(document, counts, budget))
    return windows


def encoded_documents(
    tokenizer: PreTrainedTokenizerBase, documents: list[Document], batch_size: int, max_tokens: int
) -> Iterator[EncodedBatch]:
    """Batches of documents cut to ``max_tokens``; items are `WordAlignedItem`s of `Document`s."""
    for start in range(0, len(documents), batch_size):
        chunk = documents[start : start + batch_size]
        yield encode_words(tokenizer, [document.words for document in chunk], max_tokens, chunk)[0]


@register_source
class CoreferenceSource(Source):
    """The coreference corpus, one document (or sentence window) per row."""

    name = "coreference"
    corpus, data_flag = LITBANK, "coref_data"

    def identity(self) -> SourceIdentity:
        settings = self.context.settings
        return {
            "source": self.name,
            **self.context.hashes.describe(coref_data_path(settings.coref_data)),
            "max_tokens": settings.max_tokens,
            "windows": CoreferenceSourceSettings.of(settings).coref_windows,
            "max_documents": settings.max_corpus_items,
            "seed": self.context.seed,
        }

    @classmethod
    def check(cls, settings: AnalysisConfig) -> None:
        path = coref_data_path(settings.coref_data)
        documents = read_coreference(path)
        if coreference_format(path) == "jsonlines":
            say_untagged(path, sum(document.pos is None for document in documents), len(documents))

    def stream(self) -> SourceStream:
        context = self.context
        settings = context.settings
        path = coref_data_path(settings.coref_data)
        documents = sample(read_coreference(path), settings.max_corpus_items, context.seed, in_order=True)
        notes: SourceNotes = {"coref_data": "/".join(path.parts[-2:]), "documents": len(documents)}
        if CoreferenceSourceSettings.of(settings).coref_windows:
            documents = split_into_windows(context.tokenizer, documents, settings.max_tokens)
            notes["windows"] = len(documents)
        return SourceStream(
            batches=encoded_documents(context.tokenizer, documents, settings.eval_batch_size, settings.max_tokens),
            num_items=len(documents),
            notes=notes,
        )
