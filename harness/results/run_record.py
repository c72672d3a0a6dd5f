"""A run's summary.json, typed as `harness.run.pipeline` writes it.

The writer builds a `RunSummary` (its ``run`` section a `RunSection`), so mypy checks every key it
writes against this shape, and every reader (the views' figures and tables, the report, the
frames, the study) reads the same declared keys. `decoded_summary` is where the JSON read from
disk becomes that type, once (`harness.results.summary.whole_file`).

Keys a run written before they existed lacks are ``NotRequired``, and their readers ask with ``.get``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NotRequired, TypedDict, cast

from harness.results.entries import AnyEntry
from harness.results.store import CheckpointIdentity, JsonObject


class RunSection(TypedDict):
    """The ``run`` section of summary.json (`harness.run.pipeline.run_description`): what was
    fine-tuned and compared, on how many examples, with which recipe and precision, each
    checkpoint's identity, the model's provenance and special tokens, and the analyses skipped."""

    task: str
    model: str
    provenance: NotRequired[dict[str, str]]
    seed: int
    key: str
    finetune_key: NotRequired[str]
    num_layers: int
    num_heads: int
    eval_split: str
    num_eval_examples: int
    train_examples: NotRequired[int]
    recipe: dict[str, Any]  # the fine-tuning recipe, a dataclass's fields as JSON
    precision: NotRequired[str]
    checkpoints: NotRequired[dict[str, CheckpointIdentity]]
    pairs: list[list[str]]
    special_tokens: NotRequired[dict[str, str]]
    skipped: NotRequired[dict[str, str]]


# What a point keeps for the findings on when things change, by analysis: each view's own per-unit
# sums (`harness.views.base.View.timed_units`), JSON of the shape that view gives them.
TimedUnits = dict[str, Any]


class PointMaps(TypedDict, total=False):
    """A point's example maps, where the run has the example maps analysis."""

    example_maps: list[str]  # each stored example's maps at the point's step, in the analysis's order


class TrajectoryPoint(PointMaps):
    """One checkpoint kept along fine-tuning (`harness.run.trajectory.point`): its step, the fractions
    of training it stands for, the examples seen by then, its metrics as a run's beside the pre-trained
    model, those of its comparison with the fine-tuned model (``to_final``) and each view's per-unit sums."""

    step: int
    fractions: list[float]
    examples_seen: int
    metrics: dict[str, float]
    to_final: dict[str, float]
    units: TimedUnits


class Trajectory(TypedDict):
    """What a run with ``--trajectory`` keeps along fine-tuning (`harness.run.trajectory.trajectory`):
    the training's total steps and a point per kept checkpoint, earliest first."""

    of_steps: int
    points: list[TrajectoryPoint]


class Analysed(TypedDict):
    """What every reader of a run's analyses reads: its entries by analysis (a whole summary, or the
    entries of one point of its trajectory said as a run's)."""

    # each analysis's entry, its result Any until the view of its analysis (`harness.views.base.current_entries`:
    # of the view's version) reads it as the type it declares
    analyses: Mapping[str, AnyEntry]


class RunSummary(Analysed):
    """summary.json: its schema, the run's description, each analysis's entry and, with
    ``--trajectory``, the points along fine-tuning."""

    schema: int
    run: RunSection
    trajectory: NotRequired[Trajectory]


def decoded_summary(stored: JsonObject) -> RunSummary:
    """summary.json as read from disk, typed: the writer is what mypy checks, so the file is taken at its word."""
    return cast(RunSummary, stored)
