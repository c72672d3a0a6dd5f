"""A text's kept layout is matplotlib's own, made again whenever what it depends on changes, and
made once for the texts of a drawing's figures that share it; a string's glyphs are shaped once per
drawing, each glyph rendered once per offset within a pixel, and drawn as matplotlib draws them."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.backends.backend_agg import RendererAgg
from matplotlib.text import Text

from harness.present.parallel import drawn
from harness.views.saving import plt
from harness.views.text_layout import (
    _BITMAPS,
    _LAYOUTS,
    _MATPLOTLIB_DRAW_TEXT,
    _MATPLOTLIB_LAYOUT,
    _SHAPES,
    draw_shaped_text,
    has_glyph_drawing,
    kept_layout,
    kept_layouts,
)


def extents(layout) -> tuple:
    """A layout's numbers: its box's bounds, each line's text, size and place, the aligned box."""
    box, lines, aligned = layout
    return tuple(box.bounds), lines, aligned


def test_a_kept_layout_follows_every_change_to_its_text():
    figure = plt.figure(dpi=100)
    renderer = figure.canvas.get_renderer()
    text = figure.text(0.5, 0.5, "layer", fontsize=10)
    changes = [
        lambda: text.set_text("head\n12"),
        lambda: text.set_fontsize(7),
        lambda: text.set_rotation(90),
        lambda: text.set_rotation_mode("anchor"),
        lambda: text.set_horizontalalignment("right"),
        lambda: text.set_verticalalignment("center_baseline"),
        lambda: text.set_multialignment("center"),
        lambda: text.set_linespacing(2.0),
        lambda: text.set_fontweight("bold"),
        lambda: text.set_text(r"$\rho$ = 0.5"),
        lambda: figure.set_dpi(200),
    ]
    assert extents(kept_layout(text, renderer)) == extents(_MATPLOTLIB_LAYOUT(text, renderer))
    changed = []
    for change in changes:
        before = extents(kept_layout(text, renderer))
        change()
        kept, matplotlibs = extents(kept_layout(text, renderer)), extents(_MATPLOTLIB_LAYOUT(text, renderer))
        assert kept == matplotlibs
        changed.append(kept != before)
    # each change moves matplotlib's own layout, but the dpi's where a renderer keeps the dpi it was made
    # with (matplotlib 3.8): the kept one followed every change, not only by staying put
    assert sum(changed) >= len(changes) - 1 and all(changed[:-1])
    plt.close(figure)


def test_texts_that_share_a_layout_are_laid_out_once_and_measured_where_they_stand():
    with kept_layouts():
        figure = plt.figure(dpi=100)
        renderer = figure.canvas.get_renderer()
        labels = [figure.text(x / 10, 0.5, str(x % 3), fontsize=7, ha="center") for x in range(9)]
        boxes = [label.get_window_extent(renderer) for label in labels]
        assert len(_LAYOUTS) == 3
        assert [box.x0 for box in boxes] == sorted(box.x0 for box in boxes)  # each at its own place
        assert boxes[0].bounds == figure.text(0.0, 0.5, "0", fontsize=7, ha="center").get_window_extent(renderer).bounds
        moved = kept_layout(labels[0], renderer)[0]
        moved.x0 += 5  # a caller's box is its own: the kept one stays
        assert labels[3].get_window_extent(renderer).bounds == boxes[3].bounds
        plt.close(figure)


def test_the_figures_of_one_drawing_share_their_layouts_at_one_resolution_and_drop_them_at_its_end():
    def laid_out(dpi: float) -> list[tuple]:
        figure = plt.figure(figsize=(3, 2), dpi=dpi)
        renderer = figure.canvas.get_renderer()
        texts = [figure.text(0.1 * x, 0.5, label, fontsize=8) for x, label in enumerate(("layer", "head", "12"))]
        kept = [extents(kept_layout(text, renderer)) for text in texts]
        assert kept == [extents(_MATPLOTLIB_LAYOUT(text, renderer)) for text in texts]  # at either resolution
        plt.close(figure)
        return kept

    with kept_layouts():
        first = laid_out(100)
        assert len(_LAYOUTS) == 3
        assert laid_out(100) == first and len(_LAYOUTS) == 3  # another figure, another renderer: the same layouts
        assert laid_out(200) != first and len(_LAYOUTS) == 6  # another resolution: layouts of its own
    assert not _LAYOUTS


def drawn_pixels(draw_text) -> tuple[np.ndarray, int, int]:
    """The pixels of a figure of repeated, rotated, bold, mathtext, kerned and unsmoothed strings
    drawn with ``draw_text`` as Agg's, how many strings were shaped and how many glyphs rendered
    for it."""
    figure = plt.figure(figsize=(3, 2), dpi=100)
    for index in range(12):
        figure.text(index / 12, 0.2, str(index % 4 + 1), fontsize=7)
    figure.text(0.1, 0.5, "AVAT layer", fontsize=10, rotation=30, fontweight="bold")
    figure.text(0.5, 0.5, r"$\rho$ = 0.51 (head 3)", fontsize=9)
    figure.text(0.1, 0.8, "fi ffl", fontsize=9, fontfeatures=["-liga"])
    figure.text(0.6, 0.8, "2 4 22", fontsize=8, antialiased=False)  # FreeType's monochrome bitmaps
    _SHAPES.clear()
    _BITMAPS.clear()
    saved = RendererAgg.draw_text
    RendererAgg.draw_text = draw_text
    try:
        figure.canvas.draw()
    finally:
        RendererAgg.draw_text = saved
    renderer = figure.canvas.get_renderer()
    pixels = np.asarray(renderer.buffer_rgba()).copy()
    plt.close(figure)
    return pixels, len(_SHAPES), len(_BITMAPS)


@pytest.mark.skipif(
    not has_glyph_drawing(),
    reason="this matplotlib has no glyph layout to keep (3.8 has none): kept_layouts leaves its drawing as it ships",
)
def test_strings_shaped_once_draw_the_pixels_matplotlib_draws():
    shaped, strings, rendered = drawn_pixels(draw_shaped_text)
    matplotlibs, _, _ = drawn_pixels(_MATPLOTLIB_DRAW_TEXT)
    # the four digits, the rotated, the kerned and the unsmoothed strings; mathtext is matplotlib's
    assert strings == 4 + 1 + 1 + 1
    # fewer renders than the 12 + 10 + 6 + 6 glyphs drawn: a glyph met again at its offset within a
    # pixel (the repeated digits of a row, the spaces) is rendered once and copied into place
    assert rendered < 12 + 10 + 6 + 6
    assert (shaped == matplotlibs).all()


def test_the_kept_layouts_hold_within_the_harnesss_drawing_alone():
    """A researcher's own figures, drawn in the same process outside the harness's drawing, meet
    matplotlib as it ships."""
    assert vars(Text)["_get_layout"] is _MATPLOTLIB_LAYOUT and vars(RendererAgg)["draw_text"] is _MATPLOTLIB_DRAW_TEXT
    with kept_layouts():
        assert vars(Text)["_get_layout"] is kept_layout
    with drawn([lambda: vars(Text)["_get_layout"]], 1) as (piece,):
        assert piece() is kept_layout
    assert vars(Text)["_get_layout"] is _MATPLOTLIB_LAYOUT and vars(RendererAgg)["draw_text"] is _MATPLOTLIB_DRAW_TEXT
