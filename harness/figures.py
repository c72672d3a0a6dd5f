"""Paper-ready figure helpers shared by the analyses.

Layers and heads are shown 1-indexed, as in both papers. Figures are drawn only from
stored results (``summary.json`` entries), never from live tensors.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # headless: figures go to files
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.ticker import ScalarFormatter  # noqa: E402

from tasks.files import atomic_path  # noqa: E402

DPI = 200
CHECKPOINT_TITLES = {"pretrained": "pre-trained", "finetuned": "fine-tuned"}


def checkpoint_title(name: str) -> str:
    """How a checkpoint is named in figures and tables ("pre-trained", "fine-tuned", or its own name)."""
    return CHECKPOINT_TITLES.get(name, name)


def run_title(run: dict[str, Any]) -> str:
    """``"minilm on rte"``: the model and the task of a run, for figure titles."""
    return f"{run.get('model', 'model')} on {run.get('task', 'task')}"


def save(figure: plt.Figure, path: Path) -> Path:
    """Write a figure as PNG and close it (figures are many; keep memory flat)."""
    figure.tight_layout()
    with atomic_path(path) as temporary:
        figure.savefig(temporary, dpi=DPI, format="png")
    plt.close(figure)
    return path


def style_head_axes(axes: plt.Axes, layers: int, heads: int, title: str,
                    tick_size: float | None = None, title_size: float = 9) -> None:
    """Ticks 1..heads on x and 1..layers on y (layer 1 at the top), axis labels and a title."""
    axes.set_xticks(range(heads), [str(h + 1) for h in range(heads)], fontsize=tick_size)
    axes.set_yticks(range(layers), [str(layer + 1) for layer in range(layers)], fontsize=tick_size)
    axes.set_xlabel("head")
    axes.set_ylabel("layer")
    axes.set_title(title, fontsize=title_size)


def draw_head_grid(
    values: Sequence[Sequence[float]], path: Path, *, title: str, colorbar_label: str,
    vmin: float | None = None, vmax: float | None = None, cmap: str = "viridis",
) -> Path:
    """Heatmap with heads on the x axis and layers on the y axis (layer 1 at the top)."""
    grid = np.asarray(values, dtype=float)
    layers, heads = grid.shape
    figure, axes = plt.subplots(figsize=(0.45 * heads + 2.2, 0.4 * layers + 1.6))
    image = axes.imshow(grid, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    style_head_axes(axes, layers, heads, title)
    colorbar = figure.colorbar(image, ax=axes, label=colorbar_label)
    colorbar.formatter = ScalarFormatter(useOffset=False)  # values near 1 stay readable, no "+9.999e-1"
    colorbar.update_ticks()
    return save(figure, path)


def draw_layer_lines(
    series: dict[str, Sequence[float]], path: Path, *, title: str, ylabel: str,
) -> Path:
    """One line per series over layers (1-indexed)."""
    figure, axes = plt.subplots(figsize=(5, 3.4))
    for label, values in series.items():
        layers = np.arange(1, len(values) + 1)
        axes.plot(layers, values, marker="o", label=label)
        axes.set_xticks(layers)
    axes.set_xlabel("layer")
    axes.set_ylabel(ylabel)
    axes.set_title(title, fontsize=9)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    return save(figure, path)


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
    with atomic_path(path) as temporary:
        figure.savefig(temporary, dpi=DPI, bbox_inches="tight", format="png")
    plt.close(figure)
    return path
