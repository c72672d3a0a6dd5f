"""The checks of every figure as it is saved (`harness.views.saving.save`): a label that
leaves the canvas, tick labels that run into each other, text drawn over an error bar or the
footnote, a title that says a thing twice, a colour outside the colour-blind-safe palette
(`harness.views.palette`) or a checkpoint's raw name ("pretrained"); each found is logged as a
warning naming the figure.
"""

from __future__ import annotations

import re
from collections import Counter

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.backend_bases import RendererBase
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import Collection
from matplotlib.colors import to_rgb, to_rgba
from matplotlib.container import ErrorbarContainer
from matplotlib.image import AxesImage
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.text import Text
from matplotlib.transforms import Bbox

from harness.views.palette import safe_colour, safe_colour_map

FOOTNOTE = "footnote"  # the footnote's id among the figure's texts
# A panel drawn without an axes of its own (`harness.views.head_grid`) has its title and tick labels
# as texts with these ids: its title is read with the figure's, each row of its tick labels checked.
PANEL_TITLE = "panel title"
TICK_LABELS = "tick labels"
PARENTHESISED = re.compile(r"\(([^()]*)\)")
RAW_CHECKPOINT_NAME = re.compile(r"\b(pretrained|finetuned)\b")


def figure_problems(figure: plt.Figure) -> list[str]:
    """Everything `save` warns about on a drawn figure: layout, error bars, titles, colours and
    wording; its artists found and each text measured once for all the checks."""
    drawn = DrawnFigure(figure)
    return (
        layout_problems(figure, drawn)
        + error_bar_problems(figure, drawn)
        + title_problems(figure, drawn)
        + colour_problems(figure, drawn)
        + wording_problems(figure, drawn)
    )


def agg_canvas(figure: plt.Figure) -> FigureCanvasAgg:
    """The figure's canvas, an Agg one (the drawing layer selects Agg: `harness.views.saving`), whose
    renderer measures text and whose pixels are written."""
    canvas = figure.canvas
    if not isinstance(canvas, FigureCanvasAgg):
        raise TypeError(f"figures are drawn by Agg, not {type(canvas).__name__}")
    return canvas


class DrawnFigure:
    """What the checks read of a drawn figure: its artists (found in one walk), its texts, those
    drawn (visible, not empty, and no tick label outside its axis's view, which matplotlib keeps
    but does not draw), each axis's tick labels drawn and not, and each text's extent (measured
    once, when first asked for)."""

    def __init__(self, figure: plt.Figure) -> None:
        self.renderer = agg_canvas(figure).get_renderer()
        self.artists = figure.findobj()
        self.texts = [artist for artist in self.artists if isinstance(artist, Text)]
        self.tick_labels = {id(axis): drawn_tick_labels(axis) for _, _, axis in axes_of(figure)}
        undrawn = {id(label) for _, hidden in self.tick_labels.values() for label in hidden}
        self.drawn_texts = [
            text for text in self.texts if text.get_visible() and text.get_text().strip() and id(text) not in undrawn
        ]
        self.extents: dict[int, Bbox] = {}

    def extent(self, text: Text) -> Bbox:
        """The window extent of ``text``, as drawn."""
        if id(text) not in self.extents:
            self.extents[id(text)] = text.get_window_extent(self.renderer)
        return self.extents[id(text)]


def error_bar_problems(figure: plt.Figure, drawn: DrawnFigure | None = None) -> list[str]:
    """Text drawn over a line or cap of an error bar (a value label hiding the interval it sits
    on, a legend over it), on a drawn figure."""
    drawn = drawn or DrawnFigure(figure)
    bars = [box for axes in figure.axes for box in error_bar_boxes(axes, drawn.renderer)]
    return sorted(
        {
            f"text {text.get_text()!r} overlaps an error bar"
            for text in (drawn.drawn_texts if bars else [])
            if any(drawn.extent(text).overlaps(bar) for bar in bars)
        }
    )


def error_bar_boxes(axes: plt.Axes, renderer: RendererBase) -> list[Bbox]:
    """The window extents of each line and cap of the error bars of ``axes``, as wide as they are
    drawn (each cap alone: the line of a bar's caps holds every bar's, and its extent spans them)
    and cut to the panel, as they are drawn."""
    pixels = axes.figure.dpi / 72  # per point
    boxes: list[Bbox] = []
    for container in axes.containers:
        if not isinstance(container, ErrorbarContainer):
            continue
        _, caps, columns = container.lines
        for cap in caps:  # a cap is a marker: as wide as its size, as high as its stroke
            half_width, half_height = cap.get_markersize() * pixels / 2, cap.get_markeredgewidth() * pixels / 2
            boxes += [
                Bbox.from_extents(x - half_width, y - half_height, x + half_width, y + half_height)
                for x, y in cap.get_transform().transform(cap.get_xydata())
            ]
        for column in columns:
            widths = np.resize(column.get_linewidth(), len(column.get_segments()))
            boxes += [
                Bbox(column.get_transform().transform(segment)).padded(width * pixels / 2)
                for segment, width in zip(column.get_segments(), widths)
            ]
    drawn = (Bbox.intersection(box, axes.bbox) for box in boxes)
    return [box for box in drawn if box is not None]


def tick_labels_id(axis: str, panel: str) -> str:
    """The id of the tick labels of ``panel``'s ``axis`` (x, y) drawn as texts of their own."""
    return f"{TICK_LABELS}:{axis}:{panel}"


def title_problems(figure: plt.Figure, drawn: DrawnFigure | None = None) -> list[str]:
    """A title that says a thing twice, read as a reader reads it: the figure's title, then each
    panel's. A parenthesised phrase, or one item of one ("(64 inputs, spaCy tags) ... (64
    inputs)"), or a clause (the parts between colons and semicolons) said twice is found."""
    title = figure.get_suptitle()
    panels = [
        ": ".join(part for part in (axes.get_title(loc) for loc in ("left", "center", "right")) if part)
        for axes in figure.axes
    ]
    panels += [text.get_text() for text in (drawn or DrawnFigure(figure)).texts if text.get_gid() == PANEL_TITLE]
    found: dict[str, str] = {}  # each phrase said twice, with the first title that says it
    for read in dict.fromkeys([title, *(f"{title}: {panel}" for panel in panels if panel)]):
        for phrase in repeated_phrases(read):
            found.setdefault(phrase, " ".join(read.split()))
    return [f"title {read!r} says {phrase!r} twice" for phrase, read in found.items()]


def repeated_phrases(title: str) -> list[str]:
    """The parenthesised phrases (each item of a list in parentheses) and clauses that ``title``
    says more than once, compared lower-cased with its line breaks as spaces."""
    text = " ".join(title.split())
    items = [item for group in PARENTHESISED.findall(text) for item in re.split(r"[,;]", group)]
    clauses = re.split(r"[:;]", PARENTHESISED.sub("", text))
    said = Counter(" ".join(part.lower().split()) for part in items + clauses)
    return [phrase for phrase, count in said.items() if phrase and count > 1]


def wording_problems(figure: plt.Figure, drawn: DrawnFigure | None = None) -> list[str]:
    """Text that names a checkpoint by its key ("pretrained") instead of its title ("pre-trained")."""
    return [
        f"text {text.get_text()!r} names a checkpoint by its key; use checkpoint_title"
        for text in (drawn or DrawnFigure(figure)).texts
        if RAW_CHECKPOINT_NAME.search(text.get_text())
    ]


def colour_problems(figure: plt.Figure, drawn: DrawnFigure | None = None) -> list[str]:
    """Lines, markers and bars in a colour outside Okabe & Ito's palette and the greys, and
    images or colour bars in a colour map outside `SAFE_COLOUR_MAPS`."""
    problems = set()
    coloured = (Line2D, Collection, Patch, AxesImage)
    for artist in (artist for artist in (drawn or DrawnFigure(figure)).artists if isinstance(artist, coloured)):
        if isinstance(artist, AxesImage) or (isinstance(artist, Collection) and artist.get_array() is not None):
            if not safe_colour_map(artist.get_cmap()):
                problems.add(f"colour map {artist.get_cmap().name!r} is not colour-blind safe")
            continue
        for colour in drawn_colours(artist):
            if not safe_colour(colour):
                problems.add(f"colour {colour} is outside the colour-blind-safe palette")
    return sorted(problems)


def drawn_colours(artist: matplotlib.artist.Artist) -> list[tuple[float, float, float]]:
    """The RGB colours a line, collection or patch fills or strokes with (transparent ones left out)."""
    if isinstance(artist, Line2D):
        colours = [artist.get_color(), artist.get_markerfacecolor()]
    elif isinstance(artist, Collection):
        colours = [*artist.get_facecolor(), *artist.get_edgecolor()]
    elif isinstance(artist, Patch):
        colours = [artist.get_facecolor(), artist.get_edgecolor()] if artist.get_fill() else [artist.get_edgecolor()]
    else:  # an artist that draws no colour of its own
        colours = []
    return [
        to_rgb(colour)
        for colour in colours
        if not (isinstance(colour, str) and colour == "none") and to_rgba(colour)[3] > 0
    ]


def layout_problems(figure: plt.Figure, drawn: DrawnFigure | None = None) -> list[str]:
    """Text outside the canvas, tick labels of one axis that overlap and text over the footnote,
    on a drawn figure. Tick labels outside an axis's view are ignored: matplotlib keeps them but
    does not draw them."""
    drawn = drawn or DrawnFigure(figure)
    canvas = figure.bbox
    notes = [drawn.extent(text) for text in drawn.drawn_texts if text.get_gid() == FOOTNOTE]
    problems = []
    for text in drawn.drawn_texts:
        box = drawn.extent(text)
        if box.x0 < canvas.x0 - 1 or box.y0 < canvas.y0 - 1 or box.x1 > canvas.x1 + 1 or box.y1 > canvas.y1 + 1:
            problems.append(f"text {text.get_text()!r} leaves the canvas")
        if text.get_gid() != FOOTNOTE and any(box.overlaps(note) for note in notes):
            problems.append(f"text {text.get_text()!r} overlaps the footnote")
    for axes, name, axis in axes_of(figure):
        boxes = [drawn.extent(label) for label in drawn.tick_labels[id(axis)][0]]
        if any(first.overlaps(second) for first, second in zip(boxes, boxes[1:])):
            problems.append(f"{name} tick labels of {axes.get_title() or 'a panel'!r} overlap")
    rows: dict[str, list[Bbox]] = {}  # tick labels drawn as texts of their own, by panel and axis
    for text in drawn.drawn_texts:
        gid = str(text.get_gid())
        if gid.startswith(f"{TICK_LABELS}:"):
            rows.setdefault(gid, []).append(drawn.extent(text))
    for gid, boxes in rows.items():
        _, name, panel = gid.split(":", 2)
        if any(first.overlaps(second) for first, second in zip(boxes, boxes[1:])):
            problems.append(f"{name} tick labels of {panel!r} overlap")
    return problems


def axes_of(figure: plt.Figure) -> list[tuple[plt.Axes, str, matplotlib.axis.Axis]]:
    """Each panel of ``figure`` with each of its axes and the axis's name (x, y)."""
    return [(axes, name, axis) for axes in figure.axes for name, axis in (("x", axes.xaxis), ("y", axes.yaxis))]


def drawn_tick_labels(axis: matplotlib.axis.Axis) -> tuple[list[Text], list[Text]]:
    """The major tick labels of ``axis`` that are drawn (non-empty, within the view), in order,
    and those that are not."""
    low, high = sorted(axis.get_view_interval())
    margin = 1e-9 * max(abs(low), abs(high), 1.0)
    drawn: list[Text] = []
    hidden: list[Text] = []
    for tick in axis.get_major_ticks():
        for label in (tick.label1, tick.label2):
            if not (label.get_visible() and label.get_text().strip()):
                continue
            (drawn if low - margin <= tick.get_loc() <= high + margin else hidden).append(label)
    return drawn, hidden
