"""Heads that matter: Kovaleva et al.'s disabling (§6) and Michel et al.'s importance and pruning.

What a stored sweep says, per checkpoint with a trained classification head: the single head
and the single layer whose disabling helps and hurts most in each mode, and how many of each
family are significant after Holm's correction (metrics, and the lines a run prints); how many
heads each pruning order removes before the score first drops by more than one point;
figures of the single-head and single-layer changes, the pruning curves and the importance
(against each head's cosine similarity where the run has the cosine); and all of it as a
Markdown table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.colors import TwoSlopeNorm
from matplotlib.ticker import MaxNLocator

from harness.results.checkpoints import FINETUNED
from harness.views.base import Claim, Entry, PaperPoint, View, pair_name, per_checkpoint_results, register_view
from harness.views.papers import KOVALEVA_TASKS, expected_for
from harness.views.style import (
    GREY,
    OKABE_ITO,
    axes_title,
    checkpoint_title,
    markdown_table,
    plt,
    run_title,
    save,
    style_head_axes,
    suptitle,
)

MODES = ("uniform", "zero")
MODE_TITLES = {"uniform": "attention replaced by 1/L (Kovaleva et al.)",
               "zero": "head output gated to 0 (Michel et al.)"}
SCOPES = ("heads", "layers")  # what one disabling variant switches off: a single head, or a whole layer
ALPHA = 0.05  # family-wise error rate of Holm's correction: what counts as significant


def families(result: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """Each family of tests of a trained checkpoint's result, mode by mode: (mode, scope, its grids)."""
    for mode in MODES:
        for scope in SCOPES:
            yield mode, scope, result[scope][mode]


def extreme_cell(metrics: dict[str, Any], prefix: str) -> str:
    """``3-10: -20.5``: a study task's best or worst single head (or layer) and its change in
    points, mean over seeds; the position only where every seed found the same one."""
    delta = f"{100 * metrics[f'{prefix}_delta_{FINETUNED}']['mean']:+.1f}"
    places = [metrics[name]["values"] for name in (f"{prefix}_layer_{FINETUNED}", f"{prefix}_head_{FINETUNED}")
              if name in metrics]
    if any(len(set(values)) > 1 for values in places):
        return delta
    return "-".join(str(int(values[0])) for values in places) + f": {delta}"


def best_and_worst(family: dict[str, Any]) -> list[tuple[str, tuple[int, ...]]]:
    """The 0-indexed positions of the largest (``"best"``) and the smallest (``"worst"``) change
    of one family's grid, each the first in row-major order on ties."""
    deltas = np.asarray(family["delta"])
    return [(label, np.unravel_index(flat, deltas.shape)) for label, flat in (("best", deltas.argmax()),
                                                                               ("worst", deltas.argmin()))]


def percent(value: float) -> str:
    """A change of the score in points, signed, to one decimal."""
    return f"{100 * value:+.1f}"


def pruning_sentence(pruning: dict[str, Any]) -> str:
    """How many heads each order prunes before the score first drops by more than one point."""
    pruned = {order: pruning["heads_pruned"][steps] for order, steps in pruning["steps_within_one_point"].items()}
    named = ", ".join(f"{order} order {count}" for order, count in pruned.items() if not order.startswith("random"))
    randoms = [count for order, count in pruned.items() if order.startswith("random")]
    return (f"heads pruned before the score first drops by more than one point: {named}, random orders "
            f"{', '.join(map(str, randoms))} (of {pruning['heads_pruned'][-1]}; 10% steps, no retraining)")


def related_cosine(entry: Entry) -> list[tuple[tuple[str, str], dict[str, Any]]]:
    """The entry's declared pairs that its ``related`` part has against the cosine entry (those
    whose second checkpoint is trained), each with what it holds there."""
    cosine = (entry.get("related") or {}).get("cosine", {})
    return [((before, after), cosine[pair_name((before, after))]) for before, after in entry["pairs"]
            if pair_name((before, after)) in cosine]


def fine_tuned_result(entry: Entry) -> dict[str, Any]:
    """The fine-tuned checkpoint's ablation result."""
    return per_checkpoint_results(entry)[FINETUNED]


def disabling_helps(scope: str) -> Callable[[Entry], bool]:
    """A judge: whether making some single head's (or layer's) attention uniform raises the fine-tuned score."""
    return lambda entry: max(np.asarray(fine_tuned_result(entry)[scope]["uniform"]["delta"]).flat) > 0


def importance_beats_random(entry: Entry) -> bool:
    """Whether pruning in importance order stays within a point for at least as many heads as the
    median random order."""
    pruning = fine_tuned_result(entry)["pruning"]
    counts = {order: pruning["heads_pruned"][steps] for order, steps in pruning["steps_within_one_point"].items()}
    randoms = [count for order, count in counts.items() if order.startswith("random")]
    return counts["importance"] >= float(np.median(randoms))


@register_view
class AblationView(View):
    name = "ablation"
    version = 1
    claims = {"disabling_a_head_helps": Claim("making some single head's attention uniform raises the fine-tuned "
                                              "model's dev score", disabling_helps("heads")),
              "disabling_a_layer_helps": Claim("making some whole layer's attention uniform raises the fine-tuned "
                                               "model's dev score", disabling_helps("layers")),
              "importance_beats_random": Claim("pruning heads in order of importance stays within a point of the "
                                               "intact score for at least as many heads as the median random order",
                                               importance_beats_random)}
    papers = {"disabling_a_head_helps": PaperPoint(
                  "Kovaleva et al. 2019, Section 6", "disabling single heads of fine-tuned bert-base-uncased helps on "
                  "every task: gains of 0.1 (STS-B) to 1.2 points (MRPC)", expected_for(KOVALEVA_TASKS)),
              "disabling_a_layer_helps": PaperPoint(
                  "Kovaleva et al. 2019, Section 6", "disabling a whole layer helps on some tasks: layer 1 on RTE "
                  "+3.2 points", {"rte": "holds"}),
              "importance_beats_random": PaperPoint(
                  "Michel et al. 2019, Fig. 3", "pruning by importance keeps the score longer than random orders; up "
                  "to 40% of BERT's heads pruned on MNLI-m with little loss", "holds")}

    @classmethod
    def metrics(cls, entry: Entry) -> list[tuple[str, float]]:
        """Per trained checkpoint: the intact score, the best and worst single head and layer of
        each mode (delta and 1-indexed position), the heads significant after Holm, the pruning
        steps within one point, and the importance correlations."""
        out = []
        for checkpoint, result in per_checkpoint_results(entry).items():
            if not result["trained"]:
                continue
            out.append((f"ablation_intact_{checkpoint}", result["intact"]))
            for mode, scope, family in families(result):
                for extreme, where in best_and_worst(family):
                    prefix = f"ablation_{extreme}_{scope[:-1]}_{mode}"
                    out.append((f"{prefix}_delta_{checkpoint}", float(np.asarray(family["delta"])[where])))
                    out.append((f"{prefix}_layer_{checkpoint}", float(where[0] + 1)))
                    if scope == "heads":
                        out.append((f"{prefix}_head_{checkpoint}", float(where[1] + 1)))
                out.append((f"ablation_significant_{scope}_{mode}_{checkpoint}", float(family["significant"])))
            for order in ("importance", "oracle"):
                if order in result["pruning"]["steps_within_one_point"]:
                    steps = result["pruning"]["steps_within_one_point"][order]
                    out.append((f"ablation_pruned_within_one_point_{order}_{checkpoint}",
                                float(result["pruning"]["heads_pruned"][steps])))
            out += [(f"ablation_spearman_{name}_{checkpoint}", value)
                    for name, value in result["correlations"].items() if value is not None]
        return out

    @classmethod
    def draw(cls, entry: Entry, run: dict[str, Any], out_dir: Path) -> list[Path]:
        written = []
        for checkpoint, result in per_checkpoint_results(entry).items():
            if result["trained"]:
                written += [draw_head_deltas(result, run, checkpoint, out_dir / f"ablation_heads_{checkpoint}.png"),
                            draw_layer_deltas(result, run, checkpoint, out_dir / f"ablation_layers_{checkpoint}.png"),
                            draw_pruning(result, run, checkpoint, out_dir / f"ablation_pruning_{checkpoint}.png")]
        importances = {c: r["importance"]["normalised"] for c, r in per_checkpoint_results(entry).items()
                       if "normalised" in r["importance"]}
        if importances:
            written.append(draw_importance(importances, entry, run, out_dir / "ablation_importance.png"))
        return written

    @classmethod
    def tables(cls, entry: Entry, run: dict[str, Any]) -> dict[str, str]:
        return {"ablation_table": ablation_markdown(entry, run)}

    @classmethod
    def printed(cls, entry: Entry) -> list[str]:
        """What ``harness run`` and ``harness ablate`` print: per trained checkpoint, the intact
        score, the single head and layer whose disabling helps and hurts most (each mode), what
        is significant after Holm, and the pruning."""
        lines = []
        for checkpoint, result in per_checkpoint_results(entry).items():
            if not result["trained"]:
                continue
            lines.append(f"ablation ({checkpoint}): intact dev {result['metric']} {100 * result['intact']:.1f} on "
                         f"{result['examples']} examples; changes in points, 95% bootstrap intervals")
            for mode, scope, family in families(result):
                stats = {key: np.asarray(family[key]) for key in ("delta", "low", "high")}
                parts = [f"{label} {'-'.join(str(int(i) + 1) for i in where)} {percent(stats['delta'][where])} "
                         f"[{percent(stats['low'][where])}, {percent(stats['high'][where])}]"
                         for label, where in best_and_worst(family)]
                parts.append(f"{family['significant']} significant after Holm")
                lines.append(f"  {mode}, single {scope[:-1]}: " + "; ".join(parts))
            lines.append(f"  pruning: {pruning_sentence(result['pruning'])}")
        return lines

    @classmethod
    def study_tables(cls, study: dict[str, Any]) -> dict[str, str]:
        """Per task where it ran, the fine-tuned model's single head and layer whose disabling helps
        and hurts most (Kovaleva et al. section 6), the heads and layers significant after Holm, and
        the heads each pruning order removes within a point (Michel et al.), over its seeds."""
        tasks = {task: entry["metrics"] for task, entry in study["tasks"].items()
                 if f"ablation_intact_{FINETUNED}" in entry["metrics"]}
        if not tasks:
            return {}
        rows = [[task, str(metrics[f"ablation_intact_{FINETUNED}"]["n"]),
                 f"{100 * metrics[f'ablation_intact_{FINETUNED}']['mean']:.1f}",
                 *(extreme_cell(metrics, f"ablation_{extreme}_{scope}_uniform")
                   for scope in ("head", "layer") for extreme in ("best", "worst")),
                 " / ".join(f"{metrics[f'ablation_significant_{scope}_{mode}_{FINETUNED}']['mean']:.0f}"
                            for scope in SCOPES for mode in MODES),
                 " / ".join(f"{metrics[name]['mean']:.0f}" if (name := f"ablation_pruned_within_one_point_{order}_"
                                                                       f"{FINETUNED}") in metrics else "-"
                            for order in ("importance", "oracle"))] for task, metrics in tasks.items()]
        header = ["task", "seeds", "intact score", "best head, 1/L", "worst head, 1/L", "best layer, 1/L",
                  "worst layer, 1/L", "significant after Holm: heads 1/L / heads 0 / layers 1/L / layers 0",
                  "heads pruned within a point: importance / oracle order"]
        return {"ablation_by_task": markdown_table(header, rows)}


def draw_head_deltas(result: dict[str, Any], run: dict[str, Any], checkpoint: str, path: Path) -> Path:
    """Layers x heads heatmaps of the single-head deltas (percentage points) per mode, on one
    diverging scale centred on 0; heads significant after Holm's correction are boxed."""
    grids = {mode: 100 * np.asarray(result["heads"][mode]["delta"]) for mode in MODES}
    limit = max(max(abs(grid).max() for grid in grids.values()), 0.1)
    layers, heads = grids[MODES[0]].shape
    figure, axes = plt.subplots(1, len(MODES), figsize=(0.42 * heads * len(MODES) + 2.8, 0.42 * layers + 1.9),
                                squeeze=False, layout="constrained")
    norm = TwoSlopeNorm(vcenter=0.0, vmin=-limit, vmax=limit)
    for panel, mode in zip(axes[0], MODES):
        image = panel.imshow(grids[mode], cmap="RdBu", norm=norm, aspect="auto")
        significant = np.argwhere(np.asarray(result["heads"][mode]["p_holm"]) < ALPHA)
        for layer, head in significant:
            panel.add_patch(plt.Rectangle((head - 0.5, layer - 0.5), 1, 1, fill=False, edgecolor="black", lw=1.5))
        style_head_axes(panel, layers, heads, MODE_TITLES[mode], tick_size=7)
    figure.colorbar(image, ax=list(axes[0]), label=f"change of dev {result['metric']} (points)")
    suptitle(figure, f"Disabling one head: {run_title(run)}, {checkpoint_title(checkpoint)} (intact "
                     f"{100 * result['intact']:.1f}; boxed: significant after Holm)")
    return save(figure, path)


def draw_layer_deltas(result: dict[str, Any], run: dict[str, Any], checkpoint: str, path: Path) -> Path:
    """Per-layer bars of the whole-layer deltas per mode, with their 95% bootstrap intervals."""
    figure, axes = plt.subplots(figsize=(5.6, 3.6))
    layers = np.arange(1, len(result["layers"][MODES[0]]["delta"]) + 1)
    width = 0.8 / len(MODES)
    for index, (mode, colour) in enumerate(zip(MODES, (OKABE_ITO["blue"], OKABE_ITO["orange"]))):
        stats = {key: 100 * np.asarray(result["layers"][mode][key]) for key in ("delta", "low", "high")}
        errors = [stats["delta"] - stats["low"], stats["high"] - stats["delta"]]
        axes.bar(layers + (index - (len(MODES) - 1) / 2) * width, stats["delta"], width, yerr=errors, capsize=2,
                 color=colour, label=MODE_TITLES[mode])
    axes.axhline(0, color="black", lw=0.8)
    axes.set_xticks(layers)
    axes.set_xlabel("layer disabled")
    axes.set_ylabel(f"change of dev {result['metric']} (points)")
    axes_title(axes, f"Disabling one layer: {run_title(run)}, {checkpoint_title(checkpoint)}\n"
                     f"intact {100 * result['intact']:.1f}; 95% paired bootstrap intervals")
    axes.legend(fontsize=7)
    axes.grid(axis="y", alpha=0.3)
    return save(figure, path)


def draw_pruning(result: dict[str, Any], run: dict[str, Any], checkpoint: str, path: Path) -> Path:
    """Score against the share of heads pruned: importance order, oracle order, and the random
    orders' mean with their spread (one standard deviation)."""
    pruning = result["pruning"]
    fractions = 100 * np.asarray(pruning["fractions"])
    randoms = sum(order.startswith("random") for order in pruning["curves"])
    figure, axes = plt.subplots(figsize=(5.4, 3.6))
    mean, std = 100 * np.asarray(pruning["random_mean"]), 100 * np.asarray(pruning["random_std"])
    axes.plot(fractions, mean, color=GREY, marker=".", label=f"random order (mean of {randoms})")
    axes.fill_between(fractions, mean - std, mean + std, color=GREY, alpha=0.25)
    for order, colour in (("importance", OKABE_ITO["blue"]), ("oracle", OKABE_ITO["green"])):
        if order in pruning["curves"]:
            axes.plot(fractions, 100 * np.asarray(pruning["curves"][order]), color=colour, marker="o",
                      label=f"{order} order")
    axes.axhline(100 * result["intact"], color="black", lw=0.8, ls="--", label="intact")
    axes.set_xlabel("heads pruned (%)")
    axes.set_ylabel(f"dev {result['metric']} (%)")
    axes_title(axes, f"Pruning heads (no retraining): {run_title(run)}, {checkpoint_title(checkpoint)}")
    axes.legend(fontsize=7)
    axes.grid(alpha=0.3)
    return save(figure, path)


def draw_importance(importances: dict[str, Any], entry: Entry, run: dict[str, Any], path: Path) -> Path:
    """Michel et al.'s importance per head (normalised per layer) of each checkpoint that has
    one, and, for the fine-tuned one, against how much fine-tuning changed the head."""
    cosine = related_cosine(entry)
    panels = len(importances) + len(cosine)
    layers, heads = np.asarray(next(iter(importances.values()))).shape
    figure, axes = plt.subplots(1, panels, figsize=(0.42 * heads * panels + 3.2, 0.42 * layers + 2.0),
                                squeeze=False, layout="constrained")
    for panel, (checkpoint, grid) in zip(axes[0], importances.items()):
        image = panel.imshow(np.asarray(grid), cmap="viridis", aspect="auto", vmin=0)
        style_head_axes(panel, layers, heads, f"{checkpoint_title(checkpoint)}: importance", tick_size=7)
        figure.colorbar(image, ax=panel, fraction=0.046)
    for panel, ((_, after), stats) in zip(axes[0][len(importances):], cosine):
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


def extreme_rows(result: dict[str, Any], mode: str, count: int = 3) -> list[str]:
    """Table rows of the ``count`` heads whose disabling helps most and hurts most."""
    stats = {key: np.asarray(value) for key, value in result["heads"][mode].items() if key != "significant"}
    order = np.argsort(stats["delta"].ravel(), kind="stable")
    rows = []
    for label, chosen in (("helps", order[::-1][:count]), ("hurts", order[:count])):
        for flat in chosen:
            layer, head = np.unravel_index(flat, stats["delta"].shape)
            rows.append(f"| {mode} | {label} | {layer + 1}-{head + 1} | {percent(stats['delta'][layer, head])} | "
                        f"[{percent(stats['low'][layer, head])}, {percent(stats['high'][layer, head])}] | "
                        f"{stats['p'][layer, head]:.3g} | {stats['p_holm'][layer, head]:.3g} |")
    return rows


def layer_rows(result: dict[str, Any]) -> list[str]:
    """The table of the whole-layer changes: a row per layer, a column per mode."""
    lines = ["| layer | " + " | ".join(f"{mode}: change [interval] (p Holm)" for mode in MODES) + " |",
             "|---" * (len(MODES) + 1) + "|"]
    for layer in range(len(result["layers"][MODES[0]]["delta"])):
        cells = []
        for mode in MODES:
            stats = result["layers"][mode]
            cells.append(f"{percent(stats['delta'][layer])} [{percent(stats['low'][layer])}, "
                         f"{percent(stats['high'][layer])}] ({stats['p_holm'][layer]:.3g})")
        lines.append(f"| {layer + 1} | " + " | ".join(cells) + " |")
    return lines


def findings_lines(result: dict[str, Any], checkpoint: str, related: list[tuple[tuple[str, str], Any]]) -> list[str]:
    """What is significant after Holm, the pruning, and the Spearman correlations of a trained
    checkpoint (its importance against the changes, and against each head's cosine)."""
    lines = ["", f"Significant after Holm (alpha {ALPHA:g}): "
             + ", ".join(f"{result[scope][mode]['significant']} {scope} ({mode})"
                         for scope in SCOPES for mode in MODES) + ".",
             "", f"Pruning: {pruning_sentence(result['pruning'])}."]
    correlations = ", ".join(f"{name.replace('_', ' ')} {value:+.2f}"
                             for name, value in result["correlations"].items() if value is not None)
    if correlations:
        lines.append(f"Spearman: {correlations}.")
    for pair, stats in related:
        if pair[1] == checkpoint:
            values = ", ".join(f"{name.replace('_', ' ')} {value:+.2f}" for name, value in stats.items()
                               if name != "cosine_per_head" and value is not None)
            lines.append(f"Against each head's cosine similarity ({pair_name(pair)}): {values}.")
    return lines


def checkpoint_lines(result: dict[str, Any], checkpoint: str, related: list[tuple[tuple[str, str], Any]]) -> list[str]:
    """The Markdown of one checkpoint: a note when its head is untrained, else its tables and findings."""
    if not result["trained"]:
        note = result["importance"].get("skipped_because") or "importance below"
        return [f"{checkpoint_title(checkpoint)}: {result['note']}; importance: {note}.", ""]
    metric = result["metric"]
    lines = [f"**{checkpoint_title(checkpoint)}**: intact dev {metric} {100 * result['intact']:.1f} "
             f"on {result['examples']} examples.", "",
             "Changes in points, 95% paired bootstrap intervals, p-values "
             + ("(exact McNemar)" if metric == "accuracy" else "(paired permutation test)")
             + ", Holm-adjusted within each family.", "",
             "| mode | disabling the head | layer-head | change | 95% interval | p | p (Holm) |",
             "|---|---|---|---|---|---|---|"]
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
