"""Clark et al.'s gradient-based importance of attention (their Figure 3), per checkpoint.

The figure: for each checkpoint that had a loss, the mean |dL/d attention| per layer by the
type of token attended to ([SEP], "." or ",", [CLS], any other), one panel per checkpoint,
titled with the loss it was taken of.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict

import numpy as np

from harness.results.entries import PerCheckpoint
from harness.results.run_record import RunSection
from harness.views.base import Entry, View, per_checkpoint_results, register_view
from harness.views.drawing import panel_grid
from harness.views.palette import GREY, OKABE_ITO
from harness.views.samples import running_text_sample
from harness.views.saving import save
from harness.views.titles import checkpoint_title, run_title, suptitle

CATEGORIES = ("sep", "punct", "cls", "other")
GRADIENT_COLOURS = {
    "sep": OKABE_ITO["blue"],
    "punct": OKABE_ITO["purple"],
    "cls": OKABE_ITO["vermillion"],
    "other": GREY,
}
GRADIENT_LABELS = {"sep": "to [SEP]", "punct": 'to "." or ","', "cls": "to [CLS]", "other": "to other tokens"}


class GradientsResult(TypedDict):
    """A checkpoint's stored gradients: the loss they are of (None, with why, where it had none),
    the mean |dL/d attention| per token category per head and per layer, and how many items."""

    loss: str | None
    skipped_because: str | None
    per_head: dict[str, list[list[float]]]
    per_layer: dict[str, list[float]]
    num_items: int


class GradientsComparison(TypedDict):
    """A pair's change of each category's per-layer mean (None unless both had a loss), and the two losses."""

    per_layer_change: dict[str, list[float]] | None
    losses: list[str | None]


GradientsEntry = Entry[PerCheckpoint[GradientsResult, GradientsComparison]]


@register_view
class GradientsView(View[PerCheckpoint[GradientsResult, GradientsComparison]]):
    name = "gradients"
    samples = running_text_sample
    order = 150
    version = 2
    stored = GradientsResult
    compared = GradientsComparison
    per_layer_keys = {"per_layer_change": "change"}

    @classmethod
    def draw(cls, entry: GradientsEntry, run: RunSection, out_dir: Path) -> list[Path]:
        usable = {c: g for c, g in per_checkpoint_results(entry).items() if g["loss"] is not None}
        if not usable:
            return []
        figure, axes = panel_grid(1, len(usable), sharey=False)
        for panel, (checkpoint, stats) in zip(axes[0], usable.items()):
            for category, color in GRADIENT_COLOURS.items():
                values = stats["per_layer"][category]
                panel.plot(
                    np.arange(1, len(values) + 1), values, marker="o", color=color, label=GRADIENT_LABELS[category]
                )
            panel.set_xticks(np.arange(1, len(values) + 1))
            panel.set_xlabel("layer")
            panel.set_ylabel("mean |dL / d attention|")
            panel.set_title(f"{checkpoint_title(checkpoint)}: {stats['loss']} loss", fontsize=9)
            panel.grid(alpha=0.3)
            panel.legend(fontsize=7)
        suptitle(figure, f"Gradient-based importance of attention (Clark Fig. 3): {run_title(run)}")
        return [save(figure, out_dir / "gradients_by_layer.png")]
