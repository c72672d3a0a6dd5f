"""Grids of head heatmaps laid out from a few measured texts instead of constrained layout.

Constrained layout measures every text of every panel twice before a figure is drawn, which is
about two fifths of a head grid's time (a run draws dozens of them). The panels of a grid have
the same ticks and axis labels, so one panel's margins, each row's tallest title and each
colour bar's labels, measured once, place every panel: the grid is laid out in inches from the
figure's top left corner, and the figure is sized to hold it. The axis labels are pinned where
that measurement placed them (as far from each panel and bar as matplotlib puts them): left to
itself, matplotlib measures every tick label of every panel again, at each drawing, to place
its axis labels. Figures are checked as they are
saved (`harness.views.saving.save`), so a text this arithmetic let off the canvas or onto
another would be reported.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import matplotlib.pyplot as plt
from matplotlib.layout_engine import LayoutEngine
from matplotlib.text import Text

MARGIN = 0.08  # inches around the grid
GAP = 0.14  # inches between a panel's labels and the next thing beside or under it
BAR_PAD = 0.1  # inches between the panels and their colour bar
BAR_WIDTH = 0.13  # inches


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


def lay_out_grid(
    figure: plt.Figure,
    panels: Sequence[Sequence[plt.Axes]],
    groups: Sequence[tuple[int, plt.Axes]],
    panel_size: tuple[float, float],
    heading: Callable[[plt.Figure], Text],
) -> None:
    """Place ``panels`` (rows x columns of axes with the same ticks and axis labels, each
    ``panel_size`` inches wide and high), the colour bar of each group of columns (``groups``:
    (how many columns, its colour bar's axes), left to right) right of its columns and as tall as
    the rows, and over them the figure's title that ``heading`` adds once the figure has its
    width (titles are wrapped to it); size ``figure`` to hold them."""
    renderer = figure.canvas.get_renderer()
    inch = figure.dpi  # pixels per inch

    def extent(text: Text) -> tuple[float, float]:
        if not (text.get_visible() and text.get_text()):
            return 0.0, 0.0
        box = text.get_window_extent(renderer)
        return box.width / inch, box.height / inch

    width, height = panel_size
    first = panels[0][0]
    around = first.get_tightbbox(renderer, for_layout_only=True)
    inside = first.get_window_extent(renderer)
    left_labels = (inside.x0 - around.x0) / inch
    right_overhang = max(0.0, (around.x1 - inside.x1) / inch)
    bottom_labels = (inside.y0 - around.y0) / inch
    title_pad = first.titleOffsetTrans.transform((0, 0))[1] / inch  # the title's distance above the panel
    # where measuring placed the axis labels, in pixels from the panel: every panel's are pinned there
    x_label, y_label = first.xaxis.label.get_position(), first.yaxis.label.get_position()
    x_label_gap, y_label_gap = inside.y0 - x_label[1], inside.x0 - y_label[0]

    tops, y = [], 0.0  # each row's panel top, from the top of the first row's titles
    for row in panels:
        y += max(extent(axes.title)[1] for axes in row) + title_pad
        tops.append(y)
        y += height + bottom_labels + GAP
    bar_top, bar_height = tops[0], tops[-1] + height - tops[0]

    lefts, bars, x = [], [], MARGIN
    for count, bar in groups:
        for _ in range(count):
            x += left_labels
            lefts.append(x)
            x += width + right_overhang + GAP
        x += BAR_PAD - right_overhang - GAP
        bars.append((bar, x))
        bar.set_position((0, 0, BAR_WIDTH / figure.get_figwidth(), bar_height / figure.get_figheight()))
        bar_around, bar_inside = bar.get_tightbbox(renderer, for_layout_only=True), bar.get_window_extent(renderer)
        bar_label = bar.yaxis.label.get_position()
        bar.yaxis.set_label_coords(1 + (bar_label[0] - bar_inside.x1) / (BAR_WIDTH * inch), bar_label[1])
        x += BAR_WIDTH + max(0.0, (bar_around.x1 - bar_inside.x1) / inch) + GAP
    figure.set_figwidth(x - GAP + MARGIN)
    title = heading(figure)
    above = MARGIN + (extent(title)[1] + GAP if title.get_text() else 0.0)
    boxes = [
        (axes, Box(lefts[column], above + tops[index], width, height))
        for index, row in enumerate(panels)
        for column, axes in enumerate(row)
    ]
    boxes += [(bar, Box(left, above + bar_top, BAR_WIDTH, bar_height)) for bar, left in bars]
    for row in panels:
        for axes in row:
            axes.xaxis.set_label_coords(x_label[0], -x_label_gap / (height * inch))
            axes.yaxis.set_label_coords(-y_label_gap / (width * inch), y_label[1])
    figure.set_figheight(above + y - GAP + MARGIN)
    figure.set_layout_engine(InchLayout(boxes, title, MARGIN))
