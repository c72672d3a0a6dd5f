"""Whether a change or a claim is clear of its sampling error, by resampling what the analysis sampled.

Every analysis measures on a sample (dev examples, treebank sentences, coreference documents),
so a difference between two checkpoints measured on the same sample counts only when it is
larger than resampling that sample makes it. An analysis keeps, per checkpoint (per pair for
a joint one), the per-unit sums its findings read: `UnitSums`, numerators ``(units, K)`` and
denominators ``(units,)`` or ``(units, K)``, K being the heads, layers or classes the finding
reduces over. A statistic is a ratio of sums over the units (an accuracy, a share, a mean),
reduced over K (`REDUCE`: their mean, or K values kept).

`paired_change` draws `RESAMPLES` bootstrap resamples of the units (the same for both
checkpoints: the change is paired) and gives the change with its 95% percentile interval and
its direction: ``rises`` or ``falls`` only when the interval excludes 0, else ``no clear
change``. A best of K (the best head of 72) is never scored on the units it was chosen on:
the maximum of K noisy ratios is biased upward, and re-choosing it in every resample carries
the choice's variability but not that bias. `best_of_many_change` cross-fits it instead: the
units are split in two halves (seeded), each checkpoint's best member is chosen on one half
and scored on the other, both ways, averaged; its interval resamples each half on its own
(a stratified bootstrap), so the choice is redone in every resample and never sees the units
it is scored on. `resampled_verdict` gives a yes/no statement the share of resamples it holds
on: ``holds`` at 97.5% or more, ``fails`` at 2.5% or less (the two-sided 95% level), else
``unclear``, with the effect it reads and its interval where it has one. Both are plain
numpy: the views and the study read them without torch, and the analyses compute them when
they compare checkpoints; everything they read is stored (`UnitSums.stored`), so a reader
recomputes every interval from the stored file alone.
"""

from __future__ import annotations

import base64
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, NotRequired, TypedDict, final, overload

# for the type checker alone, as in harness.results.entries; the store reads it as `harness.results.shapes.ReadOnly`
if TYPE_CHECKING:
    from typing_extensions import ReadOnly

import numpy as np
from numpy.typing import ArrayLike

from harness.results.study_record import Effect

RESAMPLES = 1000
SEED = 0  # fixed: the same stored units give the same interval every time they are read
LEVEL = 0.95
RISES, FALLS, NO_CLEAR_CHANGE = "rises", "falls", "no clear change"
HOLDS, FAILS, UNCLEAR = "holds", "fails", "unclear"
REDUCE: dict[str | None, Callable[[np.ndarray], np.ndarray]] = {
    "mean": lambda values: values.mean(axis=-1),
    None: lambda values: values,  # K values: one statistic each (per layer, per class)
}
CROSS_FITTED = "cross-fitted: the best chosen on one half of the {n} {unit}, scored on the other, both ways, averaged"
Weights = tuple[np.ndarray, np.ndarray]  # unit weights (rows, units) of the two halves a best is cross-fitted on


@final  # a reader's `in` narrows the kind of `Evidence` it holds
class Change(TypedDict):
    """A change and its 95% interval over ``n`` resampled ``unit`` and its direction
    (`paired_change`); a cross-fitted best's (`best_of_many_change`) also keeps each checkpoint's
    level, the members chosen on each half and how it was measured, or why it could not be."""

    value: float
    interval: list[float]
    unit: str
    n: int
    direction: str
    statistic: NotRequired[str]  # where it is not the plain ratio (a share corrected for the classifier's errors)
    levels: NotRequired[list[float]]
    chosen: NotRequired[list[list[str]]]
    protocol: NotRequired[str]
    note: NotRequired[str]


@final  # a reader's `in` narrows the kind of `Evidence` it holds
class Changes(TypedDict):
    """A change per K (per layer, per class: `paired_change` with ``reduce=None``): a value, an
    interval and a direction each."""

    value: list[float]
    interval: list[list[float]]
    unit: str
    n: int
    direction: list[str]
    statistic: NotRequired[str]


class Verdict(TypedDict):  # not final: an analysis may keep more with its verdict (a subclass)
    """A yes/no statement's verdict on ``n`` resampled ``unit`` (`resampled_verdict`, `best_above`,
    `interval_verdict`): whether it holds on the whole sample and on what share of resamples,
    where it was resampled, and the effect it reads with its interval, where it has one."""

    verdict: str
    unit: str
    n: int
    statistic: str
    holds: NotRequired[bool]
    support: NotRequired[float]
    # read-only: a verdict that always has them says so (`IntervalVerdict`, `EffectVerdict`) and is still a Verdict
    value: ReadOnly[NotRequired[float]]
    interval: ReadOnly[NotRequired[list[float]]]


class IntervalVerdict(Verdict):
    """A verdict judged by, or given with, a 95% interval (`interval_verdict`): it always has ``interval``."""

    interval: ReadOnly[list[float]]


class EffectVerdict(IntervalVerdict):
    """A verdict with the effect it reads and its interval (`best_above`, and the analyses that set the
    value beside an `interval_verdict`): it always has ``value`` and ``interval``."""

    value: ReadOnly[float]


Evidence = Change | Changes | Verdict  # what the functions below return, stored with the results
Single = Change | Verdict  # evidence of one statistic (not per K): what a finding's seed record reads


class Packed(TypedDict):
    """A float array as a stored result keeps it (`pack`): its shape and float32 bytes in base64,
    zlib-compressed (``float32_zlib``) or, as older results hold them, not (``float32``)."""

    shape: list[int]
    float32: NotRequired[str]
    float32_zlib: NotRequired[str]


class StoredUnits(TypedDict):
    """`UnitSums` as a stored result keeps them (`UnitSums.stored`)."""

    unit: str
    numerators: Packed
    denominators: Packed


def pack(array: np.ndarray) -> Packed:
    """A float array as JSON: its shape and its float32 bytes, zlib-compressed, in base64 (per-unit
    sums are mostly small counts: a few percent of a list of numbers, so the snapshots the docs
    keep can hold them and every interval they show can be recomputed)."""
    values = np.ascontiguousarray(array, dtype="<f4")
    compressed = zlib.compress(values.tobytes(), 6)
    return {"shape": list(values.shape), "float32_zlib": base64.b64encode(compressed).decode("ascii")}


def unpack(packed: Packed) -> np.ndarray:
    """`pack`'s JSON back to the array (float64); an uncompressed one as older results hold it too."""
    if "float32_zlib" in packed:
        raw_bytes = zlib.decompress(base64.b64decode(packed["float32_zlib"]))
    else:
        raw_bytes = base64.b64decode(packed["float32"])
    return np.frombuffer(raw_bytes, dtype="<f4").reshape(packed["shape"]).astype(np.float64)


@dataclass(frozen=True)
class UnitSums:
    """Per-unit sums of one statistic of one checkpoint: ``numerators`` (units, K) and
    ``denominators`` (units,) or (units, K); ``unit`` names what was sampled ("dev examples")."""

    numerators: np.ndarray
    denominators: np.ndarray
    unit: str

    @property
    def count(self) -> int:
        """How many units were sampled."""
        return len(self.numerators)

    def ratios(self, weights: np.ndarray) -> np.ndarray:
        """The ratio of weighted sums for each row of unit ``weights`` (R, units): (R, K); a
        statistic with no denominator in a resample (no unit has any) is 0 there."""
        numerators = weights @ self.numerators
        denominators = weights @ self.denominators
        if denominators.ndim == 1:
            denominators = denominators[:, None]
        return np.divide(numerators, denominators, out=np.zeros_like(numerators), where=denominators > 0)

    def stored(self) -> StoredUnits:
        """As a stored result keeps it."""
        return {"unit": self.unit, "numerators": pack(self.numerators), "denominators": pack(self.denominators)}

    @classmethod
    def read(cls, stored: StoredUnits) -> UnitSums:
        """`stored`'s dict back."""
        return cls(unpack(stored["numerators"]), unpack(stored["denominators"]), stored["unit"])

    @classmethod
    def of(cls, numerators: ArrayLike, denominators: ArrayLike, unit: str) -> UnitSums:
        """From lists or arrays: numerators (units,) or (units, K), denominators (units,) or (units, K)."""
        array = np.asarray(numerators, dtype=np.float64)
        return cls(
            array[:, None] if array.ndim == 1 else array,
            np.asarray(denominators, dtype=np.float64),
            unit,
        )


def resample_weights(count: int, resamples: int = RESAMPLES, seed: int = SEED) -> np.ndarray:
    """How often each of ``count`` units is drawn in each of ``resamples`` bootstrap resamples: (R, count)."""
    if count == 0:
        return np.zeros((resamples, 0))
    return np.random.default_rng(seed).multinomial(count, np.full(count, 1.0 / count), size=resamples).astype(float)


def direction(interval: tuple[float, float] | list[float]) -> str:
    """``rises`` or ``falls`` when the interval excludes 0, else ``no clear change``."""
    low, high = interval
    return RISES if low > 0 else FALLS if high < 0 else NO_CLEAR_CHANGE


def interval_of(samples: np.ndarray) -> list[float]:
    """The `LEVEL` percentile interval of bootstrap ``samples`` along their first axis."""
    tail = 100 * (1 - LEVEL) / 2
    return np.percentile(samples, [tail, 100 - tail], axis=0).tolist()


@overload
def paired_change(before: UnitSums, after: UnitSums, reduce: Literal["mean"] = "mean") -> Change: ...
@overload
def paired_change(before: UnitSums, after: UnitSums, reduce: None) -> Changes: ...
def paired_change(before: UnitSums, after: UnitSums, reduce: Literal["mean"] | None = "mean") -> Change | Changes:
    """``after``'s statistic minus ``before``'s, measured on the same units, with its paired
    bootstrap interval and direction (one of each per K when ``reduce`` is None)."""
    if before.count != after.count:
        raise ValueError(f"a paired change needs the same units: {before.count} {before.unit} against {after.count}")
    everything = np.ones((1, before.count))
    weights = resample_weights(before.count)
    statistic = REDUCE[reduce]
    observed = statistic(after.ratios(everything))[0] - statistic(before.ratios(everything))[0]
    samples = statistic(after.ratios(weights)) - statistic(before.ratios(weights))
    if reduce is None:
        intervals = np.asarray(interval_of(samples)).T
        return {
            "value": observed.tolist(),
            "interval": intervals.tolist(),
            "unit": before.unit,
            "n": before.count,
            "direction": [direction(pair) for pair in intervals],
        }
    interval = interval_of(samples)
    return {
        "value": float(observed),
        "interval": interval,
        "unit": before.unit,
        "n": before.count,
        "direction": direction(interval),
    }


def halves(count: int, seed: int = SEED) -> tuple[np.ndarray, np.ndarray]:
    """A seeded random split of ``count`` units into two halves (the first the smaller by one
    where ``count`` is odd), each sorted."""
    order = np.random.default_rng(seed).permutation(count)
    return np.sort(order[: count // 2]), np.sort(order[count // 2 :])


def half_weights(count: int, resamples: int = RESAMPLES, seed: int = SEED) -> tuple[Weights, Weights]:
    """The unit weights of the two halves a best is cross-fitted on: each half's units once
    (one row each), and `RESAMPLES` bootstrap resamples drawn within each half on its own (a
    stratified bootstrap: a resample never moves a unit from the half it is scored on to the
    half the best is chosen on)."""
    first, second = halves(count, seed)
    observed = []
    resampled = []
    generator = np.random.default_rng([seed, count])
    for half in (first, second):
        once = np.zeros((1, count))
        once[0, half] = 1.0
        drawn = np.zeros((resamples, count))
        if len(half):
            drawn[:, half] = generator.multinomial(len(half), np.full(len(half), 1.0 / len(half)), size=resamples)
        observed.append(once)
        resampled.append(drawn)
    return (observed[0], observed[1]), (resampled[0], resampled[1])


def head_names(layers: int, heads: int) -> list[str]:
    """``["1-1", "1-2", ...]``: the layer-head names of a flattened layers x heads grid, 1-indexed."""
    return [f"{layer + 1}-{head + 1}" for layer in range(layers) for head in range(heads)]


def chosen_members(units: UnitSums, weights: np.ndarray) -> np.ndarray:
    """Per row of ``weights``, the member (of K) with the largest ratio: the first on ties."""
    return units.ratios(weights).argmax(axis=1)


def held_out_best(units: UnitSums, halves_weights: Weights) -> np.ndarray:
    """The cross-fitted best of K (R,): the member chosen on each half scored on the other, the
    two scores averaged."""
    first, second = halves_weights
    rows = np.arange(len(first))
    on_second = units.ratios(second)[rows, chosen_members(units, first)]
    on_first = units.ratios(first)[rows, chosen_members(units, second)]
    return (on_second + on_first) / 2


def best_of_many_change(before: UnitSums, after: UnitSums, members: list[str]) -> Change:
    """The change of the best of K members (the best head) from ``before`` to ``after``,
    measured on the same units and cross-fitted (`held_out_best`), with its 95% interval over
    stratified bootstrap resamples of the two halves and its direction. Also kept: each
    checkpoint's cross-fitted best (``levels``) and the members chosen on each half
    (``chosen``: per checkpoint, the first half's then the second's, named by ``members``, the
    K members' names: ``"5-4"``), so a reader sees which heads the numbers are of. Fewer than
    two units cannot be split: the change is then reported as no clear change, with a note."""
    if before.count != after.count:
        raise ValueError(f"a paired change needs the same units: {before.count} {before.unit} against {after.count}")
    protocol = CROSS_FITTED.format(n=before.count, unit=before.unit)
    if before.count < 2:
        return {
            "value": 0.0,
            "interval": [0.0, 0.0],
            "unit": before.unit,
            "n": before.count,
            "direction": NO_CLEAR_CHANGE,
            "protocol": protocol,
            "note": "fewer than two units: a best of many cannot be chosen on other units than it is scored on",
        }
    observed, resampled = half_weights(before.count)
    levels = [float(held_out_best(units, observed)[0]) for units in (before, after)]
    samples = held_out_best(after, resampled) - held_out_best(before, resampled)
    interval = interval_of(samples)
    return {
        "value": levels[1] - levels[0],
        "interval": interval,
        "unit": before.unit,
        "n": before.count,
        "direction": direction(interval),
        "levels": levels,
        "chosen": [[members[int(chosen_members(units, half)[0])] for half in observed] for units in (before, after)],
        "protocol": protocol,
    }


def best_above(units: UnitSums, threshold: float, statistic: str) -> EffectVerdict:
    """Whether the best of K members (a layer's share) is above ``threshold``, the best
    cross-fitted (`held_out_best`: chosen on one half of the units, scored on the other, both
    ways): ``holds`` when it is above on 97.5% of stratified resamples of the halves or more,
    ``fails`` at 2.5% or less, else ``unclear``; its value minus ``threshold`` is the effect,
    with its interval."""
    observed, resampled = half_weights(units.count)
    value = float(held_out_best(units, observed)[0]) if units.count >= 2 else 0.0
    samples = held_out_best(units, resampled) if units.count >= 2 else np.zeros(RESAMPLES)
    support = float(np.mean(samples > threshold)) if units.count >= 2 else 0.0
    tail = (1 - LEVEL) / 2
    return {
        "holds": value > threshold,
        "support": support,
        "verdict": HOLDS if support >= 1 - tail else FAILS if support <= tail else UNCLEAR,
        "unit": units.unit,
        "n": units.count,
        "statistic": f"{statistic}, {CROSS_FITTED.format(n=units.count, unit=units.unit)}, minus {threshold:g}",
        "value": value - threshold,
        "interval": [bound - threshold for bound in interval_of(samples)],
    }


def resampled_verdict(
    holds: Callable[[np.ndarray], np.ndarray],
    count: int,
    unit: str,
    statistic: str,
    effect: Callable[[np.ndarray], np.ndarray] | None = None,
) -> Verdict:
    """Whether a yes/no statement holds on the whole sample of ``count`` units and on what share
    of bootstrap resamples: ``holds(weights)`` takes unit weights (R, count) and says, per row,
    whether the statement holds on that resample. ``statistic`` says what was judged; ``effect``
    (weights to (R,) values), where given, is the size the statement reads (a margin, a share),
    kept with its 95% interval over the same resamples."""
    weights = resample_weights(count)
    observed = bool(holds(np.ones((1, count)))[0])
    support = float(np.mean(holds(weights))) if count else 0.0
    tail = (1 - LEVEL) / 2
    verdict = HOLDS if support >= 1 - tail else FAILS if support <= tail else UNCLEAR
    evidence: Verdict = {
        "holds": observed,
        "support": support,
        "verdict": verdict,
        "unit": unit,
        "n": count,
        "statistic": statistic,
    }
    if effect is None or not count:  # no effect, or no units to take it on: no value nor interval
        return evidence
    return {**evidence, "value": float(effect(np.ones((1, count)))[0]), "interval": interval_of(effect(weights))}


def interval_verdict(
    interval: tuple[float, float] | list[float], unit: str, count: int, statistic: str
) -> IntervalVerdict:
    """A statement "this quantity is above 0" judged by its 95% interval: ``holds`` when the
    interval lies above 0, ``fails`` below, ``unclear`` when it holds 0."""
    verdict = {RISES: HOLDS, FALLS: FAILS, NO_CLEAR_CHANGE: UNCLEAR}[direction(interval)]
    return {"interval": list(interval), "verdict": verdict, "unit": unit, "n": count, "statistic": statistic}


def best_of_many_words(evidence: Change, scale: float = 100.0) -> str:
    """How a cross-fitted best's change was measured and which members it is of (`best_of_many_change`),
    its levels times ``scale`` (100: fractions as points)."""
    if "chosen" not in evidence:
        return str(evidence.get("note", evidence["protocol"]))
    before, after = evidence["levels"]
    chosen = " and ".join("/".join(halves) for halves in evidence["chosen"])
    return (
        f"{evidence['protocol']} ({scale * before:.1f} to {scale * after:.1f}; chosen: {chosen}), "
        f"95% interval over stratified resamples of the halves"
    )


def effect_text(found: Effect | None) -> str:
    """A task's effect over its seeds (`harness.study.aggregate.effect`): ``+0.031 [+0.012, +0.050] (3
    seeds)``, or why there is no size."""
    if found is None:
        return "no size (a yes/no statement)"
    interval = found["interval"]
    bounds = f" [{interval[0]:+.3g}, {interval[1]:+.3g}]" if interval else ""
    return f"{found['value']:+.3g}{bounds} ({found['seeds']} seed{'s' if found['seeds'] > 1 else ''})"


def described(evidence: Single) -> str:
    """The evidence in a few words: ``+0.031 [+0.012, +0.050] over 757 mentions`` or
    ``margin: +0.020 [+0.004, +0.037], holds on 98% of resamples of 1000 dev examples``."""
    low, high = evidence.get("interval") or (None, None)
    size = f"{evidence['value']:+.3f} [{low:+.3f}, {high:+.3f}]" if "value" in evidence and low is not None else ""
    if "support" in evidence:
        return (
            f"{evidence['statistic']}: {size + ', ' if size else ''}holds on {100 * evidence['support']:.0f}% of "
            f"resamples of {evidence['n']} {evidence['unit']}"
        )
    if size or "verdict" not in evidence:  # a change always has its size
        return f"{size} over {evidence['n']} {evidence['unit']}"
    return f"{evidence['statistic']}: [{low:+.3f}, {high:+.3f}] over {evidence['n']} {evidence['unit']}"
