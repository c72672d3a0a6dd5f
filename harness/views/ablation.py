"""Heads that matter: Kovaleva et al.'s disabling (§6) and Michel et al.'s importance and pruning.

What a stored sweep says, per checkpoint with a trained classification head: the single head
and the single layer whose disabling changes the score most up and down in each mode (with
simultaneous intervals, at the level of the Holm-adjusted tests beside them), how many of each
family are significant after Holm's correction, and whether disabling helps at all (some gain
significant after Holm over its family; fails when every member is shown, by its interval, to
gain less than the paper's smallest reported gain: metrics, claims, and the lines a run prints); the
cross-fitted pruning (each order ranked on one half of the examples, scored on the other):
how many heads each order removes before the score first drops by more than one point, and
the area under the importance order's curve against the random orders' (ours) and the oracle
order's, with paired bootstrap intervals; figures of the single-head and single-layer
changes, the pruning curves and the importance (against each head's cosine similarity where
the run has the cosine); and all of it as a Markdown table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NotRequired, TypedDict

import numpy as np
from matplotlib.colors import TwoSlopeNorm
from matplotlib.ticker import MaxNLocator

from harness.results.checkpoints import FINETUNED
from harness.views.base import Claim, Entry, PaperPoint, View, pair_name, per_checkpoint_results, register_view
from harness.views.drawing import style_head_axes
from harness.views.evidence import FAILS, HOLDS, UNCLEAR, Evidence, Packed
from harness.views.markdown import markdown_table
from harness.views.metrics import BOUNDS, Metric
from harness.views.palette import GREY, OKABE_ITO
from harness.views.papers import KOVALEVA_TASKS, expected_for
from harness.views.saving import plt, save
from harness.views.titles import axes_title, checkpoint_title, run_title, suptitle

ANALYSIS = "ablation"
MODES = ("uniform", "zero")
MODE_TITLES = {
    "uniform": "attention replaced by 1/L (Kovaleva et al.)",
    "zero": "head output gated to 0 (Michel et al.)",
}
MODE_SHORT = {"uniform": "1/L", "zero": "gated to 0"}
SCOPES = ("heads", "layers")  # what one disabling variant switches off: a single head, or a whole layer
ALPHA = 0.05  # family-wise error rate of Holm's correction: what counts as significant
# The equivalence margin of "disabling some head helps": Kovaleva et al.'s smallest reported single-head
# gain (Section 6: 0.1 point, STS-B), as a fraction of the metric. The claim fails where every member's
# gain is shown below it by its 95% interval.
SMALLEST_PAPER_GAIN = 0.001
HELPS_MODE = "uniform"  # Kovaleva et al.'s disabling (attention made uniform): what the claims judge
RANDOM = "random"  # the seeded random pruning orders' names start so; they are ours (Michel et al. ran none)
BASELINES = {"random": "random orders (ours)", "oracle": "oracle order"}  # what the importance order is set against
INTERVAL_WORDS = {HOLDS: "above 0", FAILS: "below 0", UNCLEAR: "unclear"}


def families(result: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """Each family of tests of a trained checkpoint's result, mode by mode: (mode, scope, its grids)."""
    for mode in MODES:
        for scope in SCOPES:
            yield mode, scope, result[scope][mode]


def ablation_metric(statistic: str, checkpoint: str = FINETUNED, value: float | None = None) -> Metric:
    """A trained checkpoint's ablation metric: ``ablation_intact_finetuned``."""
    return Metric(ANALYSIS, f"ablation_{statistic}", checkpoint=checkpoint, value=value)


def extreme_statistic(extreme: str, scope: str, mode: str, what: str) -> str:
    """The statistic of a family's ``best`` or ``worst`` single head or layer: its ``delta``, ``layer``
    or ``head`` (``best_head_uniform_delta``)."""
    return f"{extreme}_{scope[:-1]}_{mode}_{what}"


def area_statistic(baseline: str) -> str:
    """The statistic of the importance order's pruning area minus the ``baseline``'s."""
    return f"importance_minus_{baseline}_area"


def extreme_cell(metrics: dict[str, Any], extreme: str, scope: str, mode: str) -> str:
    """``3-10: -20.5``: a study task's best or worst single head (or layer) and its change in
    points, mean over seeds; the position only where every seed found the same one."""
    delta = f"{100 * metrics[ablation_metric(extreme_statistic(extreme, scope, mode, 'delta')).name]['mean']:+.1f}"
    places = [
        metrics[name]["values"]
        for name in (ablation_metric(extreme_statistic(extreme, scope, mode, what)).name for what in ("layer", "head"))
        if name in metrics
    ]
    if any(len(set(values)) > 1 for values in places):
        return delta
    return "-".join(str(int(values[0])) for values in places) + f": {delta}"


def best_and_worst(family: dict[str, Any]) -> list[tuple[str, tuple[int, ...]]]:
    """The 0-indexed positions of the largest (``"best"``) and the smallest (``"worst"``) change
    of one family's grid, each the first in row-major order on ties."""
    deltas = np.asarray(family["delta"])
    return [
        (label, np.unravel_index(flat, deltas.shape))
        for label, flat in (("best", deltas.argmax()), ("worst", deltas.argmin()))
    ]


def percent(value: float) -> str:
    """A change of the score in points, signed, to one decimal."""
    return f"{100 * value:+.1f}"


def pruning_sentence(pruning: dict[str, Any]) -> str:
    """How many heads each order prunes before the cross-fitted score first drops by more than
    one point below the intact score."""
    pruned = {order: pruning["heads_pruned"][steps] for order, steps in pruning["steps_within_one_point"].items()}
    named = ", ".join(f"{order} order {count}" for order, count in pruned.items() if not order.startswith(RANDOM))
    randoms = [count for order, count in pruned.items() if order.startswith(RANDOM)]
    return (
        f"heads pruned before the score first drops by more than one point, cross-fitted: {named}, "
        f"{BASELINES['random']} {', '.join(map(str, randoms))} (of {pruning['heads_pruned'][-1]}; 10% steps, "
        "no retraining)"
    )


def areas_sentence(pruning: dict[str, Any], examples: int) -> str:
    """The area under each cross-fitted pruning curve, and the importance order's against the
    random orders' mean and the oracle order's with their intervals and verdicts."""
    areas = pruning["areas"]
    randoms = np.mean([area for order, area in areas.items() if order.startswith(RANDOM)])
    named = ", ".join(f"{order} {100 * areas[order]:.1f}" for order in ("importance", "oracle") if order in areas)
    differences = [
        f"importance minus {BASELINES[baseline]} {percent(evidence['value'])} "
        f"[{percent(evidence['interval'][0])}, {percent(evidence['interval'][1])}], "
        f"{INTERVAL_WORDS[evidence['verdict']]}"
        for baseline in BASELINES
        if (evidence := pruning.get(f"importance_vs_{baseline}")) is not None
    ]
    return (
        f"area under the cross-fitted curve (the mean score over 0-100% of heads pruned; each order ranked "
        f"on one half of the {examples} examples, scored on the other): {named}, {BASELINES['random']} "
        f"{100 * randoms:.1f}"
        + (
            f"; {'; '.join(differences)}: points, 95% intervals over 1,000 paired bootstrap resamples of "
            "the examples (and of the random orders, for their mean), the orders held as ranked"
            if differences
            else ""
        )
    )


def pruning_metrics(pruning: dict[str, Any], checkpoint: str) -> list[Metric]:
    """The heads the importance and the oracle order prune within one point, and the importance
    order's area minus each baseline's with its interval's bounds (all cross-fitted)."""
    out = [
        ablation_metric(
            f"pruned_within_one_point_{order}",
            checkpoint,
            float(pruning["heads_pruned"][pruning["steps_within_one_point"][order]]),
        )
        for order in ("importance", "oracle")
        if order in pruning["steps_within_one_point"]
    ]
    for baseline in BASELINES:
        if (evidence := pruning.get(f"importance_vs_{baseline}")) is not None:
            area = area_statistic(baseline)
            out += [
                ablation_metric(area, checkpoint, evidence["value"]),
                *(
                    ablation_metric(f"{area}_{bound}", checkpoint, value)
                    for bound, value in zip(BOUNDS, evidence["interval"])
                ),
            ]
    return out


def related_cosine(entry: Entry) -> list[tuple[tuple[str, str], dict[str, Any]]]:
    """The entry's declared pairs that its ``related`` part has against the cosine entry (those
    whose second checkpoint is trained), each with what it holds there."""
    cosine = (entry.get("related") or {}).get("cosine", {})
    return [
        ((before, after), cosine[pair_name((before, after))])
        for before, after in entry["pairs"]
        if pair_name((before, after)) in cosine
    ]


def fine_tuned_result(entry: Entry) -> dict[str, Any] | None:
    """The fine-tuned checkpoint's ablation result, or None where it has no trained head."""
    result = per_checkpoint_results(entry).get(FINETUNED)
    return result if result and result["trained"] else None


def significant_gains(family: dict[str, Any]) -> int:
    """How many of one family's changes are gains significant after Holm's correction."""
    return int(((np.asarray(family["delta"]) > 0) & (np.asarray(family["p_holm"]) < ALPHA)).sum())


def disabling_gain(result: dict[str, Any], scope: str, mode: str) -> Evidence:
    """Whether disabling some single head (or layer) raises the score, judged over its whole
    family (every head, or every layer, of one mode), each way by a test that can say so:
    ``holds`` when some gain's Holm-adjusted p is below `ALPHA` (the largest such gain named,
    with its simultaneous interval); ``fails`` when every member's gain is shown smaller than
    the paper's smallest reported gain (`SMALLEST_PAPER_GAIN`, 0.1 point): each member's upper
    95% bound on its gain (``gain_bound``) lies below that margin (an equivalence test of each
    member, combined as an intersection-union test, which needs no correction: all must reject);
    else ``unclear``, the largest change named."""
    keys = ("delta", "low_simultaneous", "high_simultaneous", "p_holm")
    stats = {key: np.asarray(result[scope][mode][key], dtype=float) for key in keys}
    deltas, adjusted = stats["delta"].ravel(), stats["p_holm"].ravel()
    surviving = np.flatnonzero((deltas > 0) & (adjusted < ALPHA))
    chosen = int(surviving[deltas[surviving].argmax()]) if surviving.size else int(deltas.argmax())
    bounds = np.ravel(np.asarray(result[scope][mode]["gain_bound"], dtype=object))
    below_margin = np.array([bound is not None and bound < SMALLEST_PAPER_GAIN for bound in bounds])
    verdict = HOLDS if surviving.size else FAILS if below_margin.all() else UNCLEAR
    where = "-".join(str(int(i) + 1) for i in np.unravel_index(chosen, stats["delta"].shape))
    low, high = (float(stats[f"{side}_simultaneous"].ravel()[chosen]) for side in ("low", "high"))
    level = 100 * result[scope][mode]["simultaneous_level"]
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


def disabling_helps(scope: str) -> Callable[[Entry], Evidence | None]:
    """A judge: whether making some single head's (or layer's) attention uniform raises the
    fine-tuned score significantly after Holm's correction over all of them (`disabling_gain`)."""

    def judge(entry: Entry) -> Evidence | None:
        result = fine_tuned_result(entry)
        return None if result is None else disabling_gain(result, scope, HELPS_MODE)

    return judge


def importance_beats(baseline: str) -> Callable[[Entry], Evidence | None]:
    """A judge: whether the area under the importance order's cross-fitted pruning curve is above
    the ``baseline``'s (random or oracle), by its stored paired bootstrap interval over the
    examples; None where the fine-tuned checkpoint has no importance."""

    def judge(entry: Entry) -> Evidence | None:
        result = fine_tuned_result(entry)
        return None if result is None else result["pruning"].get(f"importance_vs_{baseline}")

    return judge


class Importance(TypedDict):
    """A checkpoint's head importance (Michel et al.), raw and normalised per layer, and the loss it
    is of; or, without one, why (``skipped_because``)."""

    loss: str | None
    skipped_because: NotRequired[str]
    raw: NotRequired[list[list[float]]]
    normalised: NotRequired[list[list[float]]]


class Family(TypedDict):
    """One family of tests, every head or every layer of one mode: the changes of the score, their
    95% interval bounds (each member's own), their simultaneous interval bounds at the level
    (``simultaneous_level``, Bonferroni's over the family) of the Holm-adjusted tests, each member's
    upper 95% bound on its gain (``gain_bound``: exact for accuracy; None where it changed no
    prediction of another metric), p-values and Holm-adjusted p-values (layers x heads, or per
    layer), and how many are significant after Holm."""

    delta: list[Any]
    low: list[Any]
    high: list[Any]
    low_simultaneous: list[Any]
    high_simultaneous: list[Any]
    simultaneous_level: float
    gain_bound: list[Any]
    p: list[Any]
    p_holm: list[Any]
    significant: int


class Areas(TypedDict):
    """The area under each order's cross-fitted pruning curve, and, with an importance order, its
    area minus the random orders' and minus the oracle's (`Evidence`)."""

    areas: dict[str, float]
    importance_vs_random: NotRequired[Evidence]
    importance_vs_oracle: NotRequired[Evidence]


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
    heads: NotRequired[dict[str, Family]]
    layers: NotRequired[dict[str, Family]]
    pruning: NotRequired[Pruning]
    correlations: NotRequired[dict[str, float | None]]
    variants: NotRequired[int]
    units: NotRequired[AblationUnits]


class ImportanceAgreement(TypedDict):
    """A pair's Spearman correlation between the two checkpoints' importance (None where constant)."""

    importance_spearman: float | None


@register_view
class AblationView(View):
    name = ANALYSIS
    order = 160
    version = 3  # 3: simultaneous intervals, the equivalence margin, 20 random orders resampled, predictions stored
    stored = AblationResult
    compared = ImportanceAgreement
    left_out = ("halves", "orders")
    claims = {
        "disabling_a_head_helps": Claim(
            "making some single head's attention uniform raises the fine-tuned model's dev score, significant "
            "after Holm's correction over all heads (fails: every head's gain below 0.1 point by its interval)",
            disabling_helps("heads"),
        ),
        "disabling_a_layer_helps": Claim(
            "making some whole layer's attention uniform raises the fine-tuned model's dev score, significant "
            "after Holm's correction over all layers (fails: every layer's gain below 0.1 point by its interval)",
            disabling_helps("layers"),
        ),
        "importance_beats_random": Claim(
            "pruning heads in order of importance keeps a higher dev score than "
            "our random orders: area under the cross-fitted pruning curve",
            importance_beats("random"),
        ),
        "importance_beats_oracle": Claim(
            "pruning heads in order of importance keeps a higher dev score than "
            "the individual oracle order: area under the cross-fitted pruning "
            "curve",
            importance_beats("oracle"),
        ),
    }
    papers = {
        "disabling_a_head_helps": PaperPoint(
            "Kovaleva et al. 2019, Section 6",
            "disabling single heads of fine-tuned bert-base-uncased helps on "
            "every task: gains of 0.1 (STS-B) to 1.2 points (MRPC)",
            expected_for(KOVALEVA_TASKS),
        ),
        "disabling_a_layer_helps": PaperPoint(
            "Kovaleva et al. 2019, Section 6",
            "disabling a whole layer helps on some tasks: layer 1 on RTE +3.2 points",
            {"rte": "holds"},
        ),
        "importance_beats_oracle": PaperPoint(
            "Michel et al. 2019, Fig. 3",
            "bert-base on MNLI-m pruned by importance beside the individual "
            'oracle order ("pruned according to I_h (solid blue) and individual oracle performance '
            'difference (dashed green)"), no retraining; up to 40% of heads pruned with little loss. MNLI '
            "is not among these tasks, and the paper ran no random orders",
        ),
    }

    @classmethod
    def metrics(cls, entry: Entry) -> list[Metric]:
        """Per trained checkpoint: the intact score, the best and worst single head and layer of
        each mode (delta and 1-indexed position), the heads significant after Holm (and those of
        them that are gains), the cross-fitted pruning (`pruning_metrics`), and the importance
        correlations."""
        out = []
        for checkpoint, result in per_checkpoint_results(entry).items():
            if not result["trained"]:
                continue
            out.append(ablation_metric("intact", checkpoint, result["intact"]))
            for mode, scope, family in families(result):
                for extreme, where in best_and_worst(family):
                    places = {"delta": float(np.asarray(family["delta"])[where]), "layer": float(where[0] + 1)}
                    if scope == "heads":
                        places["head"] = float(where[1] + 1)
                    out += [
                        ablation_metric(extreme_statistic(extreme, scope, mode, what), checkpoint, value)
                        for what, value in places.items()
                    ]
                out.append(ablation_metric(f"significant_{scope}_{mode}", checkpoint, float(family["significant"])))
                out.append(
                    ablation_metric(f"significant_gains_{scope}_{mode}", checkpoint, float(significant_gains(family)))
                )
            out += pruning_metrics(result["pruning"], checkpoint)
            out += [
                ablation_metric(f"spearman_{name}", checkpoint, value) for name, value in result["correlations"].items()
            ]
        return out

    @classmethod
    def draw(cls, entry: Entry, run: dict[str, Any], out_dir: Path) -> list[Path]:
        written = []
        for checkpoint, result in per_checkpoint_results(entry).items():
            if result["trained"]:
                written += [
                    draw_head_deltas(result, run, checkpoint, out_dir / f"ablation_heads_{checkpoint}.png"),
                    draw_layer_deltas(result, run, checkpoint, out_dir / f"ablation_layers_{checkpoint}.png"),
                    draw_pruning(result, run, checkpoint, out_dir / f"ablation_pruning_{checkpoint}.png"),
                ]
        importances = {
            c: r["importance"]["normalised"]
            for c, r in per_checkpoint_results(entry).items()
            if "normalised" in r["importance"]
        }
        if importances:
            written.append(draw_importance(importances, entry, run, out_dir / "ablation_importance.png"))
        return written

    @classmethod
    def tables(cls, entry: Entry, run: dict[str, Any]) -> dict[str, str]:
        return {"ablation_table": ablation_markdown(entry, run)}

    @classmethod
    def printed(cls, entry: Entry) -> list[str]:
        """What ``harness run`` and ``harness ablate`` print: per trained checkpoint, the intact
        score, the single head and layer whose disabling changes the score most up and down (each
        mode, with simultaneous intervals), what is significant after Holm and whether disabling
        helps (`disabling_gain`), and the cross-fitted pruning."""
        lines = []
        for checkpoint, result in per_checkpoint_results(entry).items():
            if not result["trained"]:
                continue
            lines.append(
                f"ablation ({checkpoint}): intact dev {result['metric']} {100 * result['intact']:.1f} on "
                f"{result['examples']} examples; changes in points, simultaneous bootstrap intervals over each "
                "family (the level of its Holm-adjusted tests)"
            )
            for mode, scope, family in families(result):
                stats = {key: np.asarray(family[key]) for key in ("delta", "low_simultaneous", "high_simultaneous")}
                extremes = dict(best_and_worst(family))
                parts = [
                    f"{word} {'-'.join(str(int(i) + 1) for i in where)} {percent(stats['delta'][where])} "
                    f"[{percent(stats['low_simultaneous'][where])}, {percent(stats['high_simultaneous'][where])}]"
                    for word, where in (("largest change", extremes["best"]), ("smallest", extremes["worst"]))
                ]
                parts.append(
                    f"{family['significant']} significant after Holm, {significant_gains(family)} of "
                    f"them gains: disabling helps {disabling_gain(result, scope, mode)['verdict']}"
                )
                lines.append(f"  {mode}, single {scope[:-1]}: " + "; ".join(parts))
            lines.append(f"  pruning: {pruning_sentence(result['pruning'])}")
            lines.append(f"  pruning: {areas_sentence(result['pruning'], result['examples'])}")
        return lines

    @classmethod
    def study_tables(cls, study: dict[str, Any]) -> dict[str, str]:
        """Per task where it ran, the fine-tuned model's single head and layer whose disabling changes
        the score most up and down (Kovaleva et al. section 6; ranked, not tested), the heads and
        layers significant after Holm (the gains among them), the heads each pruning order removes
        within a point and the importance order's area against our random orders' and the oracle's
        (Michel et al.), all cross-fitted, over its seeds."""
        intact = ablation_metric("intact").name
        tasks = {task: entry["metrics"] for task, entry in study["tasks"].items() if intact in entry["metrics"]}
        if not tasks:
            return {}
        rows = [
            [
                task,
                str(metrics[intact]["n"]),
                f"{100 * metrics[intact]['mean']:.1f}",
                *(
                    extreme_cell(metrics, extreme, scope, "uniform")
                    for scope in SCOPES
                    for extreme in ("best", "worst")
                ),
                " / ".join(significant_cell(metrics, scope, mode) for scope in SCOPES for mode in MODES),
                " / ".join(pruned_cell(metrics, order) for order in ("importance", "oracle")),
                *(area_cell(metrics, baseline) for baseline in BASELINES),
            ]
            for task, metrics in tasks.items()
        ]
        header = [
            "task",
            "seeds",
            "intact score",
            "largest change, head, 1/L",
            "smallest change, head, 1/L",
            "largest change, layer, 1/L",
            "smallest change, layer, 1/L",
            "significant after Holm, gains of all: heads 1/L / heads 0 / layers 1/L / layers 0",
            "heads pruned within a point, cross-fitted: importance / oracle order",
            *(f"pruning area in points, cross-fitted: importance minus {title}" for title in BASELINES.values()),
        ]
        return {"ablation_by_task": markdown_table(header, rows)}


def pruned_cell(metrics: dict[str, Any], order: str) -> str:
    """How many heads the ``order`` prunes within one point, mean over seeds ('-' where not stored)."""
    name = ablation_metric(f"pruned_within_one_point_{order}").name
    return f"{metrics[name]['mean']:.0f}" if name in metrics else "-"


def significant_cell(metrics: dict[str, Any], scope: str, mode: str) -> str:
    """``0 of 2``: a family's changes significant after Holm that are gains, of all significant,
    mean over seeds."""
    gains, significant = (
        ablation_metric(f"{statistic}_{scope}_{mode}").name for statistic in ("significant_gains", "significant")
    )
    return f"{metrics[gains]['mean']:.0f} of {metrics[significant]['mean']:.0f}"


def area_cell(metrics: dict[str, Any], baseline: str) -> str:
    """The importance order's area minus a baseline's, in points, mean over seeds: with its 95%
    interval from one seed, else on how many seeds the interval lies above 0 and below it."""
    area = area_statistic(baseline)
    if ablation_metric(area).name not in metrics:
        return "-"
    value, lows, highs = (
        metrics[ablation_metric(statistic).name] for statistic in (area, *(f"{area}_{bound}" for bound in BOUNDS))
    )
    if value["n"] == 1:
        return f"{percent(value['mean'])} [{percent(lows['values'][0])}, {percent(highs['values'][0])}]"
    above, below = sum(low > 0 for low in lows["values"]), sum(high < 0 for high in highs["values"])
    return f"{percent(value['mean'])} (above 0 on {above}, below on {below} of {value['n']} seeds)"


def draw_head_deltas(result: dict[str, Any], run: dict[str, Any], checkpoint: str, path: Path) -> Path:
    """Layers x heads heatmaps of the single-head deltas (percentage points) per mode, on one
    diverging scale centred on 0; heads significant after Holm's correction are boxed."""
    grids = {mode: 100 * np.asarray(result["heads"][mode]["delta"]) for mode in MODES}
    limit = max(max(abs(grid).max() for grid in grids.values()), 0.1)
    layers, heads = grids[MODES[0]].shape
    figure, axes = plt.subplots(
        1,
        len(MODES),
        figsize=(0.42 * heads * len(MODES) + 2.8, 0.42 * layers + 1.9),
        squeeze=False,
        layout="constrained",
    )
    norm = TwoSlopeNorm(vcenter=0.0, vmin=-limit, vmax=limit)
    for panel, mode in zip(axes[0], MODES):
        image = panel.imshow(grids[mode], cmap="RdBu", norm=norm, aspect="auto")
        significant = np.argwhere(np.asarray(result["heads"][mode]["p_holm"]) < ALPHA)
        for layer, head in significant:
            panel.add_patch(plt.Rectangle((head - 0.5, layer - 0.5), 1, 1, fill=False, edgecolor="black", lw=1.5))
        style_head_axes(panel, layers, heads, MODE_TITLES[mode], tick_size=7)
    figure.colorbar(image, ax=list(axes[0]), label=f"change of dev {result['metric']} (points)")
    suptitle(
        figure,
        f"Disabling one head: {run_title(run)}, {checkpoint_title(checkpoint)} (intact "
        f"{100 * result['intact']:.1f}; boxed: significant after Holm)",
    )
    return save(figure, path)


def draw_layer_deltas(result: dict[str, Any], run: dict[str, Any], checkpoint: str, path: Path) -> Path:
    """Per-layer bars of the whole-layer deltas per mode, with their simultaneous bootstrap intervals
    (the level of the Holm-adjusted tests); a bar whose test is significant is outlined."""
    figure, axes = plt.subplots(figsize=(5.6, 3.6))
    layers = np.arange(1, len(result["layers"][MODES[0]]["delta"]) + 1)
    width = 0.8 / len(MODES)
    for index, (mode, colour) in enumerate(zip(MODES, (OKABE_ITO["blue"], OKABE_ITO["orange"]))):
        keys = ("delta", "low_simultaneous", "high_simultaneous")
        stats = {key: 100 * np.asarray(result["layers"][mode][key]) for key in keys}
        errors = [stats["delta"] - stats["low_simultaneous"], stats["high_simultaneous"] - stats["delta"]]
        significant = np.asarray(result["layers"][mode]["p_holm"]) < ALPHA
        axes.bar(
            layers + (index - (len(MODES) - 1) / 2) * width,
            stats["delta"],
            width,
            yerr=errors,
            capsize=2,
            color=colour,
            edgecolor=["black" if flag else colour for flag in significant],
            linewidth=1.2,
            label=MODE_TITLES[mode],
        )
    axes.axhline(0, color="black", lw=0.8)
    axes.set_xticks(layers)
    axes.set_xlabel("layer disabled")
    axes.set_ylabel(f"change of dev {result['metric']} (points)")
    axes_title(
        axes,
        f"Disabling one layer: {run_title(run)}, {checkpoint_title(checkpoint)}\n"
        f"intact {100 * result['intact']:.1f}; simultaneous paired bootstrap intervals over the layers; "
        "outlined: significant after Holm",
    )
    # under the axes: inside, a few layers' bars and intervals leave the legend no free corner
    axes.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=len(MODES), frameon=False)
    axes.grid(axis="y", alpha=0.3)
    return save(figure, path)


def draw_pruning(result: dict[str, Any], run: dict[str, Any], checkpoint: str, path: Path) -> Path:
    """Cross-fitted score against the share of heads pruned: importance order, oracle order, and
    our random orders' mean with their spread (one standard deviation); the importance order's
    area against theirs, with its interval, under the title."""
    pruning = result["pruning"]
    fractions = 100 * np.asarray(pruning["fractions"])
    randoms = sum(order.startswith(RANDOM) for order in pruning["curves"])
    figure, axes = plt.subplots(figsize=(6.4, 4.0))
    mean, std = 100 * np.asarray(pruning["random_mean"]), 100 * np.asarray(pruning["random_std"])
    axes.plot(fractions, mean, color=GREY, marker=".", label=f"random orders, ours (mean of {randoms}, 1 sd)")
    axes.fill_between(fractions, mean - std, mean + std, color=GREY, alpha=0.25)
    for order, colour in (("importance", OKABE_ITO["blue"]), ("oracle", OKABE_ITO["green"])):
        if order in pruning["curves"]:
            axes.plot(
                fractions, 100 * np.asarray(pruning["curves"][order]), color=colour, marker="o", label=f"{order} order"
            )
    axes.axhline(100 * result["intact"], color="black", lw=0.8, ls="--", label="intact")
    axes.set_xlabel("heads pruned (%)")
    axes.set_ylabel(f"dev {result['metric']} (%)")
    readings: dict[str, list[str]] = {}  # a reading the baselines share is written once, for both
    for baseline in BASELINES:
        if evidence := pruning.get(f"importance_vs_{baseline}"):
            reading = (
                f"{percent(evidence['value'])} [{percent(evidence['interval'][0])}, {percent(evidence['interval'][1])}]"
            )
            readings.setdefault(reading, []).append(f"minus {BASELINES[baseline]}")
    differences = "; ".join(f"{' and '.join(labels)}: {reading}" for reading, labels in readings.items())
    axes_title(
        axes,
        f"Pruning heads (no retraining): {run_title(run)}, {checkpoint_title(checkpoint)}\n"
        f"cross-fitted: ranked on half of the {result['examples']} examples, scored on the rest"
        + (f"\narea, importance {differences} (points)" if differences else ""),
    )
    axes.legend(fontsize=7)
    axes.grid(alpha=0.3)
    return save(figure, path)


def draw_importance(importances: dict[str, Any], entry: Entry, run: dict[str, Any], path: Path) -> Path:
    """Michel et al.'s importance per head (normalised per layer) of each checkpoint that has
    one, and, for the fine-tuned one, against how much fine-tuning changed the head."""
    cosine = related_cosine(entry)
    panels = len(importances) + len(cosine)
    layers, heads = np.asarray(next(iter(importances.values()))).shape
    # a panel no narrower than its scatter's two-line axis label, however few the heads
    size = (max(0.42 * heads, 2.8) * panels + 3.2, 0.42 * layers + 2.0)
    figure, axes = plt.subplots(1, panels, figsize=size, squeeze=False, layout="constrained")
    for panel, (checkpoint, grid) in zip(axes[0], importances.items()):
        image = panel.imshow(np.asarray(grid), cmap="viridis", aspect="auto", vmin=0)
        style_head_axes(panel, layers, heads, f"{checkpoint_title(checkpoint)}: importance", tick_size=7)
        figure.colorbar(image, ax=panel, fraction=0.046)
    for panel, ((_, after), stats) in zip(axes[0][len(importances) :], cosine):
        if after in importances:
            panel.scatter(np.ravel(stats["cosine_per_head"]), np.ravel(importances[after]), s=10)
        rho = stats["importance_vs_cosine"]
        panel.set_xlabel("cosine similarity of the head's maps\n(pre-trained vs fine-tuned)")
        panel.xaxis.set_major_locator(MaxNLocator(4))  # similarities near 1 have long tick labels
        panel.set_ylabel(f"{checkpoint_title(after)} importance")
        panel.set_title("Spearman rho " + ("n/a" if rho is None else f"{rho:.2f}"), fontsize=9)
        panel.grid(alpha=0.3)
    suptitle(figure, f"Head importance (Michel et al., normalised per layer): {run_title(run)}")
    return save(figure, path)


def tested(delta: float, p_holm: float) -> str:
    """What a member's Holm-adjusted test says of its change: ``helps``, ``hurts`` or ``no clear change``."""
    if p_holm >= ALPHA:
        return "no clear change"
    return "helps" if delta > 0 else "hurts"


def extreme_rows(result: dict[str, Any], mode: str, count: int = 3) -> list[str]:
    """Table rows of the ``count`` heads whose disabling changes the score most up and most down,
    each with its simultaneous interval and what its Holm-adjusted test says."""
    stats = {key: np.asarray(value) for key, value in result["heads"][mode].items() if isinstance(value, list)}
    order = np.argsort(stats["delta"].ravel(), kind="stable")
    rows = []
    for label, chosen in (("largest gains", order[::-1][:count]), ("largest losses", order[:count])):
        for flat in chosen:
            layer, head = np.unravel_index(flat, stats["delta"].shape)
            delta, p_holm = stats["delta"][layer, head], stats["p_holm"][layer, head]
            rows.append(
                f"| {mode} | {label} | {layer + 1}-{head + 1} | {percent(delta)} | "
                f"[{percent(stats['low_simultaneous'][layer, head])}, "
                f"{percent(stats['high_simultaneous'][layer, head])}] | "
                f"{stats['p'][layer, head]:.3g} | {p_holm:.3g} | {tested(delta, p_holm)} |"
            )
    return rows


def layer_rows(result: dict[str, Any]) -> list[str]:
    """The table of the whole-layer changes: a row per layer, a column per mode, each change with its
    simultaneous interval, its Holm-adjusted p and what that test says."""
    lines = [
        "| layer | " + " | ".join(f"{mode}: change [simultaneous interval] (p Holm): test" for mode in MODES) + " |",
        "|---" * (len(MODES) + 1) + "|",
    ]
    for layer in range(len(result["layers"][MODES[0]]["delta"])):
        cells = []
        for mode in MODES:
            stats = result["layers"][mode]
            cells.append(
                f"{percent(stats['delta'][layer])} [{percent(stats['low_simultaneous'][layer])}, "
                f"{percent(stats['high_simultaneous'][layer])}] ({stats['p_holm'][layer]:.3g}): "
                f"{tested(stats['delta'][layer], stats['p_holm'][layer])}"
            )
        lines.append(f"| {layer + 1} | " + " | ".join(cells) + " |")
    return lines


def helps_lines(result: dict[str, Any]) -> list[str]:
    """Whether disabling helps in each family (`disabling_gain`), a list item each: its verdict and evidence."""
    lines = []
    for mode, scope, _ in families(result):
        evidence = disabling_gain(result, scope, mode)
        lines.append(f"- {scope}, {MODE_SHORT[mode]}: **{evidence['verdict']}**: {evidence['text']}.")
    return lines


def findings_lines(result: dict[str, Any], checkpoint: str, related: list[tuple[tuple[str, str], Any]]) -> list[str]:
    """What is significant after Holm, whether disabling helps, the cross-fitted pruning, and the
    Spearman correlations of a trained checkpoint (its importance against the changes, and
    against each head's cosine)."""
    lines = [
        "",
        f"Significant after Holm (alpha {ALPHA:g}): "
        + ", ".join(
            f"{family['significant']} {scope} ({mode}; {significant_gains(family)} of them gains)"
            for mode, scope, family in families(result)
        )
        + ".",
        "",
        "Disabling helps (Kovaleva et al. section 6), judged over each family with Holm's correction:",
        "",
        *helps_lines(result),
        "",
        f"Pruning: {pruning_sentence(result['pruning'])}; {areas_sentence(result['pruning'], result['examples'])}.",
    ]
    correlations = ", ".join(
        f"{name.replace('_', ' ')} {value:+.2f}" for name, value in result["correlations"].items() if value is not None
    )
    if correlations:
        lines.append(f"Spearman: {correlations}.")
    for pair, stats in related:
        if pair[1] == checkpoint:
            values = ", ".join(
                f"{name.replace('_', ' ')} {value:+.2f}"
                for name, value in stats.items()
                if name != "cosine_per_head" and value is not None
            )
            lines.append(f"Against each head's cosine similarity ({pair_name(pair)}): {values}.")
    return lines


def checkpoint_lines(result: dict[str, Any], checkpoint: str, related: list[tuple[tuple[str, str], Any]]) -> list[str]:
    """The Markdown of one checkpoint: a note when its head is untrained, else its tables and findings."""
    if not result["trained"]:
        note = result["importance"].get("skipped_because") or "importance below"
        return [f"{checkpoint_title(checkpoint)}: {result['note']}; importance: {note}.", ""]
    metric = result["metric"]
    lines = [
        f"**{checkpoint_title(checkpoint)}**: intact dev {metric} {100 * result['intact']:.1f} "
        f"on {result['examples']} examples.",
        "",
        "Changes in points; p-values "
        + ("(exact McNemar)" if metric == "accuracy" else "(paired permutation test)")
        + ", Holm-adjusted within each family (all heads, or all layers, of one mode); the intervals are "
        "simultaneous over the family (paired bootstrap at Bonferroni's level: "
        f"{100 * result['heads'][MODES[0]]['simultaneous_level']:.2f}% each over the heads, "
        f"{100 * result['layers'][MODES[0]]['simultaneous_level']:.2f}% over the layers), the level of the "
        "test beside them; a change helps or hurts only where its Holm-adjusted p is below "
        f"{ALPHA:g}.",
        "",
        "| mode | ranked by change | layer-head | change | simultaneous interval | p | p (Holm) | test |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for mode in MODES:
        lines += extreme_rows(result, mode)
    return [*lines, "", *layer_rows(result), *findings_lines(result, checkpoint, related), ""]


def ablation_markdown(entry: Entry, run: dict[str, Any]) -> str:
    """The disabling, importance and pruning results of each checkpoint as Markdown."""
    lines = [f"# Heads that matter: {run_title(run)}", ""]
    related = related_cosine(entry)
    for checkpoint, result in per_checkpoint_results(entry).items():
        lines += checkpoint_lines(result, checkpoint, related)
    return "\n".join(lines)
