"""The footnote of `figure_note` is drawn clear of the rest, and text over it is found."""

from __future__ import annotations

import logging

from harness.views.figure_checks import figure_problems
from harness.views.palette import OKABE_ITO
from harness.views.saving import figure_note, plt, save


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
