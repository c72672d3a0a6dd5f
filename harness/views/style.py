"""Paper-ready figure helpers shared by the analyses.

Layers and heads are shown 1-indexed, as in both papers. Figures are drawn only from
stored results (``summary.json`` entries), never from live tensors. Each is written as PNG
and, by default, as PDF (vector, TrueType fonts embedded; text in DejaVu Sans,
`harness.views.font`); `figure_formats` chooses the vector copies (PDF, SVG or none), with
a footnote where its drawer says what it was drawn from (`figure_note`: a quick look's
sample), and checked when saved: a label that leaves the canvas, tick labels that run
into each other, text drawn over an error bar, a title that says a thing twice, a colour
outside the colour-blind-safe palette or a checkpoint's raw name ("pretrained") are logged as
a warning naming the figure.
"""

from __future__ import annotations

import logging
import re
import textwrap
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, NamedTuple

import matplotlib

matplotlib.use("Agg")  # headless: figures go to files
import matplotlib.pyplot as plt
import numpy as np
from cycler import cycler
from matplotlib.collections import Collection
from matplotlib.colors import Colormap, ListedColormap, to_rgb, to_rgba
from matplotlib.container import ErrorbarContainer
from matplotlib.image import AxesImage
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.text import Text
from matplotlib.ticker import FuncFormatter, ScalarFormatter
from matplotlib.transforms import Bbox
from PIL import Image

from harness.config import DEFAULT_FIGURE_FORMATS
from harness.views.font import use_lean_font
from harness.views.grid_layout import lay_out_grid
from tasks.files import atomic_path

DPI = 200
# zlib's level 3, not PIL's 6: a run's PNGs are about a tenth larger and written in three fifths of the time.
PNG_COMPRESSION = 3
matplotlib.rcParams["pdf.fonttype"] = 42  # TrueType (Type 42) fonts, not Type 3: editable text, as journals ask
matplotlib.rcParams["svg.fonttype"] = "none"  # text as text, editable in a vector editor
use_lean_font()
log = logging.getLogger(__name__)
# The figures and tables name special tokens by role, as BERT calls them; while a run's are drawn
# (`model_tokens`) each role is written as the model calls it ({"[CLS]": "<s>", "[SEP]": "</s>"}).
_TOKEN_NAMES: ContextVar[dict[str, str] | None] = ContextVar("token_names", default=None)
# What the figures saved within `figure_note` were drawn from, said under each (empty: nothing to say).
_NOTE: ContextVar[str] = ContextVar("figure_note", default="")
# The files each figure saved within `figure_formats` is written as.
_FORMATS: ContextVar[tuple[str, ...]] = ContextVar("figure_formats", default=DEFAULT_FIGURE_FORMATS)
NOTE_SIZE = 7  # points: the footnote's font size
NOTE_LINE = 0.14  # inches per line of the footnote, in the strip added under the figure for it
NOTE_COLOUR = "#555555"
FOOTNOTE = "footnote"  # the footnote's id among the figure's texts
PARENTHESISED = re.compile(r"\(([^()]*)\)")
CHECKPOINT_TITLES = {"pretrained": "pre-trained", "finetuned": "fine-tuned"}
# Okabe & Ito's palette: told apart with every common colour-vision deficiency and in greyscale
# print by lightness. Lines and bars take these (and greys); images take the colour maps below.
OKABE_ITO = {
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "green": "#009E73",
    "orange": "#E69F00",
    "purple": "#CC79A7",
    "sky": "#56B4E9",
    "yellow": "#F0E442",
    "black": "#000000",
}
GREY = "#999999"
matplotlib.rcParams["axes.prop_cycle"] = cycler(color=list(OKABE_ITO.values()))
# Perceptually uniform (viridis, magma, cividis) or colour-blind-safe diverging (ColorBrewer RdBu, PuOr).
SAFE_COLOUR_MAPS = {"viridis", "magma", "cividis", "RdBu", "RdBu_r", "PuOr", "PuOr_r"}
DIFFERENCE_MAP = "RdBu_r"  # fine-tuned minus pre-trained: red where attention grew, blue where it fell
# A checkpoint has one colour in every figure: pre-trained blue, fine-tuned vermillion.
CHECKPOINT_COLOURS = {"pretrained": OKABE_ITO["blue"], "finetuned": OKABE_ITO["vermillion"]}
RAW_CHECKPOINT_NAME = re.compile(r"\b(pretrained|finetuned)\b")


def checkpoint_title(name: str) -> str:
    """How a checkpoint is named in figures and tables ("pre-trained", "fine-tuned", or its own name)."""
    return CHECKPOINT_TITLES.get(name, name)


def checkpoint_colour(name: str, index: int) -> str:
    """The colour of a checkpoint (``index``: its place among the run's checkpoints, for names
    beyond the two usual ones)."""
    others = [colour for colour in OKABE_ITO.values() if colour not in CHECKPOINT_COLOURS.values()]
    return CHECKPOINT_COLOURS.get(name, others[index % len(others)])


def model_title(model: str) -> str:
    """A model as figures name it: a hub id or alias as given, a local folder by its name (never
    a path of the machine that ran it)."""
    return Path(model).name if Path(model).is_absolute() else model


def run_title(run: dict[str, Any]) -> str:
    """``"minilm on rte"``: the model and the task of a run, for figure titles."""
    return f"{model_title(run.get('model', 'model'))} on {run.get('task', 'task')}"


def wrapped(title: str, width_inches: float, fontsize: float = 9) -> str:
    """``title`` broken into lines that fit ``width_inches`` at ``fontsize`` points (a character
    is about 0.55 em wide); its own line breaks kept."""
    width = max(24, int(width_inches * 72 / (0.55 * fontsize)))
    return "\n".join(textwrap.fill(line, width) for line in title.split("\n"))


def axes_title(axes: plt.Axes, title: str, fontsize: float = 9) -> None:
    """A panel's title, broken into lines that fit the panel's width (a long model name or hub id
    must not push it off the canvas)."""
    width = axes.get_position().width * axes.figure.get_figwidth()
    axes.set_title(wrapped(title, width, fontsize), fontsize=fontsize)


def suptitle(figure: plt.Figure, title: str, fontsize: float = 10) -> Text:
    """The figure's title, broken into lines that fit its width."""
    return figure.suptitle(wrapped(title, figure.get_figwidth() - 0.5, fontsize), fontsize=fontsize)


@contextmanager
def model_tokens(names: dict[str, str] | None) -> Iterator[None]:
    """Within the block figures (`save`) and tables (`own_tokens`) name the special tokens as
    ``names`` does (role -> the model's token; the run's ``special_tokens``)."""
    token = _TOKEN_NAMES.set(dict(names or {}))
    try:
        yield
    finally:
        _TOKEN_NAMES.reset(token)


@contextmanager
def figure_formats(formats: Sequence[str]) -> Iterator[None]:
    """Figures saved within are written in ``formats``: PNG, then any of `harness.config.VECTOR_FORMATS`."""
    token = _FORMATS.set(tuple(formats))
    try:
        yield
    finally:
        _FORMATS.reset(token)


@contextmanager
def figure_note(note: str) -> Iterator[None]:
    """Within the block every figure `save` writes carries ``note`` as its footnote (what it was
    drawn from, where a reader must be told: ``"quick look: 64 dev examples"``); "" adds none."""
    token = _NOTE.set(note)
    try:
        yield
    finally:
        _NOTE.reset(token)


class DrawingSettings(NamedTuple):
    """What the figures saved at a point are drawn with: `model_tokens`, `figure_formats` and `figure_note`."""

    tokens: dict[str, str] | None
    formats: tuple[str, ...]
    note: str


def drawing_settings() -> DrawingSettings:
    """The settings figures saved here and now are drawn with (for `drawn_as` in another process)."""
    return DrawingSettings(_TOKEN_NAMES.get(), _FORMATS.get(), _NOTE.get())


@contextmanager
def drawn_as(settings: DrawingSettings) -> Iterator[None]:
    """Within the block figures are drawn with ``settings`` (`drawing_settings` of another process)."""
    with model_tokens(settings.tokens), figure_formats(settings.formats), figure_note(settings.note):
        yield


def own_tokens(text: str, markdown: bool = False, names: dict[str, str] | None = None) -> str:
    """``text`` with each special token's role name replaced by the model's own token (``names``,
    default those of `model_tokens`); in ``markdown`` as code, so RoBERTa's ``<s>`` is no tag."""
    for role, name in ((_TOKEN_NAMES.get() or {}) if names is None else names).items():
        if name != role:
            text = text.replace(role, f"`{name}`" if markdown else name)
    return text


def rename_tokens(figure: plt.Figure) -> None:
    """Every text of ``figure`` (titles, labels, ticks, legends) with the model's own token names."""
    names = _TOKEN_NAMES.get()
    if not names or all(name == role for role, name in names.items()):  # BERT's own names: nothing to rename
        return
    for axes in figure.axes:  # tick labels are made again from their formatter at each drawing
        for axis in (axes.xaxis, axes.yaxis):
            if any(own_tokens(label.get_text()) != label.get_text() for label in axis.get_ticklabels()):
                formatter = axis.get_major_formatter()
                axis.set_major_formatter(
                    FuncFormatter(
                        lambda value, position, named=formatter: own_tokens(named(value, position), names=names)
                    )
                )
    for text in figure.findobj(Text):
        renamed = own_tokens(text.get_text())
        if renamed != text.get_text():
            text.set_text(renamed)


def save(figure: plt.Figure, path: Path) -> Path:
    """Write a figure as PNG (``path``) and its vector copies beside it (`figure_formats`: PDF
    unless asked otherwise), check it, close it (figures are many;
    keep memory flat). Figures with colour bars have a layout engine of their own (constrained
    layout, or `harness.views.grid_layout` for head grids: tight layout clashes with a colour bar
    shared by panels); the others are laid out tight here. Nothing is cropped when
    saved (cropping draws a figure twice; the check finds any text that cropping would rescue),
    and the one raster drawing is both checked and written as the PNG. Within `figure_note` the
    figure grows a strip at the bottom for its footnote."""
    figure.set_dpi(DPI)
    rename_tokens(figure)
    lay_out(figure, add_footnote(figure, _NOTE.get()))
    figure.canvas.draw()
    for problem in figure_problems(figure):
        log.warning("figure %s: %s", path.name, problem)
    with atomic_path(path) as temporary:
        image = Image.fromarray(np.asarray(figure.canvas.buffer_rgba())[..., :3])
        image.save(temporary, format="png", compress_level=PNG_COMPRESSION)
    # A vector copy keeps the layout just checked: a layout engine left on would lay the figure out
    # again (a dry-run drawing and the layout: a third of the PDF's time) at its own resolution.
    figure.set_layout_engine(None)
    for copy in vector_copies(path):
        with atomic_path(copy) as temporary:
            figure.savefig(temporary, format=copy.suffix[1:])
    plt.close(figure)
    return path


def add_footnote(figure: plt.Figure, note: str) -> float:
    """Add ``note`` under ``figure`` as its footnote, broken into lines that fit its width, in a
    strip the figure grows for it; the strip's share of the new height (0 without a note)."""
    if not note:
        return 0.0
    text = wrapped(note, figure.get_figwidth() - 0.3, NOTE_SIZE)
    strip = NOTE_LINE * (text.count("\n") + 1) + 0.06
    height = figure.get_figheight() + strip
    figure.set_figheight(height)
    figure.text(
        0.01, strip / 2 / height, text, fontsize=NOTE_SIZE, color=NOTE_COLOUR, ha="left", va="center", gid=FOOTNOTE
    )
    return strip / height


def lay_out(figure: plt.Figure, bottom: float) -> None:
    """Lay ``figure`` out above the share ``bottom`` of its height (its footnote's strip): tight,
    or by its own layout engine where it has one (see `save`)."""
    engine = figure.get_layout_engine()
    if engine is None:
        figure.tight_layout(rect=(0, bottom, 1, 1))
    elif bottom:
        engine.set(rect=(0, bottom, 1, 1 - bottom))


def vector_copies(path: Path) -> list[Path]:
    """The vector copies (`figure_formats`) written beside a figure's PNG."""
    return [path.with_suffix(f".{kind}") for kind in _FORMATS.get() if kind != "png"]


def figure_problems(figure: plt.Figure) -> list[str]:
    """Everything `save` warns about on a drawn figure: layout, error bars, titles, colours and
    wording; its artists found and each text measured once for all the checks."""
    drawn = DrawnFigure(figure)
    return (
        layout_problems(figure, drawn)
        + error_bar_problems(figure, drawn)
        + title_problems(figure)
        + colour_problems(figure, drawn)
        + wording_problems(figure, drawn)
    )


class DrawnFigure:
    """What the checks read of a drawn figure: its artists (found in one walk), its texts, those
    drawn (visible, not empty, and no tick label outside its axis's view, which matplotlib keeps
    but does not draw), each axis's tick labels drawn and not, and each text's extent (measured
    once, when first asked for)."""

    def __init__(self, figure: plt.Figure) -> None:
        self.renderer = figure.canvas.get_renderer()
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


def error_bar_boxes(axes: plt.Axes, renderer: Any) -> list[Bbox]:
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
            widths = np.resize(column.get_linewidths(), len(column.get_segments()))
            boxes += [
                Bbox(column.get_transform().transform(segment)).padded(width * pixels / 2)
                for segment, width in zip(column.get_segments(), widths)
            ]
    drawn = (Bbox.intersection(box, axes.bbox) for box in boxes)
    return [box for box in drawn if box is not None]


def title_problems(figure: plt.Figure) -> list[str]:
    """A title that says a thing twice, read as a reader reads it: the figure's title, then each
    panel's. A parenthesised phrase, or one item of one ("(64 inputs, spaCy tags) ... (64
    inputs)"), or a clause (the parts between colons and semicolons) said twice is found."""
    title = figure.get_suptitle()
    panels = [
        ": ".join(part for part in (axes.get_title(loc) for loc in ("left", "center", "right")) if part)
        for axes in figure.axes
    ]
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
        colours = [*artist.get_facecolors(), *artist.get_edgecolors()]
    else:
        colours = [artist.get_facecolor(), artist.get_edgecolor()] if artist.get_fill() else [artist.get_edgecolor()]
    return [
        to_rgb(colour)
        for colour in colours
        if not (isinstance(colour, str) and colour == "none") and to_rgba(colour)[3] > 0
    ]


def safe_colours() -> np.ndarray:
    """(colours, 3) RGB: the palette and 256 steps of every safe colour map (a line may take its
    colour from a map, as the layers of the MDS figure do)."""
    steps = np.linspace(0, 1, 256)
    return np.concatenate(
        [
            np.array([to_rgb(c) for c in OKABE_ITO.values()]),
            *(matplotlib.colormaps[name](steps)[:, :3] for name in sorted(SAFE_COLOUR_MAPS)),
        ]
    )


SAFE_COLOURS = safe_colours()


def safe_colour(rgb: tuple[float, float, float]) -> bool:
    """A palette colour, a colour of a safe colour map or a grey (black and white included)."""
    return max(rgb) - min(rgb) < 0.02 or bool((np.abs(SAFE_COLOURS - np.asarray(rgb)).max(axis=1) < 0.02).any())


def safe_colour_map(colour_map: Colormap) -> bool:
    """A named safe map, or a listed map of palette colours (the pattern classes)."""
    if isinstance(colour_map, ListedColormap) and colour_map.name not in SAFE_COLOUR_MAPS:
        return all(safe_colour(to_rgb(colour)) for colour in colour_map.colors)
    return colour_map.name in SAFE_COLOUR_MAPS


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
    return problems


def axes_of(figure: plt.Figure) -> list[tuple[plt.Axes, str, matplotlib.axis.Axis]]:
    """Each panel of ``figure`` with each of its axes and the axis's name (x, y)."""
    return [(axes, name, axis) for axes in figure.axes for name, axis in (("x", axes.xaxis), ("y", axes.yaxis))]


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
    series: dict[str, Sequence[float]],
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
    rows: int, columns: int, *, sharey: str | bool = "row", layout: str | None = None
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


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A Markdown table: the header row, its rule, then one line per row."""
    lines = ["| " + " | ".join(header) + " |", "|---" * len(header) + "|"]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows]) + "\n"


def difference_title(before: str, after: str) -> str:
    """``"fine-tuned − pre-trained"``: the title of a panel showing ``after`` minus ``before``."""
    return f"{checkpoint_title(after)} − {checkpoint_title(before)}"


def titled_pairs(pairs: Sequence[Sequence[str]]) -> list[tuple[str, str]]:
    """A run's declared (before, after) checkpoint pairs by their titles, as the panels are keyed."""
    return [(checkpoint_title(before), checkpoint_title(after)) for before, after in pairs]


def draw_side_by_side_grids(
    grids: dict[str, Sequence[Sequence[float]]],
    path: Path,
    *,
    title: str,
    colorbar_label: str,
    differences: Sequence[tuple[str, str]] = (),
    vmin: float | None = None,
    vmax: float | None = None,
    cmap: str = "viridis",
) -> Path:
    """One row of head heatmaps (`draw_grid_rows` with a single row)."""
    return draw_grid_rows(
        {"": grids},
        path,
        title=title,
        colorbar_label=colorbar_label,
        differences=differences,
        vmin=vmin,
        vmax=vmax,
        cmap=cmap,
    )


def draw_grid_rows(
    rows: dict[str, dict[str, Sequence[Sequence[float]]]],
    path: Path,
    *,
    title: str,
    colorbar_label: str,
    differences: Sequence[tuple[str, str]] = (),
    vmin: float | None = None,
    vmax: float | None = None,
    cmap: str = "viridis",
) -> Path:
    """Head heatmaps (heads on x, layers on y, layer 1 on top): one row per entry of ``rows``
    (row label -> panel title -> (layers, heads) grid, the same panel titles in every row),
    sharing one colour scale that spans the values unless ``vmin``/``vmax`` fix it; then, per
    (before, after) pair of panel titles in ``differences``, a panel of after minus before on a
    diverging scale centred on 0 with its own colour bar, so small changes stay visible."""
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
    columns = per_row + len(differences)
    # a quarter inch per cell; small models still get panels wide and tall enough for their labels
    panel_size = (max(0.26 * heads + 0.1, 1.7), max(0.26 * layers + 0.35, 1.5))
    figure = plt.figure(dpi=DPI)  # measured (`lay_out_grid`) as it is drawn
    axes = np.array([[figure.add_axes((0, 0, 1, 1)) for _ in range(columns)] for _ in arrays])
    bar_length = len(arrays) * (panel_size[1] + 0.7) - 0.6
    scale = {
        "vmin": min(g.min() for g in values) if vmin is None else vmin,
        "vmax": max(g.max() for g in values) if vmax is None else vmax,
        "cmap": cmap,
    }
    limit = max((float(np.abs(g).max()) for panels in changes.values() for g in panels.values()), default=0.0) or 1.0
    change_scale = {"vmin": -limit, "vmax": limit, "cmap": DIFFERENCE_MAP}  # symmetric: white is no change
    for panels, (row, grids) in zip(axes, arrays.items()):
        for column, (name, grid, kind) in enumerate(
            [*((n, g, scale) for n, g in grids.items()), *((n, g, change_scale) for n, g in changes[row].items())]
        ):
            panels[column].imshow(grid, aspect="auto", **kind)
            title_text = wrapped(f"{row}: {name}" if row else name, panel_size[0] + 0.5)
            style_head_axes(panels[column], layers, heads, title_text, tick_size=7)
    groups = [(per_row, figure.add_axes((0, 0, 1, 1)))]
    label = wrapped(colorbar_label, bar_length, fontsize=10)
    shared = figure.colorbar(axes[0, 0].images[0], cax=groups[0][1], label=label)
    shared.formatter = ScalarFormatter(useOffset=False)  # values near 1 stay readable, no "+9.999e-1"
    if differences:
        groups.append((len(differences), figure.add_axes((0, 0, 1, 1))))
        figure.colorbar(axes[0, -1].images[0], cax=groups[1][1], label="change")
    lay_out_grid(figure, axes, groups, panel_size, lambda sized: suptitle(sized, title))
    return save(figure, path)
