"""The ``"dev"`` source: every evaluation split of the task (whole, or a seeded sample of each
under ``--max-dev-examples`` and ``--quick``), for the dev metrics; and the ``"ablation"``
source: the main evaluation split (or a seeded sample of it), for the head-disabling and
pruning sweeps."""

from __future__ import annotations

from harness.inputs.encoding import batched
from harness.inputs.sampling import sample
from harness.inputs.sources.base import Source, SourceStream, register_source
from harness.inputs.sources.task import TaskSource
from harness.results.store import SourceIdentity
from harness.views.evaluation import DevSampleSettings


@register_source
class DevSource(Source):
    """All examples of the task's evaluation splits (each example knows its split), or a seeded
    sample of ``max_dev_examples`` of each (in the split's order), in length-grouped batches of
    ``eval_batch_size``.

    When the run's task sample is the whole of the only evaluation split (RTE, MRPC, STS-B,
    SST-2 under the default 1000), these are the task source's inputs: the run streams them
    once, and the dev metrics come from the pass that also captures attention.
    """

    name = "dev"

    def splits(self) -> dict[str, list]:
        """Each evaluation split's examples that are scored."""
        context = self.context
        wanted = DevSampleSettings.of(context.settings).max_dev_examples
        return {
            split: sample(examples, wanted, context.seed, in_order=True)
            for split, examples in context.eval_examples.items()
        }

    def identity(self) -> SourceIdentity:
        context = self.context
        identity = {
            "source": self.name,
            "task": context.run_task.name,
            "splits": context.eval_identity,
            "max_length": context.max_length,
        }
        wanted = DevSampleSettings.of(context.settings).max_dev_examples
        if wanted is not None:  # the whole splits keep the key they always had
            identity["sample"] = {"max_examples": wanted, "seed": context.seed}
        return identity

    def streams_as(self) -> str:
        splits = list(self.splits().values())
        whole = len(splits) == 1 and self.context.task_examples == splits[0]
        return TaskSource.name if whole else self.name

    def stream(self) -> SourceStream:
        context = self.context
        splits = self.splits()
        examples = [example for split in splits.values() for example in split]
        return SourceStream(
            batches=batched(
                context.tokenizer,
                examples,
                context.settings.eval_batch_size,
                context.max_length,
                context.run_task.is_pair,
            ),
            num_items=len(examples),
            notes={"examples": {split: len(items) for split, items in splits.items()}},
        )


@register_source
class AblationSource(Source):
    """The main evaluation split, or a seeded sample of ``--ablation-examples`` of it (in the
    split's order), in length-grouped batches of ``eval_batch_size``: what the ablation
    analysis scores every disabled head, layer and pruning step on."""

    name = "ablation"

    def examples(self) -> list:
        """The main evaluation split's examples that are scored, in the split's order."""
        context = self.context
        split = next(iter(context.eval_examples))
        return sample(context.eval_examples[split], context.settings.ablation_examples, context.seed, in_order=True)

    def identity(self) -> SourceIdentity:
        context = self.context
        split = next(iter(context.eval_identity))
        return {
            "source": self.name,
            "task": context.run_task.name,
            "split": split,
            "data": context.eval_identity[split],
            "examples": len(self.examples()),
            "sample_seed": context.seed,
            "max_length": context.max_length,
        }

    def stream(self) -> SourceStream:
        context = self.context
        examples = self.examples()
        return SourceStream(
            batches=batched(
                context.tokenizer,
                examples,
                context.settings.eval_batch_size,
                context.max_length,
                context.run_task.is_pair,
            ),
            num_items=len(examples),
            notes={"examples": len(examples)},
        )
