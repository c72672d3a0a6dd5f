"""Figures of Clark et al.'s analyses (surface, gradients, clustering), drawn from summary.json only.

Each figure puts the pre-trained and the fine-tuned checkpoint side by side with shared
axes, so what fine-tuning moved is visible at a glance. Layers and heads are 1-indexed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np

from harness.analyses.surface import STATISTICS as STATISTIC_LABELS
from harness.figures import DPI, save, style_head_axes

CHECKPOINT_TITLES = {"pretrained": "pre-trained", "finetuned": "fine-tuned"}
HEATMAP_STATISTICS = ("previous", "next", "cls", "sep", "punct", "entropy")
GRADIENT_COLOURS = {"sep": "tab:blue", "punct": "tab:purple", "cls": "tab:red", "other": "tab:gray"}
GRADIENT_LABELS = {"sep": "to [SEP]", "punct": 'to "." or ","', "cls": "to [CLS]", "other": "to other tokens"}


def run_title(summary: dict[str, Any]) -> str:
    return f"{summary.get('model', 'model')} on {summary.get('task', 'task')}"


def scatter_by_layer(axes: plt.Axes, per_head: Sequence[Sequence[float]], color: str, label: str) -> None:
    """Clark's style: one dot per head at its layer, and a line through the layer means."""
    grid = np.asarray(per_head, dtype=float)
    layers = np.arange(1, grid.shape[0] + 1)
    jitter = np.linspace(-0.15, 0.15, grid.shape[1])
    axes.scatter((layers[:, None] + jitter[None, :]).ravel(), grid.ravel(), s=9, color=color, alpha=0.45)
    axes.plot(layers, grid.mean(axis=1), color=color, marker="o", label=label)
    axes.set_xticks(layers)
    axes.grid(alpha=0.3)


def panel_grid(rows: int, columns: int, *, sharey: str | bool = "row") -> tuple[plt.Figure, np.ndarray]:
    figure, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 2.6 * rows + 0.6),
                                sharey=sharey, squeeze=False)
    return figure, axes


def draw_by_layer(summary: dict[str, Any], rows: dict[str, dict[str, str]], path: Path, *,
                  suptitle: str, reference: dict[str, float] | None = None) -> Path:
    """Rows of panels (one per entry of ``rows``: statistic -> colour), one column per checkpoint."""
    checkpoints = summary["surface"]["checkpoints"]
    figure, axes = panel_grid(len(rows), len(checkpoints))
    for column, (checkpoint, stats) in enumerate(checkpoints.items()):
        for row, (ylabel, series) in enumerate(rows.items()):
            panel = axes[row, column]
            for statistic, color in series.items():
                scatter_by_layer(panel, stats["per_head"][statistic], color, STATISTIC_LABELS[statistic])
            for label, value in (reference or {}).items():
                panel.axhline(value, color="black", linestyle="--", linewidth=1, label=label)
            panel.set_ylabel(ylabel)
            panel.set_title(CHECKPOINT_TITLES.get(checkpoint, checkpoint), fontsize=9)
            if len(series) > 1 or reference:
                panel.legend(fontsize=7)
        axes[-1, column].set_xlabel("layer")
    figure.suptitle(f"{suptitle}: {run_title(summary)}", fontsize=10)
    return save(figure, path)


def draw_side_by_side_grids(grids: dict[str, Sequence[Sequence[float]]], path: Path, *, title: str,
                            colorbar_label: str, vmin: float | None = None, vmax: float | None = None,
                            cmap: str = "viridis") -> Path:
    """Head heatmaps (heads on x, layers on y, layer 1 on top) sharing one colour scale."""
    arrays = {name: np.asarray(grid, dtype=float) for name, grid in grids.items()}
    vmin = min(a.min() for a in arrays.values()) if vmin is None else vmin
    vmax = max(a.max() for a in arrays.values()) if vmax is None else vmax
    layers, heads = next(iter(arrays.values())).shape
    figure, axes = plt.subplots(1, len(arrays), figsize=(0.4 * heads * len(arrays) + 2.5, 0.4 * layers + 1.6),
                                squeeze=False)
    for panel, (name, grid) in zip(axes[0], arrays.items()):
        image = panel.imshow(grid, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
        style_head_axes(panel, layers, heads, name, tick_size=7)
    figure.colorbar(image, ax=list(axes[0]), label=colorbar_label)
    figure.suptitle(title, fontsize=10)
    return save_with_colorbar(figure, path)


def save_with_colorbar(figure: plt.Figure, path: Path) -> Path:
    """Like `harness.figures.save`, without tight_layout (it clashes with a colour bar shared by panels)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=DPI, bbox_inches="tight")
    plt.close(figure)
    return path


def label_change_table(surface: dict[str, Any]) -> str:
    """Markdown table of the heads whose Clark behaviour labels changed."""
    checkpoints = list(surface["checkpoints"])
    lines = ["| layer | head | " + " | ".join(CHECKPOINT_TITLES.get(c, c) for c in checkpoints) + " |",
             "|---|---|" + "---|" * len(checkpoints)]
    for change in surface["label_changes"]:
        cells = [", ".join(change[c]) or "-" for c in checkpoints]
        lines.append(f"| {change['layer']} | {change['head']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def draw_surface(summary: dict[str, Any], out_dir: Path) -> list[Path]:
    surface = summary["surface"]
    written = [
        draw_by_layer(summary, {"attention to [CLS]": {"cls": "tab:red"},
                                "attention to [SEP]": {"sep": "tab:blue"},
                                'attention to "." or ","': {"punct": "tab:purple"},
                                "attention to [SEP]\nby row type": {"sep_to_sep": "tab:green", "rest_to_sep": "tab:gray"}},
                      out_dir / "surface_special_tokens.png", suptitle="Attention to special tokens (Clark Fig. 2)"),
        draw_by_layer(summary, {"previous token": {"previous": "tab:orange"}, "next token": {"next": "tab:cyan"},
                                "itself": {"self": "tab:olive"}},
                      out_dir / "surface_relative_position.png", suptitle="Attention by relative position"),
        draw_by_layer(summary, {"mean row entropy\n(nats)": {"entropy": "tab:blue"},
                                "[CLS] row entropy\n(nats)": {"cls_entropy": "tab:red"}},
                      out_dir / "surface_entropy.png", suptitle="Attention entropy (Clark Fig. 4)",
                      reference={"uniform attention": surface["uniform_entropy"]}),
    ]
    for statistic in HEATMAP_STATISTICS:
        grids = {CHECKPOINT_TITLES.get(c, c): stats["per_head"][statistic] for c, stats in surface["checkpoints"].items()}
        bounded = statistic != "entropy"
        written.append(draw_side_by_side_grids(
            grids, out_dir / f"surface_heads_{statistic}.png",
            title=f"{STATISTIC_LABELS[statistic]} per head: {run_title(summary)}",
            colorbar_label="nats" if not bounded else "mean attention", vmin=0.0, vmax=1.0 if bounded else None))
    table = out_dir / "surface_label_changes.md"
    table.write_text(f"# Heads whose Clark label changed: {run_title(summary)}\n\n{label_change_table(surface)}")
    return [*written, table]


def draw_gradients(summary: dict[str, Any], out_dir: Path) -> list[Path]:
    gradients = summary["gradients"]
    usable = {c: g for c, g in gradients["checkpoints"].items() if g["loss"] is not None}
    if not usable:
        return []
    figure, axes = panel_grid(1, len(usable), sharey=False)
    for panel, (checkpoint, stats) in zip(axes[0], usable.items()):
        for category, color in GRADIENT_COLOURS.items():
            values = stats["per_layer"][category]
            panel.plot(np.arange(1, len(values) + 1), values, marker="o", color=color, label=GRADIENT_LABELS[category])
        panel.set_xticks(np.arange(1, len(values) + 1))
        panel.set_xlabel("layer")
        panel.set_ylabel("mean |dL / d attention|")
        panel.set_title(f"{CHECKPOINT_TITLES.get(checkpoint, checkpoint)}: {stats['loss']} loss", fontsize=9)
        panel.grid(alpha=0.3)
        panel.legend(fontsize=7)
    figure.suptitle(f"Gradient-based importance of attention (Clark Fig. 3): {run_title(summary)}", fontsize=10)
    return [save(figure, out_dir / "gradients_by_layer.png")]


def draw_clustering(summary: dict[str, Any], out_dir: Path) -> list[Path]:
    clustering = summary["clustering"]
    checkpoints = clustering["checkpoints"]
    layers, heads = clustering["num_layers"], clustering["num_heads"]
    points = np.asarray(clustering["mds"], dtype=float).reshape(len(checkpoints), layers, heads, 2)
    colours = plt.get_cmap("viridis")(np.linspace(0, 1, layers))
    figure, axes = plt.subplots(figsize=(6.4, 5.4))
    markers = ("o", "^", "s")
    for layer in range(layers):
        if len(checkpoints) == 2:
            for head in range(heads):
                axes.plot(points[:, layer, head, 0], points[:, layer, head, 1], color=colours[layer],
                          alpha=0.5, linewidth=0.8)
        for index, checkpoint in enumerate(checkpoints):
            axes.scatter(points[index, layer, :, 0], points[index, layer, :, 1], color=colours[layer],
                         marker=markers[index], s=22, edgecolor="black", linewidth=0.3)
    for index, checkpoint in enumerate(checkpoints):
        axes.scatter([], [], marker=markers[index], color="white", edgecolor="black",
                     label=CHECKPOINT_TITLES.get(checkpoint, checkpoint))
    scale = plt.cm.ScalarMappable(cmap="viridis", norm=plt.Normalize(0.5, layers + 0.5))
    figure.colorbar(scale, ax=axes, label="layer", ticks=range(1, layers + 1))
    axes.legend(fontsize=8, title="line: pre-trained -> fine-tuned", title_fontsize=7)
    axes.set_xlabel("MDS dimension 1")
    axes.set_ylabel("MDS dimension 2")
    axes.set_title(f"Heads embedded by Jensen-Shannon divergence (Clark Fig. 6):\n{run_title(summary)}, "
                   f"{clustering['tokens_used']} tokens", fontsize=9)
    written = [save(figure, out_dir / "clustering_mds.png")]
    if "between_versions" in clustering:
        written.append(draw_side_by_side_grids(
            {"JS divergence, pre-trained vs fine-tuned head": clustering["between_versions"]},
            out_dir / "clustering_between_versions.png",
            title=run_title(summary), colorbar_label="mean JS divergence per token (nats)", vmin=0.0, cmap="magma"))
    return written
