"""Treebank text sources for the syntax analyses (dependency heads, probes, linguistic features).

``"syntax"`` streams the treebank's dev sentences (``--syntax-data``, default UD English EWT
dev from the data cache or ../shared/data: `tasks.corpora`). ``"syntax-probe"`` streams a
seeded sample of its training sentences, in shuffled order, followed by all dev sentences:
the probe learns online from the first part (one update per sentence, as Clark et al.) and
is scored on the second, so nothing is stored.
Sentences are cut to ``--max-tokens`` at word boundaries; the notes count what was cut.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from itertools import chain
from pathlib import Path

from transformers.tokenization_utils_base import PreTrainedTokenizerBase

from harness.config import AnalysisConfig
from harness.corpus_lookup import default_corpus_path
from harness.inputs.batches import EncodedBatch
from harness.inputs.sampling import sample
from harness.inputs.sources.base import Source, SourceStream, register_source
from harness.inputs.words import encode_words
from harness.results.store import SourceIdentity, SourceNotes
from harness.views.probes import ProbeSampleSettings
from tasks.corpora import DOWNLOAD_COMMAND, UD_ENGLISH_EWT, cache_folder
from tasks.errors import InputError
from tasks.treebank import Sentence, read_treebank

TRAIN, DEV = "train", "dev"
# Shuffled sentences are grouped into windows this many batches long and sorted by length
# inside each window: order stays random at the scale of the probe's learning, padding small.
SHUFFLE_WINDOW_BATCHES = 16


def train_sibling(dev: Path) -> Path:
    """The training treebank next to a dev file: ``dev`` replaced by ``train`` in its name
    (``en_ewt-ud-dev.conllu`` -> ``en_ewt-ud-train.conllu``)."""
    return dev.with_name(dev.name.replace("dev", "train"))


def treebank_path(settings: AnalysisConfig) -> Path:
    """The dev treebank: ``--syntax-data`` if given, else UD English EWT dev from the data cache or ../shared/data."""
    path = Path(settings.syntax_data) if settings.syntax_data else default_corpus_path(UD_ENGLISH_EWT)
    if path is None:
        raise InputError(
            f"no --syntax-data given and {UD_ENGLISH_EWT.title} {UD_ENGLISH_EWT.version} is neither in "
            f"the data cache ({cache_folder(UD_ENGLISH_EWT)}) nor in ../shared/data; run "
            f"`{DOWNLOAD_COMMAND} {UD_ENGLISH_EWT.name}`, or pass a .conllu or .conllx dev file"
        )
    if not path.is_file():
        raise InputError(f"treebank {path} not found; pass a .conllu or .conllx dev file with --syntax-data")
    return path


def train_treebank_path(settings: AnalysisConfig) -> Path:
    """The probe's training treebank: ``--syntax-train-data`` if set, else the dev file's `train_sibling`."""
    dev = treebank_path(settings)
    path = Path(settings.syntax_train_data) if settings.syntax_train_data else train_sibling(dev)
    if path == dev or not path.is_file():
        raise InputError(
            f"training treebank for the probes not found (looked for {path}); put the train file "
            "next to the dev file with 'train' for 'dev' in its name, or pass --syntax-train-data"
        )
    return path


def sentence_batches(
    tokenizer: PreTrainedTokenizerBase,
    sentences: Sequence[Sentence],
    batch_size: int,
    max_tokens: int,
    items: Sequence[object] | None = None,  # carried beside each sentence, never read here
    notes: SourceNotes | None = None,
) -> Iterator[EncodedBatch]:
    """Encode consecutive groups of ``batch_size`` sentences (items default to the sentences),
    adding the words cut and the sentences truncated to ``notes`` when given."""
    items = sentences if items is None else items
    for start in range(0, len(sentences), batch_size):
        chunk = sentences[start : start + batch_size]
        batch, cut = encode_words(
            tokenizer, [s.words for s in chunk], max_tokens, list(items[start : start + batch_size])
        )
        if notes is not None:
            notes["words_cut"] += sum(cut)
            notes["sentences_truncated"] += sum(1 for words in cut if words)
        yield batch


def _by_length(sentences: list[Sentence]) -> list[Sentence]:
    return sorted(sentences, key=len)


def _windowed_shuffle(sentences: list[Sentence], batch_size: int, rng: random.Random) -> list[Sentence]:
    """Random order, except that each window of ``SHUFFLE_WINDOW_BATCHES`` batches is
    length-sorted and its batches then shuffled (less padding, still random across batches)."""
    shuffled = sentences[:]
    rng.shuffle(shuffled)
    window = batch_size * SHUFFLE_WINDOW_BATCHES
    ordered: list[Sentence] = []
    for start in range(0, len(shuffled), window):
        block = _by_length(shuffled[start : start + window])
        groups = [block[i : i + batch_size] for i in range(0, len(block), batch_size)]
        rng.shuffle(groups)
        ordered.extend(sentence for group in groups for sentence in group)
    return ordered


def _notes(path: Path, sentences: int, words: int) -> SourceNotes:
    return {"treebank": path.name, "sentences": sentences, "words": words, "words_cut": 0, "sentences_truncated": 0}


@register_source
class SyntaxSource(Source):
    """Dev sentences of the treebank, length-grouped; items are `Sentence`s."""

    name = "syntax"
    corpus, data_flag = UD_ENGLISH_EWT, "syntax_data"

    def identity(self) -> SourceIdentity:
        settings = self.context.settings
        return {
            "source": self.name,
            "dev": self.context.hashes.describe(treebank_path(settings)),
            "max_tokens": settings.max_tokens,
            "max_sentences": settings.max_corpus_items,
            "seed": self.context.seed,
        }

    @classmethod
    def check(cls, settings: AnalysisConfig) -> None:
        read_treebank(treebank_path(settings))

    def stream(self) -> SourceStream:
        settings = self.context.settings
        path = treebank_path(settings)
        sentences = _by_length(sample(read_treebank(path), settings.max_corpus_items, self.context.seed, in_order=True))
        notes = _notes(path, len(sentences), sum(map(len, sentences)))
        batches = sentence_batches(
            self.context.tokenizer, sentences, settings.eval_batch_size, settings.max_tokens, notes=notes
        )
        return SourceStream(batches=batches, num_items=len(sentences), notes=notes)


@register_source
class ProbeSource(Source):
    """A seeded sample of training sentences, shuffled, then every dev sentence; items are
    ``(split, Sentence)`` with split "train" or "dev"."""

    name = "syntax-probe"
    corpus, data_flag = UD_ENGLISH_EWT, "syntax_data"

    def identity(self) -> SourceIdentity:
        settings = self.context.settings
        return {
            "source": self.name,
            "dev": self.context.hashes.describe(treebank_path(settings)),
            "train": self.context.hashes.describe(train_treebank_path(settings)),
            "train_sentences": ProbeSampleSettings.of(settings).probe_train_sentences,
            "seed": self.context.seed,
            "max_tokens": settings.max_tokens,
            "max_dev_sentences": settings.max_corpus_items,
        }

    @classmethod
    def check(cls, settings: AnalysisConfig) -> None:
        read_treebank(treebank_path(settings))
        read_treebank(train_treebank_path(settings))

    def stream(self) -> SourceStream:
        context = self.context
        settings = context.settings
        dev_path, train_path = treebank_path(settings), train_treebank_path(settings)
        rng = random.Random(context.seed)
        train = read_treebank(train_path)
        wanted = ProbeSampleSettings.of(settings).probe_train_sentences or len(train)  # 0: all of them
        train = rng.sample(train, min(wanted, len(train)))
        dev = _by_length(sample(read_treebank(dev_path), settings.max_corpus_items, context.seed, in_order=True))
        train = _windowed_shuffle(train, settings.eval_batch_size, rng)
        notes = {
            **_notes(dev_path, len(dev), sum(map(len, dev))),
            "train_treebank": train_path.name,
            "train_sentences": len(train),
            "train_words": sum(map(len, train)),
        }
        items = [(TRAIN, s) for s in train] + [(DEV, s) for s in dev]
        batch_size = settings.eval_batch_size
        # train and dev never share a batch: the probe must finish learning before it is scored
        batches = chain(
            sentence_batches(context.tokenizer, train, batch_size, settings.max_tokens, items[: len(train)], notes),
            sentence_batches(context.tokenizer, dev, batch_size, settings.max_tokens, items[len(train) :], notes),
        )
        return SourceStream(batches=batches, num_items=len(items), notes=notes)
