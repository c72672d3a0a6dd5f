"""The ablation in words: the sentences on the cross-fitted pruning, a run's Markdown table of
each checkpoint's disabling, importance and pruning, and the cells of a study's table.
"""

from __future__ import annotations

import numpy as np

from harness.results.run_record import RunSection
from harness.results.store import JsonObject
from harness.results.study_record import Spread
from harness.views.ablation_evidence import ALPHA, MODE_SHORT, disabling_gain, percent, significant_gains
from harness.views.ablation_metrics import ablation_metric, area_statistic, extreme_statistic
from harness.views.ablation_results import (
    BASELINES,
    IMPORTANCE_VS_DELTA,
    MODES,
    RANKED,
    VS_COSINE,
    AblationResult,
    Pruning,
    families,
    family_grids,
    is_random,
    related_cosine,
    versus,
)
from harness.views.base import Entry, pair_name, per_checkpoint_results
from harness.views.evidence import FAILS, HOLDS, UNCLEAR
from harness.views.metrics import BOUNDS
from harness.views.titles import checkpoint_title, run_title

INTERVAL_WORDS = {HOLDS: "above 0", FAILS: "below 0", UNCLEAR: "unclear"}


def extreme_cell(metrics: dict[str, Spread], extreme: str, scope: str, mode: str) -> str:
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


def pruning_sentence(pruning: Pruning) -> str:
    """How many heads each order prunes before the cross-fitted score first drops by more than
    one point below the intact score."""
    pruned = {order: pruning["heads_pruned"][steps] for order, steps in pruning["steps_within_one_point"].items()}
    named = ", ".join(f"{order} order {count}" for order, count in pruned.items() if not is_random(order))
    randoms = [count for order, count in pruned.items() if is_random(order)]
    return (
        f"heads pruned before the score first drops by more than one point, cross-fitted: {named}, "
        f"{BASELINES['random']} {', '.join(map(str, randoms))} (of {pruning['heads_pruned'][-1]}; 10% steps, "
        "no retraining)"
    )


def areas_sentence(pruning: Pruning, examples: int) -> str:
    """The area under each cross-fitted pruning curve, and the importance order's against the
    random orders' mean and the oracle order's with their intervals and verdicts."""
    areas = pruning["areas"]
    randoms = np.mean([area for order, area in areas.items() if is_random(order)])
    named = ", ".join(f"{order} {100 * areas[order]:.1f}" for order in RANKED if order in areas)
    differences = [
        f"importance minus {BASELINES[baseline]} {percent(evidence['value'])} "
        f"[{percent(evidence['interval'][0])}, {percent(evidence['interval'][1])}], "
        f"{INTERVAL_WORDS[evidence['verdict']]}"
        for baseline in BASELINES
        if (evidence := versus(pruning, baseline)) is not None
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


def pruned_cell(metrics: dict[str, Spread], order: str) -> str:
    """How many heads the ``order`` prunes within one point, mean over seeds ('-' where not stored)."""
    name = ablation_metric(f"pruned_within_one_point_{order}").name
    return f"{metrics[name]['mean']:.0f}" if name in metrics else "-"


def significant_cell(metrics: dict[str, Spread], scope: str, mode: str) -> str:
    """``0 of 2``: a family's changes significant after Holm that are gains, of all significant,
    mean over seeds."""
    gains, significant = (
        ablation_metric(f"{statistic}_{scope}_{mode}").name for statistic in ("significant_gains", "significant")
    )
    return f"{metrics[gains]['mean']:.0f} of {metrics[significant]['mean']:.0f}"


def area_cell(metrics: dict[str, Spread], baseline: str) -> str:
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


def tested(delta: float, p_holm: float) -> str:
    """What a member's Holm-adjusted test says of its change: ``helps``, ``hurts`` or ``no clear change``."""
    if p_holm >= ALPHA:
        return "no clear change"
    return "helps" if delta > 0 else "hurts"


def extreme_rows(result: AblationResult, mode: str, count: int = 3) -> list[str]:
    """Table rows of the ``count`` heads whose disabling changes the score most up and most down,
    each with its simultaneous interval and what its Holm-adjusted test says."""
    stats = family_grids(result["heads"][mode])
    order = np.argsort(stats["delta"].ravel(), kind="stable")
    rows = []
    for label, chosen in (("largest gains", order[::-1][:count]), ("largest losses", order[:count])):
        for flat in chosen:
            layer, head = np.unravel_index(flat, stats["delta"].shape)
            delta, p_holm = float(stats["delta"][layer, head]), float(stats["p_holm"][layer, head])
            rows.append(
                f"| {mode} | {label} | {layer + 1}-{head + 1} | {percent(delta)} | "
                f"[{percent(float(stats['low_simultaneous'][layer, head]))}, "
                f"{percent(float(stats['high_simultaneous'][layer, head]))}] | "
                f"{stats['p'][layer, head]:.3g} | {p_holm:.3g} | {tested(delta, p_holm)} |"
            )
    return rows


def layer_rows(result: AblationResult) -> list[str]:
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


def helps_lines(result: AblationResult) -> list[str]:
    """Whether disabling helps in each family (`disabling_gain`), a list item each: its verdict and evidence."""
    lines = []
    for mode, scope, _ in families(result):
        evidence = disabling_gain(result, scope, mode)
        lines.append(f"- {scope}, {MODE_SHORT[mode]}: **{evidence['verdict']}**: {evidence['text']}.")
    return lines


def findings_lines(
    result: AblationResult, checkpoint: str, related: list[tuple[tuple[str, str], JsonObject]]
) -> list[str]:
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
        f"importance vs {mode} delta {value:+.2f}"
        for mode, key in IMPORTANCE_VS_DELTA.items()
        if (value := result["correlations"].get(key)) is not None
    )
    if correlations:
        lines.append(f"Spearman: {correlations}.")
    for pair, stats in related:
        if pair[1] == checkpoint:
            said = {mode: f"{mode} delta" for mode in MODES}  # what each mode's correlation is of
            values = ", ".join(
                f"{said.get(of, of)} vs cosine {value:+.2f}"
                for of, key in VS_COSINE.items()
                if (value := stats.get(key)) is not None
            )
            lines.append(f"Against each head's cosine similarity ({pair_name(pair)}): {values}.")
    return lines


def checkpoint_lines(
    result: AblationResult, checkpoint: str, related: list[tuple[tuple[str, str], JsonObject]]
) -> list[str]:
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


def ablation_markdown(entry: Entry, run: RunSection) -> str:
    """The disabling, importance and pruning results of each checkpoint as Markdown."""
    lines = [f"# Heads that matter: {run_title(run)}", ""]
    related = related_cosine(entry)
    for checkpoint, result in per_checkpoint_results(entry).items():
        lines += checkpoint_lines(result, checkpoint, related)
    return "\n".join(lines)
