"""The figure checks flag what they claim to, and only that."""

from __future__ import annotations

import numpy as np
import pytest

from harness.views.figure_checks import (
    PANEL_TITLE,
    colour_problems,
    error_bar_problems,
    figure_problems,
    layout_problems,
    tick_labels_id,
    title_problems,
    wording_problems,
)
from harness.views.palette import OKABE_ITO
from harness.views.saving import plt
from harness.views.titles import suptitle


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


def test_tick_labels_and_panel_titles_drawn_as_texts_of_their_own_are_checked():
    figure = plt.figure(figsize=(2, 2))
    for x in (0.1, 0.12):
        figure.text(x, 0.5, "12", gid=tick_labels_id("x", "pre-trained"))
    figure.text(0.05, 0.2, "fine-tuned (64 inputs)", gid=PANEL_TITLE, fontsize=6)
    suptitle(figure, "cosine (64 inputs)")
    assert layout_problems(drawn(figure)) == ["x tick labels of 'pre-trained' overlap"]
    assert title_problems(figure) == ["title 'cosine (64 inputs): fine-tuned (64 inputs)' says '64 inputs' twice"]
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


def test_an_error_bar_is_checked_where_it_is_drawn_inside_its_panel():
    figure, axes = plt.subplots(figsize=(3, 3))
    axes.errorbar([0.5], [10], yerr=[[2], [1000]], fmt="none", ecolor="black", capsize=2)
    axes.set_xlim(0, 1)
    axes.set_ylim(0, 20)  # the interval runs on far above the panel, through its title, but is not drawn there
    axes.set_title("shares")
    figure.tight_layout()
    assert error_bar_problems(drawn(figure)) == []
    plt.close(figure)
