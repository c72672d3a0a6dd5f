"""The figure checks flag what they claim to, the footnote of `figure_note` is drawn clear of the
rest, and the shared head-grid figure draws difference panels."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from harness.views.style import (
    OKABE_ITO,
    colour_problems,
    draw_side_by_side_grids,
    error_bar_problems,
    figure_formats,
    figure_note,
    figure_problems,
    layout_problems,
    model_tokens,
    own_tokens,
    plt,
    save,
    suptitle,
    title_problems,
    titled_pairs,
    wording_problems,
)


def drawn(figure: plt.Figure) -> plt.Figure:
    figure.canvas.draw()
    return figure


def test_text_off_the_canvas_and_overlapping_ticks_are_found():
    figure, axes = plt.subplots(figsize=(2, 2))
    axes.set_xticks(range(20), [f"label {n}" for n in range(20)])
    figure.text(1.2, 0.5, "outside")
    problems = layout_problems(drawn(figure))
    assert "text 'outside' leaves the canvas" in problems
    assert any("x tick labels" in problem and "overlap" in problem for problem in problems)
    plt.close(figure)


def test_a_clean_figure_has_no_problems():
    figure, axes = plt.subplots(figsize=(4, 3))
    axes.plot([1, 2, 3], color=OKABE_ITO["blue"], label="pre-trained")
    axes.imshow(np.eye(3), cmap="viridis")
    axes.set_title("pre-trained vs fine-tuned")
    axes.legend()
    figure.tight_layout()
    assert figure_problems(drawn(figure)) == []
    plt.close(figure)


@pytest.mark.parametrize(
    "draw",
    [
        lambda axes: axes.plot([1, 2], color="tab:red"),
        lambda axes: axes.bar([1, 2], [1, 2], color="#ff7f0e"),
        lambda axes: axes.imshow(np.eye(3), cmap="jet"),
    ],
)
def test_colours_outside_the_safe_palette_are_found(draw):
    figure, axes = plt.subplots()
    draw(axes)
    assert len(colour_problems(drawn(figure))) == 1
    plt.close(figure)


def test_a_checkpoint_named_by_its_key_is_found():
    figure, axes = plt.subplots()
    axes.set_title("pretrained vs finetuned")
    assert len(wording_problems(drawn(figure))) == 1
    plt.close(figure)


def test_head_grids_get_a_centred_difference_panel(tmp_path, caplog, monkeypatch):
    before = np.full((2, 3), 0.02)
    after = before + np.array([[0.01, 0.0, -0.005], [0.0, 0.0, 0.0]])
    captured = []
    monkeypatch.setattr(plt, "close", captured.append)  # keep the figure to look at its panels
    with caplog.at_level(logging.WARNING, logger="harness.views.style"), figure_formats(("png", "pdf")):
        draw_side_by_side_grids(
            {"pre-trained": before, "fine-tuned": after},
            tmp_path / "grid.png",
            title="t",
            colorbar_label="mean attention",
            differences=titled_pairs([("pretrained", "finetuned")]),
        )
    monkeypatch.undo()
    (figure,) = captured
    images = [image for axes in figure.axes for image in axes.images]
    assert [image.axes.get_title() for image in images] == ["pre-trained", "fine-tuned", "fine-tuned − pre-trained"]
    # the checkpoints' scale spans their values, not 0..1, so faint maps keep their contrast
    assert images[0].norm.vmin == pytest.approx(0.015) and images[0].norm.vmax == pytest.approx(0.03)
    np.testing.assert_allclose(images[2].get_array(), after - before)
    assert images[2].norm.vmin == pytest.approx(-0.01) and images[2].norm.vmax == pytest.approx(0.01)
    assert (tmp_path / "grid.pdf").is_file() and caplog.records == []
    plt.close(figure)


def test_figures_and_tables_name_the_models_own_special_tokens(tmp_path):
    figure, axes = plt.subplots()
    axes.set_title("attention to [CLS] and [SEP]")
    axes.set_xticks([0, 1], ["[CLS]", "[SEP]"])
    with model_tokens({"[CLS]": "<s>", "[SEP]": "</s>"}):
        assert own_tokens("| [SEP] | 0.5 |", markdown=True) == "| `</s>` | 0.5 |"
        save(figure, tmp_path / "tokens.png")
    assert axes.get_title() == "attention to <s> and </s>"
    assert [label.get_text() for label in axes.get_xticklabels()] == ["<s>", "</s>"]
    assert own_tokens("[CLS]") == "[CLS]"  # outside a run's drawing: the role names
    with model_tokens({"[CLS]": "[CLS]", "[SEP]": "[SEP]"}):
        assert own_tokens("| [SEP] |", markdown=True) == "| [SEP] |"  # BERT's own: unchanged


def bars_with_error_bars(label_offset: float) -> plt.Figure:
    """Two bars with 95% intervals reaching above them, each value written ``label_offset`` points
    above its bar's top."""
    figure, axes = plt.subplots(figsize=(3, 3))
    figure.set_dpi(200)
    bars = axes.bar([0, 1], [50, 30], color=OKABE_ITO["blue"])
    axes.errorbar([0, 1], [40, 20], yerr=[[0, 0], [25, 25]], fmt="none", ecolor="black", capsize=2)
    axes.bar_label(bars, fmt="%.0f", padding=label_offset)
    return drawn(figure)


def test_text_on_an_error_bar_is_found_and_text_beside_it_is_not():
    figure = bars_with_error_bars(3)  # on the interval: the label sits where the line runs
    assert error_bar_problems(figure) == ["text '30' overlaps an error bar", "text '50' overlaps an error bar"]
    plt.close(figure)
    figure = bars_with_error_bars(40)  # above the interval's cap
    assert error_bar_problems(figure) == []
    plt.close(figure)


def test_a_title_that_says_a_thing_twice_is_found():
    figure, panels = plt.subplots(1, 2, figsize=(8, 3))
    suptitle(figure, "tiny on rte dev (64 inputs, spaCy tags): attention to [CLS] (64 inputs)")
    panels[0].set_title("pre-trained")
    panels[1].set_title("attention to [CLS]")  # the figure's title already says it
    problems = title_problems(drawn(figure))
    assert any("says '64 inputs' twice" in problem for problem in problems)
    assert any("says 'attention to [cls]' twice" in problem for problem in problems) and len(problems) == 2
    plt.close(figure)
    figure, panels = plt.subplots(1, 2, figsize=(8, 3))
    suptitle(figure, "tiny on rte dev (spaCy tags): attention to [CLS] (64 of 64 inputs)")
    panels[0].set_title("pre-trained (64 inputs)")  # panels may share words with each other, not with the title
    panels[1].set_title("fine-tuned (64 inputs)")
    assert title_problems(drawn(figure)) == []
    plt.close(figure)


def test_a_figure_note_is_a_footnote_under_the_figure(tmp_path, caplog, monkeypatch):
    closed = []
    monkeypatch.setattr(plt, "close", closed.append)  # keep the figures to look at them
    for note in ("", "quick look: 64 dev examples"):
        figure, axes = plt.subplots(figsize=(4, 3))
        axes.plot([1, 2, 3], color=OKABE_ITO["blue"])
        axes.set_xlabel("layer")
        with figure_note(note), caplog.at_level(logging.WARNING, logger="harness.views.style"):
            save(figure, tmp_path / f"note{len(note)}.png")
    monkeypatch.undo()
    plain, noted = closed
    assert plain.texts == [] and noted.get_figheight() > plain.get_figheight() == 3
    (footnote,) = noted.texts
    renderer = drawn(noted).canvas.get_renderer()
    box, label = footnote.get_window_extent(renderer), noted.axes[0].xaxis.label.get_window_extent(renderer)
    assert footnote.get_text() == "quick look: 64 dev examples" and box.y1 < label.y0 and box.y0 >= 0
    assert caplog.records == [] and figure_problems(noted) == []
    for figure in closed:
        plt.close(figure)


def test_text_drawn_over_the_footnote_is_found(tmp_path, caplog):
    figure, axes = plt.subplots(figsize=(4, 3))
    axes.plot([1, 2], color=OKABE_ITO["blue"], label="a line")
    figure.legend(loc="lower left", frameon=False)  # where no layout moves it: on the footnote's strip
    with figure_note("quick look: 64 dev examples"), caplog.at_level(logging.WARNING, logger="harness.views.style"):
        save(figure, tmp_path / "legend.png")
    assert [record.getMessage() for record in caplog.records] == [
        "figure legend.png: text 'a line' overlaps the footnote"
    ]


def test_an_error_bar_is_checked_where_it_is_drawn_inside_its_panel():
    figure, axes = plt.subplots(figsize=(3, 3))
    axes.errorbar([0.5], [10], yerr=[[2], [1000]], fmt="none", ecolor="black", capsize=2)
    axes.set_xlim(0, 1)
    axes.set_ylim(0, 20)  # the interval runs on far above the panel, through its title, but is not drawn there
    axes.set_title("shares")
    figure.tight_layout()
    assert error_bar_problems(drawn(figure)) == []
    plt.close(figure)
