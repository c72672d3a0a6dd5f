"""Grids of head heatmaps (heads on x, layers on y, layer 1 on top) drawn on one canvas.

A run draws dozens of these, and an axes per panel made most of their cost: each panel's
matplotlib axes builds a tick object (two lines, two texts) per head and per layer, and each
drawing measures and places them again. Here the whole figure is one axes whose data units are
inches from the top left corner: each panel is an image, its frame and tick marks are one line
collection for the figure, and its tick labels, axis labels and title are texts placed once, from
a few measured sizes, where matplotlib would put them (`harness.views.axis_marks`); the colour
bars are drawn the same way (`harness.views.colour_bar`). The texts carry the ids the figure
checks read (`harness.views.figure_checks`): each panel's title is checked with the figure's
title, each row of tick labels for overlaps.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg
from matplotlib.collections import LineCollection
from matplotlib.font_manager import FontProperties
from matplotlib.image import AxesImage
from matplotlib.layout_engine import LayoutEngine
from matplotlib.text import Text
from matplotlib.ticker import ScalarFormatter

from harness.views.axis_marks import FRAME_WIDTH, LABEL_PAD, LABEL_SIZE, TICK, TICK_PAD, TITLE_PAD
from harness.views.colour_bar import ColourBar, spread_limits
from harness.views.figure_checks import PANEL_TITLE, tick_labels_id
from harness.views.palette import DIFFERENCE_MAP
from harness.views.saving import DPI, plt, save
from harness.views.titles import difference_title, suptitle, wrapped

MARGIN = 0.08  # inches around the grid
GAP = 0.14  # inches between a panel's labels and the next thing beside or under it
BAR_PAD = 0.1  # inches between the panels and their colour bar
BAR_WIDTH = 0.13  # inches
TICK_SIZE = 7  # points
TITLE_SIZE = 9


def draw_grid_rows(
    rows: Mapping[str, Mapping[str, Sequence[Sequence[float]]]],
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
    """Head heatmaps (heads on x, layers on y, layer 1 on top): one row per entry of ``rows``
    (row label -> panel title -> (layers, heads) grid, the same panel titles in every row),
    sharing one colour scale that spans the values unless ``vmin``/``vmax`` fix it; then, per
    (before, after) pair of panel titles in ``differences``, a panel of after minus before on a
    diverging scale centred on 0 with its own colour bar, so small changes stay visible. The
    (layer, head) cells ``boxed`` lists under a panel title (0-indexed) are outlined in it."""
    arrays = {
        row: {name: np.asarray(grid, dtype=float) for name, grid in panels.items()} for row, panels in rows.items()
    }
    changes = {
        row: {difference_title(before, after): panels[after] - panels[before] for before, after in differences}
        for row, panels in arrays.items()
    }
    values = [grid for panels in arrays.values() for grid in panels.values()]
    layers, heads = values[0].shape
    per_row = len(values) // len(arrays)  # the grids of a row, before its difference panels
    # a quarter inch per cell; small models still get panels wide and tall enough for their labels
    size = (max(0.26 * heads + 0.1, 1.7), max(0.26 * layers + 0.35, 1.5))
    low, high = spread_limits(
        float(min(g.min() for g in values)) if vmin is None else vmin,
        float(max(g.max() for g in values)) if vmax is None else vmax,
    )
    scale = Scale(vmin=low, vmax=high, cmap=cmap)
    limit = max((float(np.abs(g).max()) for panels in changes.values() for g in panels.values()), default=0.0) or 1.0
    change_scale = Scale(vmin=-limit, vmax=limit, cmap=DIFFERENCE_MAP)  # symmetric: white is no change
    figure = plt.figure(dpi=DPI)  # sized once its parts are measured
    grid = HeadGrid(figure, size, (layers, heads))
    outlined: list[Sequence[tuple[int, int]]] = []  # each panel's boxed cells, in the images' order
    for row, grids in arrays.items():
        panels = [*((n, g, scale) for n, g in grids.items()), *((n, g, change_scale) for n, g in changes[row].items())]
        grid.add_row([(wrapped(f"{row}: {name}" if row else name, size[0] + 0.5), g, kind) for name, g, kind in panels])
        outlined += [(boxed or {}).get(name, ()) for name, _, _ in panels]
    bar_length = len(arrays) * (size[1] + 0.7) - 0.6
    label = wrapped(colorbar_label, bar_length, fontsize=LABEL_SIZE)
    # values near 1 stay readable on the shared bar: no offset ("+9.999e-1")
    groups = [(per_row, ColourBar(grid.canvas, grid.images[0], label, ScalarFormatter(useOffset=False)))]
    if differences:
        groups.append((len(differences), ColourBar(grid.canvas, grid.images[per_row], "change")))
    grid.lay_out(groups, title)
    grid.outline([(image, cells) for image, cells in zip(grid.images, outlined) if cells])
    return save(figure, path)


class Scale(TypedDict):
    """A panel's colour scale, as `imshow` takes it."""

    vmin: float
    vmax: float
    cmap: str


@dataclass(frozen=True)
class Box:
    """A rectangle in inches, from the figure's top left corner."""

    left: float
    top: float
    width: float
    height: float


class InchLayout(LayoutEngine):
    """Keeps each axes at its `Box` and the figure's title at its height from the top, in inches:
    a strip grown under the figure (a footnote, `harness.views.saving.add_footnote`) moves nothing."""

    _adjust_compatible = False
    _colorbar_gridspec = False

    def __init__(self, boxes: Sequence[tuple[plt.Axes, Box]], title: Text, title_top: float) -> None:
        super().__init__()
        self.boxes = list(boxes)
        self.title, self.title_top = title, title_top

    def set(self, **kwargs: object) -> None:
        """Nothing to set: the strip under the figure that a footnote asks for (``rect``) is kept
        free because every box is measured from the top."""

    def execute(self, fig: plt.Figure) -> None:
        width, height = fig.get_size_inches()
        for axes, box in self.boxes:
            axes.set_position(
                (box.left / width, 1 - (box.top + box.height) / height, box.width / width, box.height / height)
            )
        self.title.set_y(1 - self.title_top / height)


class HeadGrid:
    """Rows of head heatmap panels on one canvas axes of ``figure``, each ``size`` (width,
    height) inches showing a (layers, heads) ``shape`` grid; `lay_out` places them, their texts
    and the colour bars, and sizes the figure."""

    def __init__(self, figure: plt.Figure, size: tuple[float, float], shape: tuple[int, int]) -> None:
        self.figure, self.size, self.shape = figure, size, shape
        self.canvas = figure.add_axes((0, 0, 1, 1))
        self.canvas.set_axis_off()
        self.canvas.set_xticks([])  # never drawn: no tick objects to build or to check
        self.canvas.set_yticks([])
        self.rows: list[list[tuple[Text, AxesImage]]] = []

    @property
    def images(self) -> list[AxesImage]:
        """The panels' images, row by row."""
        return [image for row in self.rows for _, image in row]

    def add_row(self, panels: Sequence[tuple[str, np.ndarray, Scale]]) -> None:
        """A row of panels, each (title, grid, `imshow` colour scale)."""
        self.rows.append(
            [
                (
                    self.canvas.text(0, 0, title, fontsize=TITLE_SIZE, ha="center", va="baseline", gid=PANEL_TITLE),
                    self.canvas.imshow(values, aspect="auto", **scale),
                )
                for title, values, scale in panels
            ]
        )

    def lay_out(self, groups: Sequence[tuple[int, ColourBar]], title: str) -> None:
        """Place the panels, each group of columns' colour bar (``groups``: (how many columns, its
        colour bar), left to right) right of its columns and as tall as the rows, and
        over them the figure's ``title`` (wrapped to the figure's width); size the figure."""
        figure, renderer = self.figure, agg_renderer(self.figure)
        (width, height), layers = self.size, self.shape[0]
        tick_width = max(text_size(renderer, str(layer + 1), TICK_SIZE)[0] for layer in range(layers))
        tick_height = text_size(renderer, "lp", TICK_SIZE)[1]
        label_height = text_size(renderer, "lp", LABEL_SIZE)[1]
        left_labels = TICK + TICK_PAD + tick_width + LABEL_PAD + label_height
        bottom_labels = TICK + TICK_PAD + tick_height + LABEL_PAD + label_height
        titles = [[above_baseline(text, renderer) for text, _ in row] for row in self.rows]
        overhang = max(0.0, *((title_width - width) / 2 for row in titles for title_width, _ in row))

        tops, y = [], 0.0  # each row's panel top, from the top of the first row's titles
        for measured in titles:
            y += max(above for _, above in measured) + TITLE_PAD
            tops.append(y)
            y += height + bottom_labels + GAP
        bar_top, bar_height = tops[0], tops[-1] + height - tops[0]

        lefts, bars, x = [], [], MARGIN
        for count, bar in groups:
            for _ in range(count):
                x += max(left_labels, overhang)
                lefts.append(x)
                x += width + overhang + GAP
            x += BAR_PAD - GAP  # clear of the last panel's title where it is wider than the panel
            bars.append((bar, x))
            x += BAR_WIDTH + bar.measure(renderer, bar_height) + GAP
        figure.set_figwidth(x - GAP + MARGIN)
        heading = suptitle(figure, title)
        above = MARGIN + (heading.get_window_extent(renderer).height / figure.dpi + GAP if heading.get_text() else 0.0)
        figure.set_figheight(above + y - GAP + MARGIN)
        page = (figure.get_figwidth(), figure.get_figheight())
        self.canvas.set_xlim(0, page[0])
        self.canvas.set_ylim(page[1], 0)  # inches down from the top
        segments: list[list[tuple[float, float]]] = []
        for top, row in zip(tops, self.rows):
            for left, (text, image) in zip(lefts, row):
                segments += self.place_panel(
                    text, image, Box(left, above + top, width, height), tick_width, tick_height
                )
        for bar, left in bars:
            segments += bar.place(left, above + bar_top, BAR_WIDTH, bar_height)
        self.canvas.add_collection(
            LineCollection(segments, colors="black", linewidths=FRAME_WIDTH, capstyle="projecting"), autolim=False
        )
        figure.set_layout_engine(InchLayout([(self.canvas, Box(0, 0, *page))], heading, MARGIN))

    def outline(self, panels: Sequence[tuple[AxesImage, Sequence[tuple[int, int]]]]) -> None:
        """Outline the (layer, head) cells of each laid-out panel's image, as a patch per cell
        1.5 pt wide would."""
        layers, heads = self.shape
        boxes = []
        for image, cells in panels:
            left, right, bottom, top = image.get_extent()
            width, height = (right - left) / heads, (bottom - top) / layers
            for layer, head in cells:
                x, y = left + head * width, top + layer * height
                boxes.append([(x, y), (x + width, y), (x + width, y + height), (x, y + height), (x, y)])
        if boxes:
            self.canvas.add_collection(
                LineCollection(boxes, colors="black", linewidths=1.5, capstyle="projecting", joinstyle="miter"),
                autolim=False,
            )

    def place_panel(
        self, title: Text, image: AxesImage, box: Box, tick_width: float, tick_height: float
    ) -> list[list[tuple[float, float]]]:
        """Put a panel's image in ``box``, its title over it, its tick labels and axis labels
        beside it where matplotlib would; its frame's and tick marks' segments."""
        (layers, heads), canvas = self.shape, self.canvas
        left, top, right, bottom = box.left, box.top, box.left + box.width, box.top + box.height
        image.set_extent((left, right, bottom, top))
        title.set_position((left + box.width / 2, top - TITLE_PAD))
        name = title.get_text()
        columns = [left + (head + 0.5) * box.width / heads for head in range(heads)]
        rows = [top + (layer + 0.5) * box.height / layers for layer in range(layers)]
        x_labels, y_labels = bottom + TICK + TICK_PAD, left - TICK - TICK_PAD
        for head, x in enumerate(columns):
            canvas.text(
                x, x_labels, str(head + 1), fontsize=TICK_SIZE, ha="center", va="top", gid=tick_labels_id("x", name)
            )
        for layer, y in enumerate(rows):
            canvas.text(
                y_labels,
                y,
                str(layer + 1),
                fontsize=TICK_SIZE,
                ha="right",
                va="center_baseline",
                gid=tick_labels_id("y", name),
            )
        canvas.text(
            left + box.width / 2, x_labels + tick_height + LABEL_PAD, "head", fontsize=LABEL_SIZE, ha="center", va="top"
        )
        canvas.text(
            y_labels - tick_width - LABEL_PAD,
            top + box.height / 2,
            "layer",
            fontsize=LABEL_SIZE,
            ha="center",
            va="bottom",
            rotation=90,
            rotation_mode="anchor",
        )
        frame = [(left, top), (right, top), (right, bottom), (left, bottom), (left, top)]
        ticks = [[(x, bottom), (x, bottom + TICK)] for x in columns] + [[(left, y), (left - TICK, y)] for y in rows]
        return [frame, *ticks]


def agg_renderer(figure: plt.Figure) -> RendererAgg:
    """The renderer ``figure`` is drawn and measured with (figures are drawn by Agg, `harness.views.saving`)."""
    canvas = figure.canvas
    assert isinstance(canvas, FigureCanvasAgg)
    return canvas.get_renderer()


def text_size(renderer: RendererAgg, text: str, fontsize: float) -> tuple[float, float]:
    """Width and height in inches of one line of ``text`` at ``fontsize`` points."""
    width, height, _ = renderer.get_text_width_height_descent(text, FontProperties(size=fontsize), ismath=False)
    return width / renderer.dpi, height / renderer.dpi


def above_baseline(text: Text, renderer: RendererAgg) -> tuple[float, float]:
    """Width of ``text`` and how far its top stands above its anchor, in inches."""
    box = text.get_window_extent(renderer)
    anchor = text.get_transform().transform(text.get_unitless_position())
    return box.width / renderer.dpi, (box.y1 - anchor[1]) / renderer.dpi
