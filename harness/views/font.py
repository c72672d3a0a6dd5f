"""The figures' text font: DejaVu Sans (matplotlib's own) reduced to the scripts figures write.

Each PDF embeds the subset of the font its text uses, and to make that subset fontTools reads
the font's layout tables for every script the font covers: with the whole of DejaVu Sans that
is about a fifth of a figure's time, tens of seconds for a run's figures. The reduced copy
keeps the glyphs, hinting, kerning and layout rules of Latin and Greek letters, punctuation,
arrows and mathematical symbols, so figures are drawn pixel for pixel as in DejaVu Sans; any
other character falls back to DejaVu Sans itself (matplotlib falls back glyph by glyph along
``font.family``). The copies are made once per font file, in matplotlib's cache folder; where
that folder cannot be written, figures use DejaVu Sans.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import matplotlib
from fontTools import subset
from fontTools.ttLib import TTFont
from matplotlib import font_manager

from tasks.files import atomic_path

FAMILY = "DejaVu Sans"
LEAN_FAMILY = "DejaVu Sans Lean"
# Basic Latin, Latin-1 and Latin Extended-A, Greek, general punctuation, super- and subscripts,
# currency, arrows, mathematical operators and geometric shapes: the fewer glyphs, the faster
# each PDF's subset.
KEPT_CHARACTERS = ((0x20, 0x7E), (0xA0, 0x17F), (0x370, 0x3FF), (0x2000, 0x20CF), (0x2190, 0x22FF), (0x25A0, 0x25FF))
# What the copy keeps besides those characters: every layout rule (kerning, ligatures), the
# names, the outline of the missing glyph, the glyph names, hinting and the legacy kern table.
SUBSET_OPTIONS = {
    "layout_features": ["*"],
    "name_IDs": ["*"],
    "name_languages": ["*"],
    "notdef_outline": True,
    "glyph_names": True,
    "hinting": True,
    "legacy_kern": True,
}
log = logging.getLogger(__name__)


def use_lean_font() -> None:
    """Draw figure text in the reduced copies of DejaVu Sans's faces, DejaVu Sans behind them."""
    faces = {
        Path(font_manager.findfont(font_manager.FontProperties(family=FAMILY, style=style, weight=weight)))
        for style in ("normal", "italic")
        for weight in ("normal", "bold")
    }
    try:
        copies = [lean_copy(face, Path(matplotlib.get_cachedir()) / "harness-fonts") for face in faces]
    except OSError as error:
        log.debug("figures use the whole of DejaVu Sans: %s", error)
        return
    for copy in copies:
        font_manager.fontManager.addfont(str(copy))
    if copies:
        matplotlib.rcParams["font.family"] = [LEAN_FAMILY, FAMILY]


def lean_copy(face: Path, folder: Path) -> Path:
    """The reduced copy of the font file ``face`` in ``folder``, written there the first time."""
    recipe = repr((KEPT_CHARACTERS, SUBSET_OPTIONS)).encode()
    digest = hashlib.sha256(face.read_bytes() + recipe).hexdigest()[:16]
    path = folder / f"{face.stem}-lean-{digest}.ttf"
    if not path.is_file():
        font = reduced(face)
        with atomic_path(path) as temporary:
            font.save(temporary)
    return path


def reduced(face: Path) -> TTFont:
    """``face`` with only `KEPT_CHARACTERS` and everything they use, renamed to `LEAN_FAMILY`
    (so that matplotlib tells the copy from the original)."""
    options = subset.Options(**SUBSET_OPTIONS)
    options.drop_tables += ["FFTM"]  # FontForge's time stamp, which fontTools cannot subset
    font = TTFont(face)
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=[code for first, last in KEPT_CHARACTERS for code in range(first, last + 1)])
    subsetter.subset(font)
    for record in font["name"].names:
        text = record.toUnicode()
        record.string = text.replace(FAMILY, LEAN_FAMILY).replace(FAMILY.replace(" ", ""), LEAN_FAMILY.replace(" ", ""))
    return font
