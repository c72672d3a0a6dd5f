"""The ``"task"`` source: the seeded sample of the task's dev set that the run compares, and its
padded variant for Kovaleva et al.'s protocol."""

from __future__ import annotations

from harness.inputs.encoding import batched, count_truncated
from harness.inputs.sources.base import Source, SourceStream, register_source
from harness.results.store import SourceIdentity

KOVALEVA_PADDED_LENGTH = 200  # every input padded to this length in Kovaleva et al.'s comparison code


@register_source
class TaskSource(Source):
    """The run's dev sample, in length-grouped batches of ``eval_batch_size``."""

    name = "task"

    def identity(self) -> SourceIdentity:
        return {"source": self.name, **self.context.task_identity, "max_length": self.context.max_length}

    def stream(self) -> SourceStream:
        context = self.context
        examples, pair = context.task_examples, context.run_task.is_pair
        return SourceStream(
            batches=batched(context.tokenizer, examples, context.settings.eval_batch_size, context.max_length, pair),
            num_items=len(examples),
            notes={
                "examples": len(examples),
                "truncated_examples": count_truncated(context.tokenizer, examples, context.max_length, pair),
            },
        )


@register_source
class PaddedTaskSource(TaskSource):
    """The run's dev sample with every input padded to `KOVALEVA_PADDED_LENGTH` tokens, as
    Kovaleva et al.'s code compared attention maps (for the ``cosine_padded`` compatibility
    analysis; the padding rows are kept there)."""

    name = "task-padded"

    def identity(self) -> SourceIdentity:
        return {**super().identity(), "padded_to": KOVALEVA_PADDED_LENGTH}

    def stream(self) -> SourceStream:
        context = self.context
        stream = super().stream()
        stream.batches = batched(
            context.tokenizer,
            context.task_examples,
            context.settings.eval_batch_size,
            context.max_length,
            context.run_task.is_pair,
            pad_to=KOVALEVA_PADDED_LENGTH,
        )
        return stream
