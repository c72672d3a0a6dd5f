"""Whether a change or a claim is clear of its sampling error, by resampling what the analysis sampled.

Every analysis measures on a sample (dev examples, treebank sentences, coreference documents),
so a difference between two checkpoints measured on the same sample counts only when it is
larger than resampling that sample makes it. An analysis keeps, per checkpoint (per pair for
a joint one), the per-unit sums its findings read: `UnitSums`, numerators ``(units, K)`` and
denominators ``(units,)`` or ``(units, K)``, K being the heads, layers or classes the finding
reduces over. A statistic is a ratio of sums over the units (an accuracy, a share, a mean),
reduced over K (`REDUCE`: the best of K, chosen again in every resample, so a "best head" is
corrected for being the best of many; their mean; or K values kept).

`paired_change` draws `RESAMPLES` bootstrap resamples of the units (the same for both
checkpoints: the change is paired) and gives the change with its 95% percentile interval and
its direction: ``rises`` or ``falls`` only when the interval excludes 0, else ``no clear
change``. `resampled_verdict` gives a yes/no statement the share of resamples it holds on:
``holds`` at 97.5% or more, ``fails`` at 2.5% or less (the two-sided 95% level), else
``unclear``. Both are plain numpy: the views and the study read them without torch, and the
analyses compute them when they compare checkpoints.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypedDict

import numpy as np

RESAMPLES = 1000
SEED = 0  # fixed: the same stored units give the same interval every time they are read
LEVEL = 0.95
RISES, FALLS, NO_CLEAR_CHANGE = "rises", "falls", "no clear change"
HOLDS, FAILS, UNCLEAR = "holds", "fails", "unclear"
REDUCE: dict[str | None, Callable[[np.ndarray], np.ndarray]] = {
    "max": lambda values: values.max(axis=-1),  # the best head (or layer), chosen in each resample
    "mean": lambda values: values.mean(axis=-1),
    None: lambda values: values,  # K values: one statistic each (per layer, per class)
}
Evidence = dict[str, Any]  # what `paired_change` and `resampled_verdict` return, stored with the results


class Packed(TypedDict):
    """A float array as a stored result keeps it (`pack`)."""

    shape: list[int]
    float32: str


class StoredUnits(TypedDict):
    """`UnitSums` as a stored result keeps them (`UnitSums.stored`)."""

    unit: str
    numerators: Packed
    denominators: Packed


def pack(array: np.ndarray) -> Packed:
    """A float array as JSON: its shape and its float32 bytes in base64 (a tenth of a list of numbers)."""
    values = np.ascontiguousarray(array, dtype="<f4")
    return {"shape": list(values.shape), "float32": base64.b64encode(values.tobytes()).decode("ascii")}


def unpack(packed: Packed) -> np.ndarray:
    """`pack`'s JSON back to the array (float64)."""
    raw = np.frombuffer(base64.b64decode(packed["float32"]), dtype="<f4")
    return raw.reshape(packed["shape"]).astype(np.float64)


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
    def of(cls, numerators: Any, denominators: Any, unit: str) -> UnitSums:
        """From lists or arrays: numerators (units,) or (units, K), denominators (units,) or (units, K)."""
        numerators = np.asarray(numerators, dtype=np.float64)
        return cls(
            numerators[:, None] if numerators.ndim == 1 else numerators,
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


def paired_change(before: UnitSums, after: UnitSums, reduce: str | None = "mean") -> Evidence:
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


def resampled_verdict(holds: Callable[[np.ndarray], np.ndarray], count: int, unit: str, statistic: str) -> Evidence:
    """Whether a yes/no statement holds on the whole sample of ``count`` units and on what share
    of bootstrap resamples: ``holds(weights)`` takes unit weights (R, count) and says, per row,
    whether the statement holds on that resample. ``statistic`` says what was judged."""
    observed = bool(holds(np.ones((1, count)))[0])
    support = float(np.mean(holds(resample_weights(count)))) if count else 0.0
    tail = (1 - LEVEL) / 2
    verdict = HOLDS if support >= 1 - tail else FAILS if support <= tail else UNCLEAR
    return {"holds": observed, "support": support, "verdict": verdict, "unit": unit, "n": count, "statistic": statistic}


def interval_verdict(interval: tuple[float, float] | list[float], unit: str, count: int, statistic: str) -> Evidence:
    """A statement "this quantity is above 0" judged by its 95% interval: ``holds`` when the
    interval lies above 0, ``fails`` below, ``unclear`` when it holds 0."""
    verdict = {RISES: HOLDS, FALLS: FAILS, NO_CLEAR_CHANGE: UNCLEAR}[direction(interval)]
    return {"interval": list(interval), "verdict": verdict, "unit": unit, "n": count, "statistic": statistic}


def described(evidence: Evidence) -> str:
    """The evidence in a few words: ``+0.031 [+0.012, +0.050] over 757 mentions`` or
    ``holds on 98% of resamples of 1000 dev examples``."""
    if "support" in evidence:
        return (
            f"{evidence['statistic']}: holds on {100 * evidence['support']:.0f}% of resamples of "
            f"{evidence['n']} {evidence['unit']}"
        )
    if "value" in evidence:
        low, high = evidence["interval"]
        return f"{evidence['value']:+.3f} [{low:+.3f}, {high:+.3f}] over {evidence['n']} {evidence['unit']}"
    low, high = evidence["interval"]
    return f"{evidence['statistic']}: [{low:+.3f}, {high:+.3f}] over {evidence['n']} {evidence['unit']}"
