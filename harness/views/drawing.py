"""Drawing primitives shared by the views: head heatmaps (heads on x, layers on y, layer 1 at
the top, 1-indexed as in both papers; side by side or in rows, with difference panels), lines and
Clark's per-head dots over layers, and grids of panels.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

from harness.views.lazy import Deferred
from harness.views.saving import plt, save
from harness.views.titles import wrapped

if TYPE_CHECKING:
    from harness.views import head_grid
else:
    head_grid = Deferred("harness.views.head_grid")


def style_head_axes(
    axes: plt.Axes, layers: int, heads: int, title: str, tick_size: float | None = None, title_size: float = 9
) -> None:
    """Ticks 1..heads on x and 1..layers on y (layer 1 at the top), axis labels and a title (at
    the panel's top, where matplotlib would place it over fixed ticks: placed, it is not measured
    against the axes' tick labels at each drawing)."""
    axes.set_xticks(range(heads), [str(h + 1) for h in range(heads)], fontsize=tick_size)
    axes.set_yticks(range(layers), [str(layer + 1) for layer in range(layers)], fontsize=tick_size)
    axes.set_xlabel("head")
    axes.set_ylabel("layer")
    axes.set_title(title, fontsize=title_size, y=1.0)


def draw_head_grid(
    values: Sequence[Sequence[float]],
    path: Path,
    *,
    title: str,
    colorbar_label: str,
    vmin: float | None = None,
    vmax: float | None = None,
    cmap: str = "viridis",
) -> Path:
    """One heatmap with heads on the x axis and layers on the y axis (layer 1 at the top)."""
    return draw_side_by_side_grids(
        {"": values}, path, title=title, colorbar_label=colorbar_label, vmin=vmin, vmax=vmax, cmap=cmap
    )


def draw_layer_lines(
    series: Mapping[str, Sequence[float]],
    path: Path,
    *,
    title: str,
    ylabel: str,
) -> Path:
    """One line per series over layers (1-indexed)."""
    figure, axes = plt.subplots(figsize=(5, 3.4))
    for label, values in series.items():
        layers = np.arange(1, len(values) + 1)
        axes.plot(layers, values, marker="o", label=label)
        axes.set_xticks(layers)
    axes.set_xlabel("layer")
    axes.set_ylabel(ylabel)
    axes.set_title(wrapped(title, 3.6), fontsize=9)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    return save(figure, path)


def scatter_by_layer(
    axes: plt.Axes,
    per_head: Sequence[Sequence[float]],
    color: str,
    label: str,
    *,
    band: tuple[int, int] = (0, 1),
    linestyle: str = "-",
    marker: str = "o",
) -> None:
    """Clark's style: one dot per head at its layer, and a line through the layer means.
    ``band`` (index, count): series overlaid on one panel put their dots side by side within
    each layer's slot, so that none hides another."""
    grid = np.asarray(per_head, dtype=float)
    layers = np.arange(1, grid.shape[0] + 1)
    index, count = band
    width = 0.36 / count
    jitter = np.linspace(-0.18 + index * width, -0.18 + (index + 1) * width, grid.shape[1])
    axes.scatter(
        (layers[:, None] + jitter[None, :]).ravel(),
        grid.ravel(),
        s=9,
        color=color,
        alpha=0.45,
        marker=marker,
        linewidths=0,
    )
    axes.plot(layers, grid.mean(axis=1), color=color, marker=marker, linestyle=linestyle, label=label)
    axes.set_xticks(layers)
    axes.grid(alpha=0.3)


def panel_grid(
    rows: int, columns: int, *, sharey: Literal["none", "all", "row", "col"] | bool = "row", layout: str | None = None
) -> tuple[plt.Figure, np.ndarray]:
    """A rows x columns grid of panels; ``layout="constrained"`` for figures with a colour bar
    shared by panels (see `save`)."""
    figure, axes = plt.subplots(
        rows, columns, figsize=(4.2 * columns, 2.6 * rows + 0.6), sharey=sharey, squeeze=False, layout=layout
    )
    return figure, axes


def panels_for(count: int, columns: int = 2, layout: str | None = None) -> tuple[plt.Figure, list[plt.Axes]]:
    """``count`` panels, ``columns`` to a row, as a flat list (spare cells of the last row removed)."""
    rows = -(-count // columns)
    figure, axes = panel_grid(rows, min(columns, count), sharey=False, layout=layout)
    for spare in axes.ravel()[count:]:
        spare.remove()
    return figure, list(axes.ravel()[:count])


def draw_side_by_side_grids(
    grids: Mapping[str, Sequence[Sequence[float]]],
    path: Path,
    *,
    title: str,
    colorbar_label: str,
    differences: Sequence[tuple[str, str]] = (),
    vmin: float | None = None,
    vmax: float | None = None,
    cmap: str = "viridis",
    boxed: Mapping[str, Sequence[tuple[int, int]]] | None = None,
) -> Path:
    """One row of head heatmaps (`draw_grid_rows` with a single row)."""
    return head_grid.draw_grid_rows(
        {"": grids},
        path,
        title=title,
        colorbar_label=colorbar_label,
        differences=differences,
        vmin=vmin,
        vmax=vmax,
        cmap=cmap,
        boxed=boxed,
    )
