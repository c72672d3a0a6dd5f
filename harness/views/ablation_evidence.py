"""What the ablation's statistics say: the best and worst change of a family, the gains significant
after Holm's correction, and whether disabling some head (or layer) helps or importance beats a
baseline, as `harness.views.evidence.Verdict` for the claims.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from harness.views.ablation_results import AblationResult, Family, Scope, family_grids, fine_tuned_result, versus
from harness.views.base import Entry
from harness.views.evidence import FAILS, HOLDS, UNCLEAR, EffectVerdict, Verdict

MODE_SHORT = {"uniform": "1/L", "zero": "gated to 0"}
ALPHA = 0.05  # family-wise error rate of Holm's correction: what counts as significant
# The equivalence margin of "disabling some head helps": Kovaleva et al.'s smallest reported single-head
# gain (Section 6: 0.1 point, STS-B), as a fraction of the metric. The claim fails where every member's
# gain is shown below it by its 95% interval.
SMALLEST_PAPER_GAIN = 0.001
HELPS_MODE = "uniform"  # Kovaleva et al.'s disabling (attention made uniform): what the claims judge


def best_and_worst(family: Family) -> list[tuple[str, tuple[int, ...]]]:
    """The 0-indexed positions of the largest (``"best"``) and the smallest (``"worst"``) change
    of one family's grid, each the first in row-major order on ties."""
    deltas = np.asarray(family["delta"])
    return [
        (label, tuple(int(i) for i in np.unravel_index(flat, deltas.shape)))
        for label, flat in (("best", deltas.argmax()), ("worst", deltas.argmin()))
    ]


def percent(value: float) -> str:
    """A change of the score in points, signed, to one decimal."""
    return f"{100 * value:+.1f}"


def significant_gains(family: Family) -> int:
    """How many of one family's changes are gains significant after Holm's correction."""
    return int(((np.asarray(family["delta"]) > 0) & (np.asarray(family["p_holm"]) < ALPHA)).sum())


class FamilyGain(EffectVerdict):
    """Whether disabling some single member of a family raises the score (`disabling_gain`): the verdict,
    the gain it names with its simultaneous interval and Holm-adjusted p, where, how many members' gains
    are shown below the margin, and all of it in words."""

    p_holm: float
    where: str
    members_below_margin: int
    text: str


def disabling_gain(result: AblationResult, scope: Scope, mode: str) -> FamilyGain:
    """Whether disabling some single head (or layer) raises the score, judged over its whole
    family (every head, or every layer, of one mode), each way by a test that can say so:
    ``holds`` when some gain's Holm-adjusted p is below `ALPHA` (the largest such gain named,
    with its simultaneous interval); ``fails`` when every member's gain is shown smaller than
    the paper's smallest reported gain (`SMALLEST_PAPER_GAIN`, 0.1 point): each member's upper
    95% bound on its gain (``gain_bound``) lies below that margin (an equivalence test of each
    member, combined as an intersection-union test, which needs no correction: all must reject);
    else ``unclear``, the largest change named."""
    family = result[scope][mode]
    stats = family_grids(family)
    deltas, adjusted = stats["delta"].ravel(), stats["p_holm"].ravel()
    surviving = np.flatnonzero((deltas > 0) & (adjusted < ALPHA))
    chosen = int(surviving[deltas[surviving].argmax()]) if surviving.size else int(deltas.argmax())
    bounds = np.asarray(family["gain_bound"], dtype=np.object_).ravel()
    below_margin = np.array([bound is not None and bound < SMALLEST_PAPER_GAIN for bound in bounds])
    verdict = HOLDS if surviving.size else FAILS if below_margin.all() else UNCLEAR
    where = "-".join(str(int(i) + 1) for i in np.unravel_index(chosen, stats["delta"].shape))
    low, high = (float(stats[f"{side}_simultaneous"].ravel()[chosen]) for side in ("low", "high"))
    level = 100 * family["simultaneous_level"]
    named = (
        f"{'layer-head' if scope == 'heads' else 'layer'} {where}: {percent(deltas[chosen])} points "
        f"[{percent(low)}, {percent(high)}] (simultaneous, {level:.2f}% each), Holm-adjusted p {adjusted[chosen]:.2g}"
    )
    one, count = scope[:-1], deltas.size
    margin = f"{100 * SMALLEST_PAPER_GAIN:.1f} point"
    text = {
        HOLDS: named,
        FAILS: f"every one of the {count} {scope} gains less than {margin} (Kovaleva et al.'s smallest reported "
        f"gain), each one's upper 95% bound below it (the largest change: {named})",
        UNCLEAR: f"no {one}'s gain is significant after Holm over {count} {scope}, and {int((~below_margin).sum())} "
        f"of them may still gain {margin} or more (the largest change: {named})",
    }[verdict]
    return {
        "verdict": verdict,
        "value": float(deltas[chosen]),
        "interval": [low, high],
        "p_holm": float(adjusted[chosen]),
        "where": where,
        "unit": "dev examples",
        "n": result["examples"],
        "members_below_margin": int(below_margin.sum()),
        "statistic": f"the largest gain of disabling one of {count} {scope} ({MODE_SHORT[mode]}), "
        f"Holm-adjusted over them; fails when each one's upper 95% bound on its gain lies below {margin}",
        "text": f"{text}; {result['examples']} dev examples",
    }


def disabling_helps(scope: Scope) -> Callable[[Entry], Verdict | None]:
    """A judge: whether making some single head's (or layer's) attention uniform raises the
    fine-tuned score significantly after Holm's correction over all of them (`disabling_gain`)."""

    def judge(entry: Entry) -> Verdict | None:
        result = fine_tuned_result(entry)
        return None if result is None else disabling_gain(result, scope, HELPS_MODE)

    return judge


def importance_beats(baseline: str) -> Callable[[Entry], Verdict | None]:
    """A judge: whether the area under the importance order's cross-fitted pruning curve is above
    the ``baseline``'s (random or oracle), by its stored paired bootstrap interval over the
    examples; None where the fine-tuned checkpoint has no importance."""

    def judge(entry: Entry) -> Verdict | None:
        result = fine_tuned_result(entry)
        return None if result is None or "pruning" not in result else versus(result["pruning"], baseline)

    return judge
