"""What a text source is: something that turns its inputs into `EncodedBatch`es, with an
identity for the results store.

A source names the data it reads and how it samples it in `identity` (files with content
hashes, sample sizes, seeds), so every result computed from it is keyed by that data; it
produces the batches in `stream`. Sources register with `register_source`; the package's
``__init__`` imports every source module, so `SOURCES` is complete once ``harness.inputs.sources``
is imported.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import KW_ONLY, dataclass, field
from typing import ClassVar

from transformers.tokenization_utils_base import PreTrainedTokenizerBase

from harness.config import AnalysisConfig
from harness.inputs.batches import EncodedBatch
from harness.registry import registrar
from harness.results.store import FileHashes, SourceIdentity, SourceNotes
from tasks.corpora import Corpus
from tasks.examples import Example
from tasks.spec import Task


@dataclass
class SourceContext:
    """What a source may read: the tokenizer (and the model name it belongs to), the analysis
    settings, the run's task, its evaluation splits and its sample.

    ``task_examples`` is the seeded dev sample of ``task`` the run compares, and
    ``task_identity`` says what it is (data files and hashes, split, sample size and seed);
    ``eval_examples`` holds every evaluation split whole (split -> examples, the main one
    first) and ``eval_identity`` their files and hashes (split -> description).
    """

    tokenizer: PreTrainedTokenizerBase
    settings: AnalysisConfig
    _: KW_ONLY  # the rest by name: a context is never built from a dozen positions
    tokenizer_name: str = ""
    max_length: int = 128
    task: Task | None = None
    task_examples: list[Example] = field(default_factory=list)
    task_identity: SourceIdentity = field(default_factory=dict)
    eval_examples: dict[str, list[Example]] = field(default_factory=dict)
    eval_identity: SourceIdentity = field(default_factory=dict)
    hashes: FileHashes = field(default_factory=FileHashes)

    @property
    def seed(self) -> int:
        return self.settings.analysis_seed

    @property
    def run_task(self) -> Task:
        """The run's task, for the sources that read it (a context of a run without one has none of them)."""
        if self.task is None:
            raise ValueError("this source reads the run's task, and its context has none")
        return self.task


@dataclass
class SourceStream:
    """Batches of one source, how many items they hold (for progress bars), and notes to
    keep with the results (e.g. how many inputs were truncated; filled while streaming)."""

    batches: Iterator[EncodedBatch]
    num_items: int
    notes: SourceNotes


class Source(ABC):
    """One kind of input text; `identity` is cheap (no tokenising), `stream` does the work."""

    name: ClassVar[str]
    corpus: ClassVar[Corpus | None] = None  # the pinned corpus read by default (`harness.run.plan` finds or fetches it)
    data_flag: ClassVar[str | None] = None  # the `AnalysisConfig` field that names other data instead

    def __init__(self, context: SourceContext) -> None:
        self.context = context

    @classmethod
    def other_data_flag(cls) -> str:
        """`data_flag`, which every source with a default corpus has."""
        if cls.data_flag is None:
            raise TypeError(f"the {cls.name} source reads no data a flag names")
        return cls.data_flag

    @abstractmethod
    def identity(self) -> SourceIdentity:
        """Everything the batches depend on besides the model: files and hashes, sizes, seeds."""

    @abstractmethod
    def stream(self) -> SourceStream:
        """The batches, built lazily."""

    def streams_as(self) -> str:
        """The registered source whose stream these inputs are: this one, unless it falls back
        to another (then the run streams that source once for the analyses of both)."""
        return self.name

    @classmethod  # noqa: B027 (a source whose files are read up front has nothing to check first)
    def check(cls, settings: AnalysisConfig) -> None:
        """Read and validate the source's files before any model work, each problem one
        `InputError` line, from the settings alone (no tokenizer). Sources whose files are read
        up front anyway (the task's) check nothing here."""


SOURCES: dict[str, type[Source]] = {}
register_source = registrar(SOURCES, "source")  # class decorator: adds a source to SOURCES under its name
