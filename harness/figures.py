"""Paper-ready figure helpers shared by the analyses, and `redraw` from a stored summary.

Layers and heads are shown 1-indexed, as in both papers. Figures are drawn only from
``summary.json`` content, never from live tensors.
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

DPI = 200


def save(figure: plt.Figure, path: Path) -> Path:
    """Write a figure as PNG and close it (figures are many; keep memory flat)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(path, dpi=DPI)
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


def redraw(summary: dict[str, Any], out_dir: Path) -> list[Path]:
    """Every figure of every analysis whose keys are in ``summary``."""
    from harness.analyses import ANALYSES

    written: list[Path] = []
    for analysis in ANALYSES.values():
        if analysis.stored_in(summary):
            written.extend(analysis.draw(summary, out_dir))
    return written
