"""The ``"task"`` source: the seeded sample of the task's dev set that the run compares."""

from __future__ import annotations

from typing import Any

from harness.encoding import batched, count_truncated
from harness.sources.base import Source, SourceStream, register_source


@register_source
class TaskSource(Source):
    """The run's dev sample, in length-grouped batches of ``eval_batch_size``."""

    name = "task"

    def identity(self) -> dict[str, Any]:
        return {"source": self.name, **self.context.task_identity, "max_length": self.context.max_length}

    def stream(self) -> SourceStream:
        context = self.context
        examples, pair = context.task_examples, context.task.is_pair
        return SourceStream(
            batches=batched(context.tokenizer, examples, context.settings.eval_batch_size, context.max_length, pair),
            num_items=len(examples),
            notes={"examples": len(examples),
                   "truncated_examples": count_truncated(context.tokenizer, examples, context.max_length, pair)},
        )
