"""Each text laid out once per drawing, not at every measuring and drawing of every figure,
and each string shaped once per drawing and font.

Matplotlib lays a text out (its lines measured, its font looked up and its line metrics read,
its box rotated and aligned) each time it is measured or drawn: for tight layout, for the
drawing, for the figure checks (`harness.views.figure_checks`), and a head grid's tick labels
repeat the same few strings in every panel. The layout depends only on what `layout_key` lists,
never on the text's position, and on the renderer only through its kind and resolution, so it is
kept under that key and the renderer's (`renderer_key`) for the whole drawing (`kept_layouts`):
every figure's canvas has a renderer of its own, but a run's figures repeat the same tick labels,
axis labels and titles at the same resolution. A text that wraps (its lines depend on where it
stands) or turns with its transform is laid out each time, as matplotlib does. Likewise Agg shapes
a string into placed glyphs (its fonts found, its glyphs chosen, kerned and advanced) at each
drawing; the glyphs depend on the string, font, size, dpi, hinting and the text's font features
and language, not on where it is drawn, so repeated strings are shaped once (`draw_shaped_text`).
And FreeType renders each glyph at each place, though its bitmap moved by whole pixels is the
bitmap of the glyph moved by as many pixels (FreeType places a glyph to 1/64 pixel; tested on
every figure of a run, byte for byte): each glyph is rendered once per drawing at each of the 64 x
64 offsets within a pixel it meets, and copied into place (`draw_glyphs`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from math import cos, radians, sin
from typing import Any

import numpy as np
from matplotlib import ft2font
from matplotlib.backend_bases import GraphicsContextBase, RendererBase
from matplotlib.backends.backend_agg import RendererAgg, get_hinting_flag
from matplotlib.font_manager import FontProperties
from matplotlib.text import Text

Layout = tuple[Any, Any, Any]  # matplotlib's (box, lines, text-aligned box) of a text
# Emptied when the outermost `kept_layouts` block ends: a drawing's texts, not a process's.
_LAYOUTS: dict[Hashable, Layout] = {}
_MATPLOTLIB_LAYOUT: Callable[[Text, RendererBase], Layout] = Text._get_layout  # type: ignore[attr-defined]
Glyph = tuple[Any, int, float, float]  # (FT2Font, glyph index, x, y in pixels from the text's origin)
_SHAPES: dict[Hashable, list[Glyph]] = {}
Bitmap = tuple[np.ndarray, int, int]  # a rendered glyph's coverage, its left and top pixel
_BITMAPS: dict[Hashable, Bitmap] = {}
_MATPLOTLIB_DRAW_TEXT = RendererAgg.draw_text
_DEPTH = [0]  # how many `kept_layouts` blocks are open


def renderer_key(renderer: RendererBase) -> Hashable:
    """What a text's measures take from its renderer: its kind and its resolution (Agg's text
    metrics are its fonts' at its dpi; a figure's size and place do not enter them)."""
    return type(renderer), getattr(renderer, "dpi", None)


def font_key(font: FontProperties) -> tuple[Hashable, ...]:
    """Everything of ``font`` that chooses and sizes its glyphs."""
    return (
        tuple(font.get_family()),
        font.get_slant(),
        font.get_variant(),
        font.get_weight(),
        font.get_stretch(),
        font.get_size(),
        font.get_file(),
        font.get_math_fontfamily(),
    )


def layout_key(text: Text) -> Hashable | None:
    """Everything matplotlib's layout of ``text`` reads (its string, font, size, alignments,
    rotation, line spacing, TeX and mathtext settings, the figure's dpi); None for a text whose
    layout depends on its position."""
    if text.get_wrap() or text.get_transform_rotates_text():
        return None
    return (
        text.get_text(),
        font_key(text.get_fontproperties()),
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
    key = (renderer_key(renderer), key)
    if key not in _LAYOUTS:
        _LAYOUTS[key] = _MATPLOTLIB_LAYOUT(text, renderer)
    box, lines, aligned = _LAYOUTS[key]
    return box.frozen(), lines, aligned  # callers get a box of their own to move


def draw_shaped_text(
    renderer: RendererAgg,
    gc: GraphicsContextBase,
    x: float,
    y: float,
    s: str,
    prop: FontProperties,
    angle: float,
    ismath: bool | str = False,
    mtext: Text | None = None,
) -> None:
    """Agg's drawing of a text's string (`RendererAgg.draw_text`), its glyphs shaped once per
    renderer under everything that shapes them; mathtext is drawn by matplotlib."""
    features = mtext.get_fontfeatures() if mtext is not None else None
    language = mtext.get_language() if mtext is not None else None
    if ismath or not isinstance(language, str | None):
        _MATPLOTLIB_DRAW_TEXT(renderer, gc, x, y, s, prop, angle, ismath, mtext)
        return
    flags = get_hinting_flag()
    key = (s, font_key(prop), renderer.dpi, flags, None if features is None else tuple(features), language)
    if key not in _SHAPES:
        font = renderer._prepare_font(prop)
        items = font._layout(s, flags=flags, features=features, language=language)
        _SHAPES[key] = [(item.ft_object, item.glyph_index, item.x, item.y) for item in items]
    draw_glyphs(renderer, gc, x, y, angle, prop.get_size_in_points(), flags, _SHAPES[key])


def draw_glyphs(
    renderer: RendererAgg,
    gc: GraphicsContextBase,
    x: float,
    y: float,
    angle: float,
    size: float,
    flags: ft2font.LoadFlags,
    glyphs: list[Glyph],
) -> None:
    """Agg's drawing of a string's placed glyphs (`RendererAgg._draw_text_glyphs_and_boxes`, for
    text without a slant or stretch), shaped with the hinting ``flags``, each bitmap rendered once
    per drawing, glyph and offset within a pixel, and moved by whole pixels to its place."""
    along, across = cos(radians(angle)), sin(radians(angle))
    matrix = (0x10000 * np.array([[along, -across], [across, along]])).round().astype(int)  # 16.16 fixed point
    antialiased = gc.get_antialiased()
    mode = ft2font.RenderMode.NORMAL if antialiased else ft2font.RenderMode.MONO
    rendering = (size, renderer.dpi, flags, antialiased, matrix.tobytes())  # what every glyph here is rendered at
    for font, index, dx, dy in glyphs:  # y is downwards, dy upwards and FreeType's y upwards
        whole_x, part_x = divmod(round(0x40 * (x + dx * along - dy * across)), 0x40)
        whole_y, part_y = divmod(round(0x40 * (renderer.height - y + dx * across + dy * along)), 0x40)
        key = (font, index, rendering, part_x, part_y)
        if key not in _BITMAPS:
            font.set_size(size, renderer.dpi)
            font._set_transform(matrix, [part_x, part_y])
            bitmap = font._render_glyph(index, flags, mode)
            _BITMAPS[key] = (bitmap.buffer if antialiased else bitmap.buffer * 0xFF, bitmap.left, bitmap.top)
        buffer, left, top = _BITMAPS[key]
        # draw_text_image's y is downwards, to the bitmap's bottom side
        renderer._renderer.draw_text_image(
            buffer, left + whole_x, int(renderer.height) - (top + whole_y) + buffer.shape[0], 0, gc
        )


# What `draw_shaped_text` and `draw_glyphs` take of matplotlib's Agg text drawing (3.11's; from 3.10
# ft2font's enums): with an earlier matplotlib, text is drawn as it ships.
GLYPH_DRAWING = (
    (RendererAgg, "_draw_text_glyphs_and_boxes"),
    (RendererAgg, "_prepare_font"),
    (Text, "get_fontfeatures"),
    (Text, "get_language"),
    (ft2font, "RenderMode"),
    (ft2font.FT2Font, "_render_glyph"),
)


def has_glyph_drawing() -> bool:
    """Whether this matplotlib draws Agg's glyphs as `draw_glyphs` does (`GLYPH_DRAWING`)."""
    return all(hasattr(owner, name) for owner, name in GLYPH_DRAWING)


@contextmanager
def kept_layouts() -> Iterator[None]:
    """Within the block (the harness's own drawing: `harness.present.parallel.drawn`), every text
    is laid out through `kept_layout` and its string drawn through `draw_shaped_text`, each where
    this matplotlib works as they expect (layouts from 3.8, Agg's glyphs as matplotlib 3.11 draws
    them); outside it, matplotlib is as it ships, so a researcher's own figures drawn in the same
    process never meet these private hooks. The outermost block starts and ends with none kept."""
    hooks: list[tuple[type, str, Callable[..., Any]]] = []  # Any: matplotlib's private methods, as each is
    if all(hasattr(Text, name) for name in ("_get_multialignment", "get_parse_math")):
        hooks.append((Text, "_get_layout", kept_layout))
    if has_glyph_drawing():
        hooks.append((RendererAgg, "draw_text", draw_shaped_text))
    shipped = [(owner, name, vars(owner)[name]) for owner, name, _ in hooks]
    if not _DEPTH[0]:
        forget_layouts()
    _DEPTH[0] += 1
    try:
        for owner, name, hook in hooks:
            setattr(owner, name, hook)
        yield
    finally:
        for owner, name, original in shipped:
            setattr(owner, name, original)
        _DEPTH[0] -= 1
        if not _DEPTH[0]:
            forget_layouts()


def forget_layouts() -> None:
    """Drop the layouts and shapes kept (a drawing's texts are kept for that drawing alone)."""
    _LAYOUTS.clear()
    _SHAPES.clear()
    _BITMAPS.clear()
