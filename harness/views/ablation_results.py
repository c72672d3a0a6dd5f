"""What a stored ablation holds: the disabling modes and scopes, the pruning baselines, each
checkpoint's result as typed when written and read (`AblationResult`, its families, pruning and
importance; `ImportanceAgreement` per pair), and what a view reads of an entry (the fine-tuned
checkpoint's result, the pairs' cosine beside it).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, Literal, NotRequired, TypedDict, TypeVar

import numpy as np

from harness.results.checkpoints import FINETUNED
from harness.results.entries import PerCheckpoint
from harness.results.store import JsonObject
from harness.views.base import Entry, Members, pair_name, per_checkpoint_results
from harness.views.cosine import CosineView
from harness.views.evidence import EffectVerdict, Packed

MODES = ("uniform", "zero")
# what one disabling variant switches off: a single head, or a whole layer
SCOPES: tuple[Literal["heads"], Literal["layers"]] = ("heads", "layers")
RANDOM = "random"  # the seeded random pruning orders are named so and numbered; they are ours (Michel et al. ran none)
RANKED = ("importance", "oracle")  # the pruning orders ranked on the heads; every other one is a random one
BASELINES = {"random": "random orders (ours)", "oracle": "oracle order"}  # what the importance order is set against
# The keys of the Spearman correlations stored: a trained checkpoint's importance against each mode's single-head
# changes, by mode; against the cosine (the entry's related part), the importance's and each mode's changes.
IMPORTANCE_VS_DELTA = {mode: f"importance_vs_{mode}_delta" for mode in MODES}
VS_COSINE = {"importance": "importance_vs_cosine", **{mode: f"{mode}_delta_vs_cosine" for mode in MODES}}


Scope = Literal["heads", "layers"]


def is_random(order: str) -> bool:
    """Whether the pruning order named ``order`` is one of the seeded random ones (not one of `RANKED`)."""
    return order not in RANKED


def families(result: AblationResult) -> Iterator[tuple[str, Scope, Family]]:
    """Each family of tests of a trained checkpoint's result, mode by mode: (mode, scope, its grids)."""
    for mode in MODES:
        for scope in SCOPES:
            yield mode, scope, result[scope][mode]


def family_grids(family: Family) -> dict[str, np.ndarray]:
    """A family's per-member values as float arrays (layers x heads, or one per layer), by key."""
    keyed = (
        ("delta", family["delta"]),
        ("low", family["low"]),
        ("high", family["high"]),
        ("low_simultaneous", family["low_simultaneous"]),
        ("high_simultaneous", family["high_simultaneous"]),
        ("p", family["p"]),
        ("p_holm", family["p_holm"]),
    )
    return {key: np.asarray(values, dtype=np.float64) for key, values in keyed}


def versus(pruning: Areas, baseline: str) -> EffectVerdict | None:
    """The importance order's area minus ``baseline``'s (one of `BASELINES`), where the pruning has it."""
    if baseline == "random":
        return pruning.get("importance_vs_random")
    if baseline == "oracle":
        return pruning.get("importance_vs_oracle")
    raise ValueError(f"no pruning baseline {baseline!r}: one of {', '.join(BASELINES)}")


# each pair's part as `related` keeps it: open JSON
def related_cosine(entry: AblationEntry) -> list[tuple[tuple[str, str], JsonObject]]:
    """The entry's declared pairs that its ``related`` part has against the cosine entry (those
    whose second checkpoint is trained), each with what it holds there."""
    cosine = (entry.get("related") or {}).get(CosineView.name, {})
    return [
        ((before, after), cosine[pair_name((before, after))])
        for before, after in entry["pairs"]
        if pair_name((before, after)) in cosine
    ]


def fine_tuned_result(entry: AblationEntry) -> AblationResult | None:
    """The fine-tuned checkpoint's ablation result, or None where it has no trained head."""
    result = per_checkpoint_results(entry).get(FINETUNED)
    return result if result and result["trained"] else None


class Importance(TypedDict):
    """A checkpoint's head importance (Michel et al.), raw and normalised per layer, and the loss it
    is of; or, without one, why (``skipped_because``)."""

    loss: str | None
    skipped_because: NotRequired[str]
    raw: NotRequired[list[list[float]]]
    normalised: NotRequired[list[list[float]]]


Bounds = list[list[float | None]] | list[float | None]  # as `Members`, None where a member has no bound
Grid = TypeVar("Grid", bound=Members)  # a family's shape: layers x heads (every head) or per layer


class Family(TypedDict, Generic[Grid]):
    """One family of tests, every head or every layer of one mode: the changes of the score, their
    95% interval bounds (each member's own), their simultaneous interval bounds at the level
    (``simultaneous_level``, Bonferroni's over the family) of the Holm-adjusted tests, each member's
    upper 95% bound on its gain (``gain_bound``: exact for accuracy; None where it changed no
    prediction of another metric), p-values and Holm-adjusted p-values (layers x heads, or per
    layer), and how many are significant after Holm."""

    delta: Grid
    low: Grid
    high: Grid
    low_simultaneous: Grid
    high_simultaneous: Grid
    simultaneous_level: float
    gain_bound: Bounds
    p: Grid
    p_holm: Grid
    significant: int


class Areas(TypedDict):
    """The area under each order's cross-fitted pruning curve, and, with an importance order, its
    area minus the random orders' and minus the oracle's (`Verdict`)."""

    areas: dict[str, float]
    importance_vs_random: NotRequired[EffectVerdict]
    importance_vs_oracle: NotRequired[EffectVerdict]


class Pruning(Areas):
    """The cross-fitted pruning: the fractions and numbers of heads pruned, the two halves of the
    examples (their guids), each order's curve and the random orders' mean and spread, the step
    at which each first drops more than a point, each half's order of heads, and how many variants."""

    fractions: list[float]
    heads_pruned: list[int]
    halves: list[list[str]]
    curves: dict[str, list[float]]
    random_mean: list[float]
    random_std: list[float]
    steps_within_one_point: dict[str, int]
    orders: dict[str, list[list[int]]]
    variants: int


class AblationUnits(TypedDict):
    """Every prediction a trained checkpoint's statistics are computed from (`harness.views.evidence.pack`):
    the labels and the intact predictions (examples,), each single variant's (variants, examples;
    heads layer-major then layers, per mode, as `harness.analyses.ablation_masks.single_variants`
    orders them), and each pruning order's cross-fitted ones (steps, examples)."""

    labels: Packed
    intact: Packed
    single: Packed
    held_out: dict[str, Packed]


class AblationResult(TypedDict):
    """A checkpoint's stored ablation. Every checkpoint: whether its head is ``trained``, its
    importance. An untrained head: a ``note``. A trained one: the metric, the examples scored,
    the intact score, the families by scope and mode (``heads``, ``layers``), the pruning, the
    importance's Spearman correlations with each mode's single-head changes, how many variants."""

    trained: bool
    importance: Importance
    note: NotRequired[str]
    metric: NotRequired[str]
    examples: NotRequired[int]
    intact: NotRequired[float]
    heads: NotRequired[dict[str, Family[list[list[float]]]]]
    layers: NotRequired[dict[str, Family[list[float]]]]
    pruning: NotRequired[Pruning]
    correlations: NotRequired[dict[str, float | None]]
    variants: NotRequired[int]
    units: NotRequired[AblationUnits]


class ImportanceAgreement(TypedDict):
    """A pair's Spearman correlation between the two checkpoints' importance (None where constant)."""

    importance_spearman: float | None


AblationEntry = Entry[PerCheckpoint[AblationResult, ImportanceAgreement]]  # the ablation's summary entry
