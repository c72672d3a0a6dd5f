"""The footnote of `figure_note` is drawn clear of the rest, and text over it is found; a figure's
PNG holds the canvas's pixels, as Pillow reads them."""

from __future__ import annotations

import logging

import numpy as np
from PIL import Image

from harness.views.figure_checks import figure_problems
from harness.views.palette import OKABE_ITO
from harness.views.saving import figure_note, plt, png_bytes, save


def test_a_figure_note_is_a_footnote_under_the_figure(tmp_path, caplog, monkeypatch):
    closed = []
    monkeypatch.setattr(plt, "close", closed.append)  # keep the figures to look at them
    for note in ("", "quick look: 64 dev examples"):
        figure, axes = plt.subplots(figsize=(4, 3))
        axes.plot([1, 2, 3], color=OKABE_ITO["blue"])
        axes.set_xlabel("layer")
        with figure_note(note), caplog.at_level(logging.WARNING, logger="harness.views.saving"):
            save(figure, tmp_path / f"note{len(note)}.png")
    monkeypatch.undo()
    plain, noted = closed
    assert plain.texts == [] and noted.get_figheight() > plain.get_figheight() == 3
    (footnote,) = noted.texts
    noted.canvas.draw()
    renderer = noted.canvas.get_renderer()
    box, label = footnote.get_window_extent(renderer), noted.axes[0].xaxis.label.get_window_extent(renderer)
    assert footnote.get_text() == "quick look: 64 dev examples" and box.y1 < label.y0 and box.y0 >= 0
    assert caplog.records == [] and figure_problems(noted) == []
    for figure in closed:
        plt.close(figure)


def test_text_drawn_over_the_footnote_is_found(tmp_path, caplog):
    figure, axes = plt.subplots(figsize=(4, 3))
    axes.plot([1, 2], color=OKABE_ITO["blue"], label="a line")
    figure.legend(loc="lower left", frameon=False)  # where no layout moves it: on the footnote's strip
    with figure_note("quick look: 64 dev examples"), caplog.at_level(logging.WARNING, logger="harness.views.saving"):
        save(figure, tmp_path / "legend.png")
    assert [record.getMessage() for record in caplog.records] == [
        "figure legend.png: text 'a line' overlaps the footnote"
    ]


def test_a_png_holds_the_canvass_colours_and_pillow_checks_every_chunk(tmp_path):
    rng = np.random.default_rng(0)
    rgba = rng.integers(0, 256, size=(7, 5, 4), dtype=np.uint8)  # rows that differ by any amount, wrapping past 255
    rgba[3] = rgba[2]  # and a row equal to the one above
    path = tmp_path / "random.png"
    path.write_bytes(png_bytes(rgba))
    with Image.open(path) as image:
        image.verify()  # the signature and each chunk's CRC
    with Image.open(path) as image:
        assert image.mode == "RGB" and (np.asarray(image) == rgba[:, :, :3]).all()


def test_a_saved_figure_is_its_canvas_without_the_alpha(tmp_path, monkeypatch):
    closed = []
    monkeypatch.setattr(plt, "close", closed.append)
    figure, axes = plt.subplots(figsize=(3, 2))
    axes.imshow(np.arange(12).reshape(3, 4), cmap="viridis")
    axes.set_title("layer")
    save(figure, tmp_path / "grid.png")
    monkeypatch.undo()
    with Image.open(tmp_path / "grid.png") as image:
        assert (np.asarray(image) == np.asarray(figure.canvas.buffer_rgba())[:, :, :3]).all()
    plt.close(figure)
