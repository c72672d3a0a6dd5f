"""A study's record, study.json, typed as `harness.study.runner` writes it.

The writer builds a `StudyRecord`, so mypy checks every key it writes against this shape, and
every reader (the study's tables and figures, the report, the docs' tables) reads the same
declared keys. `decoded_study` is where the JSON read from disk becomes that type, once.

Keys a study written before they existed lacks (the docs' stored studies) are ``NotRequired``,
and their readers ask with ``.get``.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict, TypeVar, cast

from harness.results.store import JsonObject


class Spread(TypedDict):
    """One quantity over seeds (`harness.views.seeds.spread`): mean, sample standard deviation
    (0 for one seed), range, how many seeds and their values."""

    mean: float
    std: float
    min: float
    max: float
    n: int
    values: list[float]


class Elementwise(TypedDict):
    """Same-shaped series over seeds, element by element (`harness.views.seeds.elementwise`): mean and
    sample standard deviation, and how many seeds."""

    mean: Any  # the series' own shape: nested lists per layer (and head), or one float
    std: Any  # as ``mean``
    n: int


class RunRecord(TypedDict):
    """One (task, seed) run of the study: its key and its folder's name under ``runs/``."""

    task: str
    seed: int
    key: str
    folder: str


class Learning(TypedDict):
    """A task's learning check: per seed (by its string) whether its fine-tuned model is clearly
    above the majority class on dev, how many seeds are, of how many, and whether all are."""

    seeds: dict[str, bool]
    learned: int
    of: int
    every_seed: bool


class Effect(TypedDict):
    """A task's effect over its seeds: the mean of their values, its interval, and how it was made."""

    value: float
    interval: list[float] | None
    seeds: int
    how: str


class SeedRecord(TypedDict):
    """One seed's part of a finding (`harness.study.aggregate.seed_record`): the seed, its state, the
    keys of its evidence a reader reads, where the evidence has them, and the evidence in words; a
    finding on a pair of seeds names both."""

    seed: int
    state: str
    # each as the evidence gave it (`harness.views.evidence.Change` or `Verdict`), where it has it
    value: NotRequired[float]
    interval: NotRequired[list[float]]
    support: NotRequired[float]
    statistic: NotRequired[str]
    unit: NotRequired[str]
    n: NotRequired[int]
    direction: NotRequired[str]
    evidence: str
    seeds: NotRequired[list[int]]


class TaskCell(TypedDict):
    """A task's part of a finding: on how many seeds it holds (its state ``holds_as``), of how many,
    each state's and each direction's count, the effect and each seed's record."""

    holds: int
    holds_as: str
    seeds: int
    states: dict[str, int]
    directions: dict[str, int]
    effect: Effect | None
    per_seed: list[SeedRecord]


class PaperBeside(TypedDict):
    """What the paper beside a finding found, and whether the study agrees."""

    source: str
    says: str
    verdict: str
    detail: str


class Finding(TypedDict):
    """One finding: the claim, its task cells, on how many tasks it holds on every seed, of how
    many, its sentence; why it was not judged or which tasks do not define it, and the paper
    beside it, where those apply."""

    claim: str
    per_task: dict[str, TaskCell]
    tasks_every_seed: int
    tasks: int
    text: str
    holds_as: NotRequired[str]
    not_judged: NotRequired[str]
    undefined_on: NotRequired[list[str]]
    paper: NotRequired[PaperBeside]


class TaskCore(TypedDict):
    """What every task's aggregate holds, whatever its views: its seeds and their run keys, every
    metric's spread over the seeds that have it, the headline metrics' names, the main dev metric
    and the model's shape."""

    seeds: list[int]
    run_keys: dict[str, str]
    metrics: dict[str, Spread]
    headline: list[str]
    main_metric: str
    num_layers: int
    num_heads: int


class StudySeries(TypedDict):
    """One quantity along fine-tuning over a task's seeds, at each fraction of training: mean and
    sample standard deviation (None where no seed has it), and how many seeds."""

    mean: list[float | None]
    std: list[float | None]
    n: int


class StudyTrajectory(TypedDict):
    """A task's series along fine-tuning over its seeds (`harness.views.trajectory.study_series`): the
    fractions of training, and each quantity's `StudySeries` by its key (``last_layer_cosine``...)."""

    fractions: list[float]
    series: dict[str, StudySeries]


# The comparison of a task's seeds' fine-tuned models with each other, or of one pair of them
# (`harness.study.between_seeds`): JSON, its parts beside the cosine's keyed by the analysis's name,
# which a TypedDict cannot key by.
BetweenSeeds = dict[str, Any]

# A task's aggregate: `TaskCore`'s keys and beside them each view's own `View.across_seeds` keys, the
# trajectory's and the between-seeds comparison's, which this layer cannot name (mypy has no TypedDict
# with extra keys): left open. A view reads its own keys back through its declared type (`view_part`).
TaskAggregate = dict[str, Any]

Part = TypeVar("Part")  # what one view's `View.across_seeds` declares it returns


def view_part(entry: TaskAggregate, declared: type[Part]) -> Part:
    """A task's aggregate as the type one view's `View.across_seeds` declares it returns
    (``declared``: its TypedDict, or ``dict[str, ...]`` where its key is the view's own name), so
    that mypy checks every key its readers read. Cast, not checked: the study merged that view's
    return value, of the same declared type, into the aggregate unchanged (`harness.study.aggregate`),
    and study.json is read back as written (`decoded_study`). Read only the view's own keys through
    it, and ask whether they are there first: a task on which the view did not run, or failed, has none."""
    return cast(Part, entry)


class StudyFindings(TypedDict):
    """What the study says across its runs (`harness.study.runner.across_runs`)."""

    tasks: dict[str, TaskAggregate]
    special_tokens: NotRequired[dict[str, str] | None]
    learning: dict[str, Learning]
    findings_from: str
    judged_tasks: list[str]
    kept_out_of_findings: NotRequired[dict[str, str]]
    seconds: NotRequired[dict[str, dict[str, Spread]]]
    findings: dict[str, Finding]


class StudyDescription(TypedDict):
    """What the study is, whatever its runs hold (`harness.study.runner.described_study`): model,
    tasks and seeds asked, recipes, what was skipped or failed, its runs."""

    schema: int
    name: str
    key: str
    model: str
    tasks_asked: list[str]
    seeds_asked: int
    recipes: dict[str, dict[str, Any]]  # each task's fine-tuning settings, a dataclass's fields as JSON
    skipped: dict[str, str]
    failed: dict[str, str]
    analyses_skipped: NotRequired[dict[str, str]]
    runs: list[RunRecord]


class StudyRecord(StudyDescription, StudyFindings):
    """study.json: what the study is, what it says across its runs, and what could not be aggregated or drawn."""

    aggregation_failed: dict[str, str]


def decoded_study(stored: JsonObject) -> StudyRecord:
    """study.json as read from disk, typed: the writer is what mypy checks, so the file is taken at its word."""
    return cast(StudyRecord, stored)
