"""Kovaleva et al.'s attention patterns: how often each head's maps are vertical, diagonal,
vertical+diagonal, block or heterogeneous, before and after fine-tuning.

Every map of both checkpoints on the task's dev examples is classified by the shipped CNN
(`classifier`), all heads of a batch in one call; only per-head class counts are kept, so
memory does not grow with the number of examples. The result is the share of each class over
all maps (the paper's Figure 2, per checkpoint), the majority class of each head, and the
heads whose majority class changed with fine-tuning.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from classifier import CLASSES, load_classifier
from harness.analyses.base import Analysis, AnalysisContext, register_analysis
from harness.attention import CHECKPOINTS, AttentionBatch

CLASS_COLOURS = {"vertical": "#1f77b4", "diagonal": "#ff7f0e", "vertical+diagonal": "#2ca02c",
                 "block": "#d62728", "heterogeneous": "#9f9f9f"}
CHECKPOINT_TITLES = {"pretrained": "pre-trained", "finetuned": "fine-tuned"}


@register_analysis
class AttentionPatterns(Analysis):
    """Per-head counts of the CNN's class over examples, for both checkpoints."""

    name = "patterns"

    def __init__(self, context: AnalysisContext) -> None:
        super().__init__(context)
        weights = context.options["pattern_weights"]
        self.classifier = load_classifier(weights) if weights else load_classifier()
        self.counts = torch.zeros(len(CHECKPOINTS), context.num_layers, context.num_heads, len(CLASSES),
                                  dtype=torch.int64)
        self.count = 0

    def update(self, batch: AttentionBatch) -> None:
        predicted = self.classifier.predict_batch([batch.attentions[name] for name in CHECKPOINTS], batch.lengths)
        # (checkpoints, batch, layers, heads) -> per-head class counts summed over the batch
        self.counts += torch.nn.functional.one_hot(predicted, len(CLASSES)).sum(dim=1)
        self.count += predicted.shape[1]

    def result(self) -> dict[str, Any]:
        totals = self.counts.sum(dim=(1, 2)).double()  # (checkpoints, classes)
        shares = totals / totals.sum(dim=1, keepdim=True).clamp(min=1)
        majority = self.counts.argmax(dim=-1)  # (checkpoints, layers, heads); ties -> first class
        per_head = {name: [[CLASSES[index] for index in row] for row in majority[c].tolist()]
                    for c, name in enumerate(CHECKPOINTS)}
        before, after = (per_head[name] for name in CHECKPOINTS)
        return {
            "pattern_proportions": {name: dict(zip(CLASSES, shares[c].tolist())) for c, name in enumerate(CHECKPOINTS)},
            "pattern_per_head": per_head,
            "pattern_changed_heads": [
                {"layer": layer + 1, "head": head + 1, CHECKPOINTS[0]: before[layer][head],
                 CHECKPOINTS[1]: after[layer][head]}
                for layer in range(len(before)) for head in range(len(before[layer]))
                if before[layer][head] != after[layer][head]
            ],
            "pattern_num_examples": self.count,
        }

    @classmethod
    def stored_in(cls, summary: dict[str, Any]) -> bool:
        return "pattern_proportions" in summary

    @staticmethod
    def metrics(summary: dict[str, Any]) -> list[tuple[str, float]]:
        """Share of each class per checkpoint, e.g. ``pattern_finetuned_vertical+diagonal``."""
        return [(f"pattern_{checkpoint}_{name.replace('+', '_')}", share)
                for checkpoint, shares in summary["pattern_proportions"].items() for name, share in shares.items()]

    @staticmethod
    def draw(summary: dict[str, Any], out_dir: Path) -> list[Path]:
        title = f"{summary['model']} on {summary['task']}"
        return [draw_proportions(summary["pattern_proportions"], out_dir / "pattern_proportions.png",
                                 title=f"{title}: attention patterns over all heads and dev examples"),
                draw_pattern_grid(summary["pattern_per_head"], summary.get("pattern_changed_heads", []),
                                  out_dir / "pattern_per_head.png",
                                  title=f"{title}: majority pattern per head (boxed: changed by fine-tuning)")]


def draw_proportions(proportions: dict[str, dict[str, float]], path: Path, *, title: str) -> Path:
    """Grouped bars: per class, the share of maps of each checkpoint (like the paper's Figure 2)."""
    from harness.figures import plt, save

    figure, axes = plt.subplots(figsize=(6.4, 3.6))
    positions = np.arange(len(CLASSES))
    width = 0.8 / len(proportions)
    for offset, (checkpoint, shares) in enumerate(proportions.items()):
        values = [100 * shares.get(name, 0.0) for name in CLASSES]
        bars = axes.bar(positions + (offset - (len(proportions) - 1) / 2) * width, values, width,
                        label=CHECKPOINT_TITLES.get(checkpoint, checkpoint), hatch="//" if offset else None,
                        color=[CLASS_COLOURS[name] for name in CLASSES], edgecolor="black", linewidth=0.5)
        axes.bar_label(bars, fmt="%.0f", fontsize=7)
    axes.set_xticks(positions, CLASSES, fontsize=8)
    axes.set_xlabel("attention pattern")
    axes.set_ylabel("share of attention maps (%)")
    axes.set_title(title, fontsize=9)
    axes.legend(fontsize=8)
    return save(figure, path)


def draw_pattern_grid(per_head: dict[str, list[list[str]]], changed: list[dict[str, Any]], path: Path, *,
                      title: str) -> Path:
    """One categorical layers x heads panel per checkpoint; changed heads outlined in both."""
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch, Rectangle

    from harness.figures import plt, save

    colours = ListedColormap([CLASS_COLOURS[name] for name in CLASSES])
    layers, heads = len(next(iter(per_head.values()))), len(next(iter(per_head.values()))[0])
    figure, panels = plt.subplots(1, len(per_head), figsize=(0.42 * heads * len(per_head) + 2.5, 0.42 * layers + 2.2),
                                  squeeze=False)
    for axes, (checkpoint, names) in zip(panels[0], per_head.items()):
        grid = np.array([[CLASSES.index(name) for name in row] for row in names])
        axes.imshow(grid, cmap=colours, vmin=-0.5, vmax=len(CLASSES) - 0.5, aspect="auto")
        for entry in changed:
            axes.add_patch(Rectangle((entry["head"] - 1.5, entry["layer"] - 1.5), 1, 1, fill=False,
                                     edgecolor="black", linewidth=1.5))
        axes.set_xticks(range(heads), [str(h + 1) for h in range(heads)], fontsize=7)
        axes.set_yticks(range(layers), [str(layer + 1) for layer in range(layers)], fontsize=7)
        axes.set_xlabel("head")
        axes.set_ylabel("layer")
        axes.set_title(CHECKPOINT_TITLES.get(checkpoint, checkpoint), fontsize=9)
    figure.legend(handles=[Patch(color=CLASS_COLOURS[name], label=name) for name in CLASSES],
                  loc="lower center", ncol=len(CLASSES), fontsize=7, frameon=False)
    figure.suptitle(title, fontsize=9)
    figure.subplots_adjust(bottom=0.25)
    return save(figure, path)
