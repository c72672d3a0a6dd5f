"""The ablation's figures: the single-head and single-layer changes of each mode, the pruning
curves, and the importance per head (against each head's cosine where the run has it).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from harness.results.run_record import RunSection
from harness.views.ablation_evidence import ALPHA, percent
from harness.views.ablation_results import (
    BASELINES,
    MODES,
    VS_COSINE,
    AblationEntry,
    AblationResult,
    family_grids,
    is_random,
    related_cosine,
    versus,
)
from harness.views.drawing import draw_side_by_side_grids, style_head_axes
from harness.views.lazy import mpl
from harness.views.palette import GREY, OKABE_ITO
from harness.views.saving import plt, save
from harness.views.titles import axes_title, checkpoint_title, run_title, suptitle

MODE_TITLES = {
    "uniform": "attention replaced by 1/L (Kovaleva et al.)",
    "zero": "head output gated to 0 (Michel et al.)",
}


def draw_head_deltas(result: AblationResult, run: RunSection, checkpoint: str, path: Path) -> Path:
    """Layers x heads heatmaps of the single-head deltas (percentage points) per mode, on one
    diverging scale centred on 0; heads significant after Holm's correction are boxed."""
    deltas = {MODE_TITLES[mode]: 100 * np.asarray(result["heads"][mode]["delta"]) for mode in MODES}
    limit = max(max(float(abs(grid).max()) for grid in deltas.values()), 0.1)
    grids = {title: grid.tolist() for title, grid in deltas.items()}
    significant = {}
    for mode in MODES:
        cells = np.argwhere(np.asarray(result["heads"][mode]["p_holm"]) < ALPHA)
        significant[MODE_TITLES[mode]] = [(int(layer), int(head)) for layer, head in cells]
    return draw_side_by_side_grids(
        grids,
        path,
        title=f"Disabling one head: {run_title(run)}, {checkpoint_title(checkpoint)} (intact "
        f"{100 * result['intact']:.1f}; boxed: significant after Holm)",
        colorbar_label=f"change of dev {result['metric']} (points)",
        vmin=-limit,
        vmax=limit,
        cmap="RdBu",
        boxed=significant,
    )


def draw_layer_deltas(result: AblationResult, run: RunSection, checkpoint: str, path: Path) -> Path:
    """Per-layer bars of the whole-layer deltas per mode, with their simultaneous bootstrap intervals
    (the level of the Holm-adjusted tests); a bar whose test is significant is outlined."""
    figure, axes = plt.subplots(figsize=(5.6, 3.6))
    layers = np.arange(1, len(result["layers"][MODES[0]]["delta"]) + 1)
    width = 0.8 / len(MODES)
    for index, (mode, colour) in enumerate(zip(MODES, (OKABE_ITO["blue"], OKABE_ITO["orange"]))):
        stats = {key: 100 * grid for key, grid in family_grids(result["layers"][mode]).items()}
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


def draw_pruning(result: AblationResult, run: RunSection, checkpoint: str, path: Path) -> Path:
    """Cross-fitted score against the share of heads pruned: importance order, oracle order, and
    our random orders' mean with their spread (one standard deviation); the importance order's
    area against theirs, with its interval, under the title."""
    pruning = result["pruning"]
    fractions = 100 * np.asarray(pruning["fractions"])
    randoms = sum(is_random(order) for order in pruning["curves"])
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
        if evidence := versus(pruning, baseline):
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


def draw_importance(
    importances: dict[str, list[list[float]]], entry: AblationEntry, run: RunSection, path: Path
) -> Path:
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
        rho = stats[VS_COSINE["importance"]]
        panel.set_xlabel("cosine similarity of the head's maps\n(pre-trained vs fine-tuned)")
        panel.xaxis.set_major_locator(mpl.ticker.MaxNLocator(4))  # similarities near 1 have long tick labels
        panel.set_ylabel(f"{checkpoint_title(after)} importance")
        panel.set_title("Spearman rho " + ("n/a" if rho is None else f"{rho:.2f}"), fontsize=9)
        panel.grid(alpha=0.3)
    suptitle(figure, f"Head importance (Michel et al., normalised per layer): {run_title(run)}")
    return save(figure, path)
