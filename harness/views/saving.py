"""How a figure is written. Figures are drawn only from stored results (``summary.json``
entries), never from live tensors. Each is written as PNG and, by default, as PDF (vector,
TrueType fonts embedded; text in DejaVu Sans, `harness.views.font`); `figure_formats` chooses
the vector copies (PDF, SVG or none), with a footnote where its drawer says what it was drawn
from (`figure_note`: a quick look's sample), and checked when saved
(`harness.views.figure_checks`). Drawing modules take ``plt`` from here: pyplot, imported and set up
for the house's figures where the first is made (`harness.views.lazy`).
"""

from __future__ import annotations

import logging
import struct
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from harness.config import DEFAULT_FIGURE_FORMATS
from harness.views.lazy import Deferred, mpl, plt
from harness.views.titles import wrapped
from harness.views.tokens import TOKEN_NAMES, model_tokens, rename_tokens
from tasks.files import atomic_path

if TYPE_CHECKING:
    from harness.views import figure_checks
else:
    figure_checks = Deferred("harness.views.figure_checks")

DPI = 200
# zlib's level 3, not 6: a run's PNGs are about a sixth larger and deflated in 0.56 of the time.
PNG_COMPRESSION = 3
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
UP = 2  # PNG's filter of a row by its difference from the row above
log = logging.getLogger(__name__)
# What the figures saved within `figure_note` were drawn from, said under each (empty: nothing to say).
_NOTE: ContextVar[str] = ContextVar("figure_note", default="")
# The files each figure saved within `figure_formats` is written as.
_FORMATS: ContextVar[tuple[str, ...]] = ContextVar("figure_formats", default=DEFAULT_FIGURE_FORMATS)
NOTE_SIZE = 7  # points: the footnote's font size
NOTE_LINE = 0.14  # inches per line of the footnote, in the strip added under the figure for it
NOTE_COLOUR = "#555555"


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
    return DrawingSettings(TOKEN_NAMES.get(), _FORMATS.get(), _NOTE.get())


@contextmanager
def drawn_as(settings: DrawingSettings) -> Iterator[None]:
    """Within the block figures are drawn with ``settings`` (`drawing_settings` of another process)."""
    with model_tokens(settings.tokens), figure_formats(settings.formats), figure_note(settings.note):
        yield


def save(figure: plt.Figure, path: Path) -> Path:
    """Write a figure as PNG (``path``) and its vector copies beside it (`figure_formats`: PDF
    unless asked otherwise), check it, close it (figures are many;
    keep memory flat). Figures with colour bars have a layout engine of their own (constrained
    layout, or `harness.views.head_grid`'s for head grids: tight layout clashes with a colour bar
    shared by panels); the others are laid out tight here. Nothing is cropped when
    saved (cropping draws a figure twice; the check finds any text that cropping would rescue),
    and the one raster drawing is both checked and written as the PNG. Within `figure_note` the
    figure grows a strip at the bottom for its footnote."""
    figure.set_dpi(DPI)
    rename_tokens(figure)
    lay_out(figure, add_footnote(figure, _NOTE.get()))
    figure.canvas.draw()
    for problem in figure_checks.figure_problems(figure):
        log.warning("figure %s: %s", path.name, problem)
    with atomic_path(path) as temporary:
        temporary.write_bytes(png_bytes(np.asarray(figure_checks.agg_canvas(figure).buffer_rgba())))
    # A vector copy keeps the layout just checked: a layout engine left on would lay the figure out
    # again (a dry-run drawing and the layout: a third of the PDF's time) at its own resolution.
    figure.set_layout_engine(None)
    for copy in vector_copies(path):
        with atomic_path(copy) as temporary:
            figure.savefig(temporary, format=copy.suffix[1:])
    plt.close(figure)
    return path


def png_bytes(rgba: np.ndarray) -> bytes:
    """A PNG of an RGBA canvas's colours (8-bit RGB: a figure is opaque), every row filtered by its
    difference from the row above and deflated at `PNG_COMPRESSION`. Pillow tries PNG's five filters
    on every row and keeps the best: on a MiniLM run's 62 figures that choice took 2.3-2.7 s of
    encoding where one filter takes 1.0 s, and saved 3% of their size (7.0 MB against 7.2)."""
    height, width, _ = rgba.shape
    colours = rgba[:, :, :3].reshape(height, width * 3)
    rows = np.empty((height, 1 + width * 3), np.uint8)
    rows[:, 0] = UP
    rows[0, 1:] = colours[0]
    np.subtract(colours[1:], colours[:-1], out=rows[1:, 1:])  # modulo 256, as the filter is
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8 bits a channel, RGB, deflate, no interlace
    return (
        PNG_SIGNATURE
        + png_chunk(b"IHDR", header)
        + png_chunk(b"IDAT", zlib.compress(rows.data, PNG_COMPRESSION))
        + png_chunk(b"IEND", b"")
    )


def png_chunk(kind: bytes, data: bytes) -> bytes:
    """A PNG chunk: its length, kind, data and the CRC of its kind and data."""
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(data, zlib.crc32(kind)))


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
        0.01,
        strip / 2 / height,
        text,
        fontsize=NOTE_SIZE,
        color=NOTE_COLOUR,
        ha="left",
        va="center",
        gid=figure_checks.FOOTNOTE,
    )
    return strip / height


def lay_out(figure: plt.Figure, bottom: float) -> None:
    """Lay ``figure`` out above the share ``bottom`` of its height (its footnote's strip): tight,
    or by its own layout engine where it has one (see `save`)."""
    engine = figure.get_layout_engine()
    taking_rect = (mpl.layout_engine.ConstrainedLayoutEngine, mpl.layout_engine.TightLayoutEngine)
    if engine is None:  # without a footnote no rect: tight layout measures every axes again to fit one
        figure.tight_layout(rect=(0, bottom, 1, 1) if bottom else None)
    elif bottom and isinstance(engine, taking_rect):
        engine.set(rect=(0, bottom, 1, 1 - bottom))


def vector_copies(path: Path) -> list[Path]:
    """The vector copies (`figure_formats`) written beside a figure's PNG."""
    return [path.with_suffix(f".{kind}") for kind in _FORMATS.get() if kind != "png"]
