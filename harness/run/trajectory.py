"""When does attention change? The analyses on the checkpoints kept part-way through fine-tuning.

A run with ``--trajectory`` keeps the model at a few fractions of its training steps
(`harness.model.finetune.TrajectoryCheckpoints`). Here those checkpoints are streamed with the
pre-trained and the fine-tuned model through one pass of each source (the engine's N
checkpoints), the analyses ``--trajectory-analyses`` chose (`harness.run.plan.along_analyses`:
by default the dev evaluation, cosine, patterns and the example maps) measuring each of them,
each compared with the pre-trained model and with the final one. A point of the trajectory is then said as a run is:
its checkpoint named "finetuned" beside the pre-trained model (`renamed_entry`), so each view
gives its own metrics at that step, the same names as the run's, and the dev score of that
checkpoint is among them. What a point keeps for the study's findings on *when* things change
are the per-unit sums those findings resample (`TIMED`): the dev predictions, each example's
cosine per layer, the pattern counts and the share of attention on [CLS] and [SEP].
"""

from __future__ import annotations

from collections.abc import Callable

from harness.analyses.base import INTERVENES, Analysis
from harness.analyses.examples import ExampleMaps
from harness.inputs.sources import SourceContext
from harness.model.finetune import FineTuneResult, KeptStep
from harness.model.loading import Checkpoint
from harness.results.checkpoints import FINETUNED, PRETRAINED
from harness.results.entries import AnyEntry
from harness.results.run_record import PointMaps, RunSummary, TimedUnits, Trajectory, TrajectoryPoint
from harness.results.store import ResultStore
from harness.run.engine import analyse, renamed_entry
from harness.views import VIEWS
from harness.views.base import current_entries, per_checkpoint_results
from harness.views.metrics import values
from harness.views.summary import summary_metrics, view_metrics
from harness.views.trajectory import TO_FINAL

PREFIX = "trajectory"  # MLflow's section of the metrics over the training steps


def step_name(step: int) -> str:
    """How a checkpoint part-way through fine-tuning is named in the stored results: ``step-12``."""
    return f"step-{step}"


def timed_units(entries: dict[str, AnyEntry]) -> TimedUnits:
    """What a point keeps for the findings on when things change, from its entries (said as a run's),
    by analysis: each view's part (`harness.views.base.View.timed_units`: the fine-tuned
    checkpoint's dev predictions, the per-unit sums of the cosine to the pre-trained maps, the
    pattern counts, the [CLS]/[SEP] shares), where the run has it."""
    kept = {name: VIEWS[name].timed_units(entry) for name, entry in entries.items()}
    return {name: units for name, units in kept.items() if units is not None}


def point(record: KeptStep, entries: dict[str, AnyEntry], name: str) -> TrajectoryPoint:
    """One point of the trajectory: the checkpoint ``name`` at ``record``'s step, its metrics as a
    run's beside the pre-trained model, its distance to the final model, `timed_units`, and the
    stored example maps at that step (the report's per-example view slides over them)."""
    as_run = {
        analysis: renamed_entry(entry, {PRETRAINED: PRETRAINED, name: FINETUNED}, [(PRETRAINED, FINETUNED)])
        for analysis, entry in entries.items()
    }
    to_final = {
        analysis: renamed_entry(entries[analysis], {name: PRETRAINED, FINETUNED: FINETUNED}, [(PRETRAINED, FINETUNED)])
        for analysis in entries
        if VIEWS[analysis].to_final
    }
    return {
        "step": record["step"],
        "fractions": record["fractions"],
        "examples_seen": record["examples_seen"],
        "metrics": summary_metrics({"analyses": as_run}),
        TO_FINAL: summary_metrics({"analyses": to_final}),
        "units": timed_units(as_run),
        **example_maps(entries, name),
    }


def example_maps(entries: dict[str, AnyEntry], name: str) -> PointMaps:
    """``{"example_maps": [...]}``: the checkpoint ``name``'s maps of each stored example (the
    `ExampleMaps` analysis's text, in its order), where the run has that analysis."""
    if ExampleMaps.name not in entries:
        return {}
    return {
        "example_maps": [
            example["maps"] for example in per_checkpoint_results(entries[ExampleMaps.name])[name]["examples"]
        ]
    }


def trajectory(
    analyses: list[type[Analysis]],
    pretrained: Checkpoint,
    finetuned: Checkpoint,
    along: list[Checkpoint],
    tuned: FineTuneResult,
    sources: SourceContext,
    store: ResultStore,
    on_source_done: Callable[[str, float], None] | None = None,
) -> Trajectory:
    """``analyses`` (the ablation aside: `harness.run.plan.along_analyses` chose them) on the
    checkpoints ``along`` the fine-tuning of ``tuned``, in one pass of each source with the
    pre-trained and fine-tuned models, the progress bars naming the steps; the points earliest
    first, and the training's total steps. ``tuned`` kept at least one checkpoint (the pipeline
    asks for a trajectory only then): its records say the total steps."""
    names = [checkpoint.name for checkpoint in along]
    pairs = [(PRETRAINED, FINETUNED), *((PRETRAINED, name) for name in names), *((name, FINETUNED) for name in names)]
    # An analysis that intervenes scores one trained head under many masks: the final model only.
    measured = [analysis for analysis in analyses if INTERVENES not in analysis.needs]
    steps = f", along fine-tuning at steps {', '.join(str(record['step']) for record in tuned.trajectory)}"
    entries = analyse(measured, [pretrained, *along, finetuned], pairs, sources, store, on_source_done, steps)
    return {
        "of_steps": tuned.trajectory[0]["of_steps"],
        "points": [point(record, entries, name) for record, name in zip(tuned.trajectory, names)],
    }


def trajectory_metrics(summary: RunSummary, headline: list[str]) -> list[tuple[str, float, int]]:
    """The run's trajectory as MLflow metrics with their training step, under ``trajectory/`` (MLflow's
    charts draw each over the steps): the ``headline`` metrics and the per-layer cosine to the
    pre-trained maps and CKA to the pre-trained hidden states at each point (each view's
    `harness.views.base.View.along_layers`) and, at the last step, the run's own values; the
    cosine to the final maps under ``trajectory/to_final/``."""
    trajectory = summary.get("trajectory")
    if not trajectory:
        return []
    records = [
        (view, metric) for view, entry in current_entries(summary).values() for metric in view_metrics(view, entry)
    ]
    final = values(metric for _, metric in records)
    layers = [metric.name for view, metric in records if metric.value is not None and view.along_layers(metric)]
    wanted = [*headline, *(name for name in layers if name not in headline)]
    logged = [
        (f"{PREFIX}/{name}", value, point["step"])
        for point in trajectory["points"]
        for name, value in point["metrics"].items()
        if name in wanted
    ]
    logged += [
        (f"{PREFIX}/{TO_FINAL}/{name}", value, point["step"])
        for point in trajectory["points"]
        for name, value in point[TO_FINAL].items()
        if name in layers
    ]
    return logged + [(f"{PREFIX}/{name}", final[name], trajectory["of_steps"]) for name in wanted if name in final]
