"""Head grids drawn on one canvas keep what an axes per panel and matplotlib's colour bars
showed: titles, colour scales, difference panels, and tick labels, offsets and axis labels where
matplotlib's own axes and colour bars put them."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from matplotlib.ticker import ScalarFormatter

from harness.views.colour_bar import LABEL
from harness.views.drawing import draw_side_by_side_grids, style_head_axes
from harness.views.figure_checks import PANEL_TITLE, TICK_LABELS, tick_labels_id
from harness.views.head_grid import draw_grid_rows
from harness.views.saving import figure_formats, plt
from harness.views.titles import titled_pairs


def drawn_figure(monkeypatch, draw) -> plt.Figure:
    """The figure ``draw()`` saves, kept open to look at."""
    captured = []
    monkeypatch.setattr(plt, "close", captured.append)
    draw()
    monkeypatch.undo()
    (figure,) = captured
    return figure


def test_head_grids_get_a_centred_difference_panel(tmp_path, caplog, monkeypatch):
    before = np.full((2, 3), 0.02)
    after = before + np.array([[0.01, 0.0, -0.005], [0.0, 0.0, 0.0]])
    with caplog.at_level(logging.WARNING, logger="harness.views.saving"), figure_formats(("png", "pdf")):
        figure = drawn_figure(
            monkeypatch,
            lambda: draw_side_by_side_grids(
                {"pre-trained": before, "fine-tuned": after},
                tmp_path / "grid.png",
                title="t",
                colorbar_label="mean attention",
                differences=titled_pairs([("pretrained", "finetuned")]),
            ),
        )
    (canvas,) = figure.axes  # panels and colour bars alike drawn on it
    titles = [text.get_text() for text in canvas.texts if text.get_gid() == PANEL_TITLE]
    assert titles == ["pre-trained", "fine-tuned", "fine-tuned − pre-trained"]
    images = canvas.images
    # the checkpoints' scale spans their values, not 0..1, so faint maps keep their contrast
    assert images[0].norm.vmin == pytest.approx(0.015) and images[0].norm.vmax == pytest.approx(0.03)
    np.testing.assert_allclose(images[2].get_array(), after - before)
    assert images[2].norm.vmin == pytest.approx(-0.01) and images[2].norm.vmax == pytest.approx(0.01)
    assert [text.get_text() for text in canvas.texts if text.get_gid() == LABEL] == ["mean attention", "change"]
    assert (tmp_path / "grid.pdf").is_file() and caplog.records == []
    plt.close(figure)


def test_a_panels_labels_stand_where_an_axes_of_its_own_puts_them(tmp_path, caplog, monkeypatch):
    grids = {"pre-trained": np.random.default_rng(0).random((6, 12)), "fine-tuned": np.zeros((6, 12))}
    with caplog.at_level(logging.WARNING, logger="harness.views.saving"):
        figure = drawn_figure(
            monkeypatch,
            lambda: draw_grid_rows({"raw": grids, "norm": grids}, tmp_path / "rows.png", title="t", colorbar_label="v"),
        )
    assert caplog.records == []
    canvas, renderer = figure.axes[0], figure.canvas.get_renderer()
    first = canvas.images[0].get_window_extent(renderer)
    reference = figure.add_axes(first.transformed(figure.transFigure.inverted()).bounds)
    style_head_axes(reference, 6, 12, "raw: pre-trained", tick_size=7)
    reference.imshow(grids["pre-trained"], aspect="auto")
    figure.canvas.draw()

    def boxes(texts):
        return np.array([text.get_window_extent(renderer).extents for text in texts])

    def own(gid):
        return [text for text in canvas.texts if text.get_gid() == gid][:12]

    panel = "raw: pre-trained"
    labels = {name: next(text for text in canvas.texts if text.get_text() == name) for name in ("head", "layer")}
    np.testing.assert_allclose(boxes(own(f"{TICK_LABELS}:x:{panel}")), boxes(reference.get_xticklabels()), atol=2)
    np.testing.assert_allclose(boxes(own(f"{TICK_LABELS}:y:{panel}")), boxes(reference.get_yticklabels()), atol=2)
    np.testing.assert_allclose(boxes([labels["head"]]), boxes([reference.xaxis.label]), atol=2)
    np.testing.assert_allclose(boxes([labels["layer"]]), boxes([reference.yaxis.label]), atol=2)
    np.testing.assert_allclose(boxes(own(PANEL_TITLE)[:1]), boxes([reference.title]), atol=2)
    plt.close(figure)


def test_titles_wider_than_their_panels_stay_clear_of_the_colour_bars(tmp_path, monkeypatch):
    grid = np.random.default_rng(1).random((2, 4))
    figure = drawn_figure(
        monkeypatch,
        lambda: draw_grid_rows(
            {"norm-weighted": {"pre-trained": grid, "fine-tuned": grid}},
            tmp_path / "tiny.png",
            title="t",
            colorbar_label="share",
            differences=titled_pairs([("pretrained", "finetuned")]),
        ),
    )
    (canvas,) = figure.axes
    renderer = figure.canvas.get_renderer()
    titles = [text.get_window_extent(renderer) for text in canvas.texts if text.get_gid() == PANEL_TITLE]
    bars = [image.get_window_extent(renderer) for image in canvas.images[-2:]]
    bars += [text.get_window_extent(renderer) for text in canvas.texts if "colour bar" in (text.get_gid() or "")]
    assert max(title.width for title in titles) > canvas.images[0].get_window_extent(renderer).width
    assert len(bars) > 4 and not any(title.overlaps(bar) for title in titles for bar in bars)
    plt.close(figure)


@pytest.mark.parametrize(
    ("scale", "change", "offsets"),
    [(0.3, 0.02, ("", "")), (1e-6, 1e-8, ("1e−7", "1e−8")), (0.0, 0.0, ("", ""))],
    ids=["attention", "tiny values with an offset", "one value"],
)
def test_colour_bars_drawn_on_the_canvas_say_what_matplotlibs_say_where_it_says_it(
    tmp_path, monkeypatch, scale, change, offsets
):
    rng = np.random.default_rng(2)
    before = rng.random((6, 12)) * scale
    grids = {"pre-trained": before, "fine-tuned": before + rng.normal(0, change, (6, 12))}
    label = "mean attention to the token"
    figure = drawn_figure(
        monkeypatch,
        lambda: draw_grid_rows(
            {"": grids},
            tmp_path / "bars.png",
            title="t",
            colorbar_label=label,
            differences=titled_pairs([("pretrained", "finetuned")]),
        ),
    )
    (canvas,) = figure.axes
    renderer = figure.canvas.get_renderer()
    own_labels = [text for text in canvas.texts if text.get_gid() == LABEL]
    for bar, panel, own_label, offset in zip(canvas.images[-2:], canvas.images[:3:2], own_labels, offsets):
        # matplotlib's own colour bar of the same panel, in an axes where the drawn bar stands
        box = bar.get_window_extent(renderer).transformed(figure.transFigure.inverted()).bounds
        reference = figure.colorbar(panel, cax=figure.add_axes(box), label=own_label.get_text())
        if own_label is own_labels[0]:
            reference.formatter = ScalarFormatter(useOffset=False)
        figure.canvas.draw()
        axis = reference.ax.yaxis
        low, high = axis.get_view_interval()
        theirs = [text for text in axis.get_ticklabels() if low - 1e-12 <= text.get_position()[1] <= high + 1e-12]
        ours = [
            text
            for text in canvas.texts
            if text.get_gid() == tick_labels_id("y", f"colour bar: {own_label.get_text()}")
        ]
        assert [text.get_text() for text in ours] == [text.get_text() for text in theirs] and len(ours) >= 3
        np.testing.assert_allclose(boxes(ours, renderer), boxes(theirs, renderer), atol=1)
        np.testing.assert_allclose(boxes([own_label], renderer), boxes([axis.label], renderer), atol=1)
        assert axis.offsetText.get_text() == offset
        if offset:
            (own_offset,) = [text for text in canvas.texts if text.get_text() == offset]
            np.testing.assert_allclose(boxes([own_offset], renderer), boxes([axis.offsetText], renderer), atol=1)
        np.testing.assert_array_equal(bar.cmap(bar.norm(bar.get_array()[[0, -1], 0])), panel.cmap([1.0, 0.0]))
    plt.close(figure)


def boxes(texts, renderer) -> np.ndarray:
    """Each text's extent as drawn (x0, y0, x1, y1), in pixels."""
    return np.array([text.get_window_extent(renderer).extents for text in texts])


def test_boxed_cells_are_outlined_in_their_panel_only(tmp_path, monkeypatch):
    grids = {"uniform": np.zeros((3, 4)), "zero": np.ones((3, 4))}
    figure = drawn_figure(
        monkeypatch,
        lambda: draw_side_by_side_grids(
            grids, tmp_path / "boxed.png", title="t", colorbar_label="v", boxed={"zero": [(1, 2)]}
        ),
    )
    (canvas,) = figure.axes
    (outlines,) = [c for c in canvas.collections if c.get_linewidths()[0] == 1.5]
    (box,) = outlines.get_segments()
    left, right, bottom, top = canvas.images[1].get_extent()  # the "zero" panel, in inches from the top left
    cell = ((right - left) / 4, (bottom - top) / 3)
    np.testing.assert_allclose(box.min(axis=0), (left + 2 * cell[0], top + 1 * cell[1]))
    np.testing.assert_allclose(box.max(axis=0), (left + 3 * cell[0], top + 2 * cell[1]))
    plt.close(figure)
