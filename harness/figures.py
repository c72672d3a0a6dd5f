"""Paper-ready figure helpers shared by the analyses.

Layers and heads are shown 1-indexed, as in both papers. Figures are drawn only from
stored results (``summary.json`` entries), never from live tensors. Each is written as PNG
and as PDF (vector, TrueType fonts embedded), and checked when saved: a label that leaves
the canvas or tick labels that run into each other are logged as a warning naming the figure.
"""

from __future__ import annotations

import logging
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # headless: figures go to files
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.text import Text  # noqa: E402
from matplotlib.ticker import ScalarFormatter  # noqa: E402

from tasks.files import atomic_path  # noqa: E402

DPI = 200
matplotlib.rcParams["pdf.fonttype"] = 42  # TrueType fonts embedded whole: editable text in the PDF
log = logging.getLogger(__name__)
CHECKPOINT_TITLES = {"pretrained": "pre-trained", "finetuned": "fine-tuned"}


def checkpoint_title(name: str) -> str:
    """How a checkpoint is named in figures and tables ("pre-trained", "fine-tuned", or its own name)."""
    return CHECKPOINT_TITLES.get(name, name)


def model_title(model: str) -> str:
    """A model as figures name it: a hub id or alias as given, a local folder by its name (never
    a path of the machine that ran it)."""
    return Path(model).name if Path(model).is_absolute() else model


def run_title(run: dict[str, Any]) -> str:
    """``"minilm on rte"``: the model and the task of a run, for figure titles."""
    return f"{model_title(run.get('model', 'model'))} on {run.get('task', 'task')}"


def wrapped(title: str, width_inches: float, fontsize: float = 9) -> str:
    """``title`` broken into lines that fit ``width_inches`` at ``fontsize`` points (a character
    is about 0.55 em wide)."""
    return textwrap.fill(title, max(24, int(width_inches * 72 / (0.55 * fontsize))))


def save(figure: plt.Figure, path: Path) -> Path:
    """Write a figure as PNG (``path``) and PDF beside it, check its layout, close it (figures
    are many; keep memory flat)."""
    figure.tight_layout()
    return _write(figure, path, {})


def pdf_sibling(path: Path) -> Path:
    """The PDF written beside a figure's PNG."""
    return path.with_suffix(".pdf")


def _write(figure: plt.Figure, path: Path, options: dict[str, Any]) -> Path:
    for target, form in ((path, "png"), (pdf_sibling(path), "pdf")):
        with atomic_path(target) as temporary:
            figure.savefig(temporary, dpi=DPI, format=form, **options)
    for problem in layout_problems(figure, cropped="bbox_inches" in options):
        log.warning("figure %s: %s", path.name, problem)
    plt.close(figure)
    return path


def layout_problems(figure: plt.Figure, cropped: bool = False) -> list[str]:
    """Text outside the canvas (unless the figure is saved cropped to its contents, which keeps
    all text by construction) and tick labels of one axis that overlap, on a drawn figure.
    Tick labels outside an axis's view are ignored: matplotlib keeps them but does not draw them."""
    renderer = figure.canvas.get_renderer()
    canvas = figure.bbox
    axes_ticks = [(axes, name, *drawn_tick_labels(axis)) for axes in figure.axes
                  for name, axis in (("x", axes.xaxis), ("y", axes.yaxis))]
    undrawn = {id(label) for *_, hidden in axes_ticks for label in hidden}
    problems = []
    if not cropped:
        for text in figure.findobj(Text):
            if text.get_visible() and text.get_text().strip() and id(text) not in undrawn:
                box = text.get_window_extent(renderer)
                if (box.x0 < canvas.x0 - 1 or box.y0 < canvas.y0 - 1
                        or box.x1 > canvas.x1 + 1 or box.y1 > canvas.y1 + 1):
                    problems.append(f"text {text.get_text()!r} leaves the canvas")
    for axes, name, drawn, _ in axes_ticks:
        boxes = [label.get_window_extent(renderer) for label in drawn]
        if any(first.overlaps(second) for first, second in zip(boxes, boxes[1:])):
            problems.append(f"{name} tick labels of {axes.get_title() or 'a panel'!r} overlap")
    return problems


def drawn_tick_labels(axis: matplotlib.axis.Axis) -> tuple[list[Text], list[Text]]:
    """The major tick labels of ``axis`` that are drawn (non-empty, within the view), in order,
    and those that are not."""
    low, high = sorted(axis.get_view_interval())
    margin = 1e-9 * max(abs(low), abs(high), 1.0)
    drawn, hidden = [], []
    for tick in axis.get_major_ticks():
        for label in (tick.label1, tick.label2):
            if not (label.get_visible() and label.get_text().strip()):
                continue
            (drawn if low - margin <= tick.get_loc() <= high + margin else hidden).append(label)
    return drawn, hidden


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
    width = max(0.45 * heads + 2.2, 4.5)
    figure, axes = plt.subplots(figsize=(width, max(0.4 * layers + 1.6, 3.2)), layout="constrained")
    image = axes.imshow(grid, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    style_head_axes(axes, layers, heads, wrapped(title, width - 1.5))
    colorbar = figure.colorbar(image, ax=axes, label=colorbar_label)
    colorbar.formatter = ScalarFormatter(useOffset=False)  # values near 1 stay readable, no "+9.999e-1"
    colorbar.update_ticks()
    return save_with_colorbar(figure, path)


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
    axes.set_title(wrapped(title, 3.6), fontsize=9)
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
    """Like `harness.figures.save`, without tight_layout (it clashes with a colour bar shared by
    panels): cropped to the figure's contents instead."""
    return _write(figure, path, {"bbox_inches": "tight"})
