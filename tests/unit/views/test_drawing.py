"""The shared head-grid figure draws difference panels."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from harness.views.drawing import draw_side_by_side_grids
from harness.views.saving import figure_formats, plt
from harness.views.titles import titled_pairs


def test_head_grids_get_a_centred_difference_panel(tmp_path, caplog, monkeypatch):
    before = np.full((2, 3), 0.02)
    after = before + np.array([[0.01, 0.0, -0.005], [0.0, 0.0, 0.0]])
    captured = []
    monkeypatch.setattr(plt, "close", captured.append)  # keep the figure to look at its panels
    with caplog.at_level(logging.WARNING, logger="harness.views.saving"), figure_formats(("png", "pdf")):
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
