"""The figure checks flag what they claim to, and the shared head-grid figure draws difference panels."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from harness.views.style import (
    OKABE_ITO,
    colour_problems,
    draw_side_by_side_grids,
    figure_problems,
    layout_problems,
    model_tokens,
    own_tokens,
    plt,
    save,
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


@pytest.mark.parametrize("draw", [lambda axes: axes.plot([1, 2], color="tab:red"),
                                  lambda axes: axes.bar([1, 2], [1, 2], color="#ff7f0e"),
                                  lambda axes: axes.imshow(np.eye(3), cmap="jet")])
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
    with caplog.at_level(logging.WARNING, logger="harness.views.style"):
        draw_side_by_side_grids({"pre-trained": before, "fine-tuned": after}, tmp_path / "grid.png", title="t",
                                colorbar_label="mean attention",
                                differences=titled_pairs([("pretrained", "finetuned")]))
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
