"""Each text of a figure laid out once per renderer, not at every measuring and drawing.

Matplotlib lays a text out (its lines measured, its font looked up and its line metrics read,
its box rotated and aligned) each time it is measured or drawn: for tight layout, for the
drawing, for the figure checks (`harness.views.figure_checks`), and a head grid's tick labels
repeat the same few strings in every panel. The layout depends only on what `layout_key` lists,
never on the text's position, so it is kept per renderer (a figure's canvas has its own, and the
kept layouts go with it) under that key; a text that wraps (its lines depend on where it stands)
or turns with its transform is laid out each time, as matplotlib does.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any
from weakref import WeakKeyDictionary

from matplotlib.backend_bases import RendererBase
from matplotlib.text import Text

Layout = tuple[Any, Any, Any]  # matplotlib's (box, lines, text-aligned box) of a text
_LAYOUTS: WeakKeyDictionary[RendererBase, dict[Hashable, Layout]] = WeakKeyDictionary()
_MATPLOTLIB_LAYOUT: Callable[[Text, RendererBase], Layout] = Text._get_layout  # type: ignore[attr-defined]


def layout_key(text: Text) -> Hashable | None:
    """Everything matplotlib's layout of ``text`` reads (its string, font, size, alignments,
    rotation, line spacing, TeX and mathtext settings, the figure's dpi); None for a text whose
    layout depends on its position."""
    if text.get_wrap() or text.get_transform_rotates_text():
        return None
    font = text.get_fontproperties()
    return (
        text.get_text(),
        tuple(font.get_family()),
        font.get_slant(),
        font.get_variant(),
        font.get_weight(),
        font.get_stretch(),
        font.get_size(),
        font.get_file(),
        font.get_math_fontfamily(),
        text.get_usetex(),
        text.get_parse_math(),
        text.get_rotation(),
        text.get_rotation_mode(),
        text.get_horizontalalignment(),
        text.get_verticalalignment(),
        text._get_multialignment(),  # type: ignore[attr-defined]
        text._linespacing,  # type: ignore[attr-defined]
        text.get_figure().dpi,  # type: ignore[union-attr]  # a subfigure's is its figure's
    )


def kept_layout(text: Text, renderer: RendererBase) -> Layout:
    """``text``'s layout by ``renderer``: matplotlib's, made once per renderer and `layout_key`."""
    key = layout_key(text)
    if key is None:
        return _MATPLOTLIB_LAYOUT(text, renderer)
    layouts = _LAYOUTS.setdefault(renderer, {})
    if key not in layouts:
        layouts[key] = _MATPLOTLIB_LAYOUT(text, renderer)
    box, lines, aligned = layouts[key]
    return box.frozen(), lines, aligned  # callers get a box of their own to move


def keep_layouts() -> None:
    """Lay every text out through `kept_layout` (called once, where matplotlib is set up), where
    this matplotlib lays texts out as `kept_layout` expects (3.8 and later)."""
    if all(hasattr(Text, name) for name in ("_get_multialignment", "get_parse_math")):
        Text._get_layout = kept_layout  # type: ignore[attr-defined]
