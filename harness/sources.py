"""Registry of text sources that analyses read, each turned into `EncodedBatch`es.

The default source ``"task"`` is the seeded sample of the task's dev set that the run
compares; other sources (a treebank, a coreference corpus, a plain-text corpus) register
here with `register_source` and are streamed once for all analyses that name them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from transformers.tokenization_utils_base import PreTrainedTokenizerBase

from harness.attention import EncodedBatch
from harness.config import AnalysisConfig


@dataclass
class SourceContext:
    """What a source needs to build batches: the tokenizer, the settings, the run's dev sample."""

    tokenizer: PreTrainedTokenizerBase
    settings: AnalysisConfig
    task_examples: list[Any]
    seed: int


@dataclass
class SourceStream:
    """Batches of one source, with how many items they hold (for progress bars) and notes
    to log (e.g. how many inputs were truncated)."""

    batches: Iterator[EncodedBatch]
    num_items: int
    notes: dict[str, Any]


SourceBuilder = Callable[[SourceContext], SourceStream]
SOURCES: dict[str, SourceBuilder] = {}


def register_source(name: str) -> Callable[[SourceBuilder], SourceBuilder]:
    """Decorator registering a function that builds the `SourceStream` of ``name``."""

    def add(builder: SourceBuilder) -> SourceBuilder:
        if name in SOURCES:
            raise ValueError(f"source {name!r} registered twice")
        SOURCES[name] = builder
        return builder

    return add


@register_source("task")
def task_source(context: SourceContext) -> SourceStream:
    """The run's dev sample, in length-grouped batches of ``eval_batch_size``."""
    from harness.encoding import batched, count_truncated

    settings = context.settings
    examples = context.task_examples
    return SourceStream(
        batches=batched(context.tokenizer, examples, settings.eval_batch_size, settings.max_length),
        num_items=len(examples),
        notes={"truncated_examples": count_truncated(context.tokenizer, examples, settings.max_length)},
    )
