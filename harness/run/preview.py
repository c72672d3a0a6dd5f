"""What a run will do, said before it does it: ``harness run --dry-run`` (the task's data as the run
reads it, the run's key and folder, and its cost), and the plan a ``--trajectory`` run prints
before it fine-tunes (the steps it keeps, what measures them, and the passes that adds).

The cost is counted, not timed: the optimiser steps of the fine-tuning (`training_steps`, as the
Trainer counts them), and per source the inputs one pass streams through the checkpoints; every
analysis reading a source shares its one pass, and each kept step of a trajectory is one more
checkpoint in the passes of the sources its analyses read.
"""

from __future__ import annotations

from transformers import PreTrainedTokenizerBase

from harness.analyses.base import INTERVENES, Analysis
from harness.inputs.sampling import sample
from harness.model.finetune import kept_step, stored_result, training_steps
from harness.model.loading import load_tokenizer
from harness.run.engine import sources_to_stream
from harness.run.pipeline import source_context
from harness.run.plan import RunPlan, skipped_line
from tasks.preview import task_lines


def source_passes(plan: RunPlan, analyses: list[type[Analysis]], tokenizer: PreTrainedTokenizerBase) -> list[str]:
    """Each source ``analyses`` stream, as ``task (64 inputs: cosine, patterns)``; an analysis that
    intervenes (the ablation) streams its source again under each of hundreds of masked variants."""
    context = source_context(plan, tokenizer)
    said = []
    for name, (source, group) in sources_to_stream(analyses, context).items():
        masked = [analysis.name for analysis in group if INTERVENES in analysis.needs]
        again = f"; {', '.join(masked)} again under hundreds of masked variants" if masked else ""
        said.append(f"{name} ({source.stream().num_items:,} inputs: {', '.join(a.name for a in group)}{again})")
    return said


def trained_steps(plan: RunPlan) -> tuple[int, int]:
    """The examples the fine-tuning trains on and its optimiser steps."""
    settings = plan.config.finetune
    examples = len(sample(plan.data.train, settings.max_train_examples, settings.seed))
    return examples, training_steps(settings, examples)


def trajectory_plan(plan: RunPlan, tokenizer: PreTrainedTokenizerBase) -> str | None:
    """What ``--trajectory`` adds, in one line: the steps it keeps, the analyses that measure them
    (``--trajectory-analyses``) and the passes each adds; None without a trajectory."""
    fractions = plan.config.finetune.trajectory
    if not fractions:
        return None
    steps = trained_steps(plan)[1]
    kept = sorted({kept_step(fraction, steps) for fraction in fractions})
    return (
        f"along fine-tuning (--trajectory): steps {', '.join(map(str, kept))} of {steps} kept, each measured by "
        f"{', '.join(analysis.name for analysis in plan.along)} (--trajectory-analyses chooses; all: every "
        f"analysis, much longer): {len(kept)} more checkpoints in the passes over "
        + "; ".join(source_passes(plan, plan.along, tokenizer))
    )


def dry_run_lines(plan: RunPlan) -> list[str]:
    """Everything `harness run --dry-run` says: the task's data, the run's key and folder, the
    checkpoint (cached or to train), the cost, and what was left out."""
    config = plan.config
    tokenizer = load_tokenizer(config.task.model)
    examples, steps = trained_steps(plan)
    cached = stored_result(config, plan.data)
    tuned = (
        f"cached at {cached.checkpoint_dir}: no training"
        if cached
        else f"{examples:,} examples x {config.finetune.epochs:g} epochs in batches of {config.finetune.batch_size}: "
        f"{steps:,} optimiser steps"
    )
    along = trajectory_plan(plan, tokenizer)
    skipped = skipped_line(plan.skipped)
    return [
        *task_lines(config.task.definition, config.task.data_dir, plan.data.task),
        f"run key {plan.key}: {plan.run_dir}",
        f"fine-tuning ({config.model_name}, fine-tune key {plan.finetune_key}): {tuned}",
        "analyses, one pass of each source through both checkpoints: "
        + "; ".join(source_passes(plan, plan.analyses, tokenizer)),
        *([along] if along else []),
        *([skipped] if skipped else []),
        "nothing was run (--dry-run): the same command without it runs this",
    ]
