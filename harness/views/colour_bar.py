"""A colour bar drawn on a head grid's canvas (`harness.views.head_grid`) as matplotlib draws one.

matplotlib's colour bar is an axes of its own: building it, measuring its tick labels to place its
label, and drawing its ticks cost a head-grid figure more than its panels did. Here the bar is an
image of the scale's colours in a box, its frame and tick marks are segments of the canvas's line
collection, and its tick labels, offset and label are texts placed once. Ticks, labels and their
positions are matplotlib's: its default tick choice for a linear axis (`MaxNLocator`, as many
ticks as fit two label heights apart, at most nine), its number formatting (the bar's
`ScalarFormatter`, given every tick chosen, as an axis gives it), tick marks 3.5 pt long, labels
3.5 pt from them, the label 4 pt right of the widest tick label (of the bar itself where no tick
is drawn) and the offset ("1e-5") 3 pt over the bar's right end.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import RendererAgg
from matplotlib.image import AxesImage
from matplotlib.text import Text
from matplotlib.ticker import MaxNLocator, ScalarFormatter

from harness.views.axis_marks import LABEL_PAD, LABEL_SIZE, POINT, TICK, TICK_PAD
from harness.views.figure_checks import tick_labels_id

OFFSET_PAD = 3 * POINT  # between the bar's top and its offset's baseline
TICK_SIZE = 10  # points: matplotlib's default tick labels, as its colour bars have them
LABEL = "colour bar label"  # the id of a bar's label among the canvas's texts
MAX_TICKS = 9  # matplotlib's most bins on an axis
TICK_STEPS = (1, 2, 2.5, 5, 10)  # the steps matplotlib's default locator picks ticks from
Segment = list[tuple[float, float]]


def spread_limits(low: float, high: float) -> tuple[float, float]:
    """A colour scale's limits widened as a colour bar widens a scale of one value (a tenth of
    the value each way, or +-0.1 around 0), so the bar and the panels it labels agree."""
    if high - low > max(abs(low), abs(high)) * 1e-15:
        return low, high
    if high == 0 == low:
        return -0.1, 0.1
    return low - 0.1 * abs(low), high + 0.1 * abs(high)


@dataclass
class ColourBar:
    """The colour bar of ``image``'s scale, labelled ``label``, its numbers written by
    ``formatter`` (matplotlib's default: an offset when it saves digits), drawn on ``canvas``, an
    axes whose data units are inches down from its figure's top left: `measure` chooses its ticks
    and sizes it for a length, `place` puts it in its box."""

    canvas: Axes
    image: AxesImage
    label: str
    formatter: ScalarFormatter = field(default_factory=ScalarFormatter)
    ticks: list[tuple[float, Text]] = field(init=False, default_factory=list)  # each one's value and label
    reach: float = field(init=False, default=0.0)  # how far the tick labels reach right of the bar, in inches
    label_text: Text = field(init=False)

    def __post_init__(self) -> None:
        self.label_text = self.canvas.text(
            0, 0, self.label, fontsize=LABEL_SIZE, ha="center", va="top", rotation=90, rotation_mode="anchor", gid=LABEL
        )

    @property
    def limits(self) -> tuple[float, float]:
        """The scale's (low, high)."""
        low, high = self.image.get_clim()
        return float(low), float(high)

    def measure(self, renderer: RendererAgg, length: float) -> float:
        """Choose and write the ticks of a bar ``length`` inches long; how far its tick labels and
        label reach right of it, in inches."""
        low, high = self.limits
        bins = int(np.clip(np.floor(length / POINT / (TICK_SIZE * 2)), 1, MAX_TICKS))
        chosen = MaxNLocator(nbins=bins, steps=list(TICK_STEPS)).tick_values(low, high)
        self.formatter.create_dummy_axis()
        assert self.formatter.axis is not None
        self.formatter.axis.set_view_interval(low, high)
        # every tick chosen, as an axis gives them, so that their labels have the same digits
        labels = self.formatter.format_ticks(list(chosen))
        close = 1e-10 * (high - low)
        gid = tick_labels_id("y", f"colour bar: {self.label}")
        self.ticks = [
            (float(value), self.canvas.text(0, 0, text, fontsize=TICK_SIZE, ha="left", va="center_baseline", gid=gid))
            for value, text in zip(chosen, labels)
            if low - close <= value <= high + close
        ]
        if self.ticks:
            self.reach = TICK + TICK_PAD + max(inches(text, renderer) for _, text in self.ticks)
        return self.reach + LABEL_PAD + inches(self.label_text, renderer)

    def place(self, left: float, top: float, width: float, height: float) -> list[Segment]:
        """The bar in its box (inches from the top left), its tick labels, offset and label beside
        it; its frame's and tick marks' segments."""
        low, high = self.limits
        right, bottom = left + width, top + height
        edges = np.linspace(low, high, self.image.cmap.N + 1)
        self.canvas.imshow(  # a band per colour of the map, as matplotlib's bar draws them
            ((edges[:-1] + edges[1:]) / 2)[::-1, np.newaxis],
            cmap=self.image.cmap,
            vmin=low,
            vmax=high,
            aspect="auto",
            interpolation="nearest",
            extent=(left, right, bottom, top),
        )
        marks = []
        for value, text in self.ticks:
            y = bottom - (value - low) / (high - low) * height
            text.set_position((right + TICK + TICK_PAD, y))
            marks.append([(right, y), (right + TICK, y)])
        if offset := self.formatter.get_offset():
            self.canvas.text(right, top - OFFSET_PAD, offset, fontsize=TICK_SIZE, ha="right", va="baseline")
        self.label_text.set_position((right + self.reach + LABEL_PAD, top + height / 2))
        return [[(left, top), (right, top), (right, bottom), (left, bottom), (left, top)], *marks]


def inches(text: Text, renderer: RendererAgg) -> float:
    """How wide ``text`` is drawn, in inches."""
    return float(text.get_window_extent(renderer).width / renderer.dpi)
