"""Kovaleva et al.'s attention patterns: how often each head's maps are vertical, diagonal,
vertical+diagonal, block or heterogeneous, before and after fine-tuning.

Every map of both checkpoints on the task's dev examples is classified by the shipped classifier
(`classifier`: boosted trees on the map's measurements), all heads of a batch in one call
(`block` only for sentence pairs, the one input where two segments exist); only per-head
class counts are kept, so
memory does not grow with the number of examples. The result is the share of each class over
all maps (the paper's Figure 2, per checkpoint), the majority class of each head, and the
heads whose majority class changed with fine-tuning.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from matplotlib.colors import ListedColormap
from matplotlib.patches import Patch, Rectangle

from classifier import CLASSES, load_classifier
from classifier.correction import corrected_shares
from classifier.crossval import load_report
from classifier.model import BLOCK, WEIGHTS_FILE
from harness.analyses.base import Analysis, AnalysisContext, changed_heads, register_analysis
from harness.views.base import pair_name, per_checkpoint_results, per_pair_results
from harness.inputs.batches import AttentionBatch
from harness.config import AnalysisConfig
from harness.views.style import GREY, OKABE_ITO, checkpoint_title, plt, run_title, save
from harness.results.store import FileHashes

CLASS_COLOURS = {"vertical": OKABE_ITO["blue"], "diagonal": OKABE_ITO["orange"],
                 "vertical+diagonal": OKABE_ITO["green"], "block": OKABE_ITO["vermillion"], "heterogeneous": GREY}


def share_metric(checkpoint: str, name: str) -> str:
    """The metric name of a checkpoint's share of class ``name``: ``pattern_finetuned_vertical_diagonal``."""
    return f"pattern_{checkpoint}_{name.replace('+', '_')}"


@register_analysis
class AttentionPatterns(Analysis):
    """Per-head counts of the classifier's class over examples, for each checkpoint."""

    name = "patterns"
    # 3: `block` never predicted for single sentences; 4: the CNN sees the segments and measurements;
    # 5: boosted trees on the maps' measurements; 7: retrained on 1,325 labels with pure synthetic blocks;
    # 8: the within-segment measure per token (fair to unequal segments), 1,405 labels, longer synthetic maps;
    # 9: the band against chance (band lift) and its diagonal / heterogeneous line, depth-2 trees
    version = 9
    settings_used = ("pattern_weights",)
    reference = {"kovaleva_bert_base": "heterogeneous 32% (MRPC) to 61% (QQP) of maps; ~30% of labelled maps vertical"}

    def __init__(self, context: AnalysisContext) -> None:
        super().__init__(context)
        weights = context.settings.pattern_weights or WEIGHTS_FILE
        self.classifier = load_classifier(weights).to(context.device)
        self.cross_validation = shipped_cross_validation(context.settings)
        shape = (len(context.checkpoints), context.num_layers, context.num_heads, len(CLASSES))
        self.counts = torch.zeros(shape, dtype=torch.int64, device=context.device)
        self.count = 0
        self.pair_inputs = 0

    @classmethod
    def settings_identity(cls, settings: AnalysisConfig, hashes: FileHashes) -> dict[str, Any]:
        """The classifier's weights file, by content (the shipped one when none is given), and the
        cross-validated score of the shipped classifier's recipe (None for other weights)."""
        report = shipped_cross_validation(settings)
        score = None if report is None else {"grouping": report["grouping"], **report["overall"]}
        return {"pattern_weights": hashes.describe(settings.pattern_weights or WEIGHTS_FILE),
                "cross_validation": score}

    def update(self, batch: AttentionBatch) -> None:
        attentions = [batch.attentions[name] for name in self.context.checkpoints]
        predicted = self.classifier.predict_batch(attentions, batch.lengths, batch.second_segments,
                                                  [batch.row_entropy(name) for name in self.context.checkpoints])
        # (checkpoints, batch, layers, heads) -> per-head class counts summed over the batch
        self.counts += torch.nn.functional.one_hot(predicted, len(CLASSES)).sum(dim=1)
        self.count += predicted.shape[1]
        self.pair_inputs += int(batch.two_segments.sum())

    def result(self) -> dict[str, Any]:
        counts = self.counts.cpu()
        totals = counts.sum(dim=(1, 2)).double()  # (checkpoints, classes)
        shares = totals / totals.sum(dim=1, keepdim=True).clamp(min=1)
        majority = counts.argmax(dim=-1)  # (checkpoints, layers, heads); ties -> first class
        return {name: {"proportions": dict(zip(CLASSES, shares[c].tolist())),
                       **self.corrected(shares[c].numpy()),
                       "per_head": [[CLASSES[index] for index in row] for row in majority[c].tolist()],
                       "counts_per_head": counts[c].tolist(),
                       "num_examples": self.count}
                for c, name in enumerate(self.context.checkpoints)}

    def corrected(self, observed: np.ndarray) -> dict[str, Any]:
        """The shares corrected for the classifier's cross-validated errors, with 95% intervals
        (`classifier.correction`); nothing without a cross-validation of these weights."""
        if self.cross_validation is None:
            return {}
        possible = np.ones(len(CLASSES), dtype=bool)
        possible[BLOCK] = self.pair_inputs > 0
        shares, intervals = corrected_shares(observed, np.asarray(self.cross_validation["confusion"]), possible,
                                             seed=self.context.seed)
        return {"corrected": dict(zip(CLASSES, shares.tolist())),
                "corrected_interval": dict(zip(CLASSES, intervals.tolist()))}

    @classmethod
    def compare(cls, per_checkpoint: dict[str, Any], pairs: list[tuple[str, str]]) -> dict[str, Any]:
        return {pair_name((a, b)): {"changed_heads": changed_heads(per_checkpoint[a]["per_head"],
                                                                   per_checkpoint[b]["per_head"])}
                for a, b in pairs}

    @classmethod
    def metrics(cls, entry: dict[str, Any]) -> list[tuple[str, float]]:
        """Share of each class per checkpoint, e.g. ``pattern_finetuned_vertical_diagonal``, and the
        classifier's cross-validated macro-F1."""
        shares = [(share_metric(checkpoint, name), share)
                  for checkpoint, stats in per_checkpoint_results(entry).items()
                  for name, share in stats["proportions"].items()]
        score = entry.get("settings", {}).get("cross_validation")
        return shares + ([("pattern_classifier_cv_macro_f1", score["macro_f1"])] if score else [])

    @classmethod
    def headline(cls, metrics: dict[str, float]) -> list[str]:
        """How the share of each pattern changed."""
        return [name for name in metrics if name.startswith("pattern_change_")]

    @classmethod
    def draw(cls, entry: dict[str, Any], run: dict[str, Any], out_dir: Path) -> list[Path]:
        results = per_checkpoint_results(entry)
        changed = [change for comparison in per_pair_results(entry).values() for change in comparison["changed_heads"]]
        return [draw_proportions({c: r["proportions"] for c, r in results.items()},
                                 {c: r["corrected_interval"] for c, r in results.items() if "corrected" in r},
                                 out_dir / "pattern_proportions.png",
                                 title=f"{run_title(run)}: attention patterns over all heads and dev examples"),
                draw_pattern_grid({c: r["per_head"] for c, r in results.items()}, changed,
                                  out_dir / "pattern_per_head.png",
                                  title=f"{run_title(run)}: majority pattern per head (boxed: changed by fine-tuning)")]


def shipped_cross_validation(settings: AnalysisConfig) -> dict[str, Any] | None:
    """The leave-one-task-out report of the shipped classifier (`classifier.crossval`), which
    describes how it does on a task it was not trained on; None for other weights."""
    return load_report("task") if settings.pattern_weights is None else None


def draw_proportions(proportions: dict[str, dict[str, float]], corrected: dict[str, dict[str, list[float]]],
                     path: Path, *, title: str) -> Path:
    """Grouped bars: per class, the share of maps of each checkpoint (like the paper's Figure 2);
    over each bar, where given, the 95% interval of the share corrected for the classifier's
    cross-validated errors."""
    figure, axes = plt.subplots(figsize=(6.4, 3.6))
    positions = np.arange(len(CLASSES))
    width = 0.8 / len(proportions)
    for offset, (checkpoint, shares) in enumerate(proportions.items()):
        values = [100 * shares.get(name, 0.0) for name in CLASSES]
        centres = positions + (offset - (len(proportions) - 1) / 2) * width
        bars = axes.bar(centres, values, width,
                        label=checkpoint_title(checkpoint), hatch="//" if offset else None,
                        color=[CLASS_COLOURS[name] for name in CLASSES], edgecolor="black", linewidth=0.5)
        axes.bar_label(bars, fmt="%.0f", fontsize=7)
        if checkpoint in corrected:
            low, high = (np.array([100 * corrected[checkpoint][name][side] for name in CLASSES]) for side in (0, 1))
            axes.vlines(centres, low, high, color="black", linewidth=1.2,
                        label="corrected for classifier errors (95%)" if offset == 0 else None)
    axes.set_xticks(positions, CLASSES, fontsize=8)
    axes.set_xlabel("attention pattern")
    axes.set_ylabel("share of attention maps (%)")
    axes.set_title(title, fontsize=9)
    axes.legend(fontsize=8)
    return save(figure, path)


def draw_pattern_grid(per_head: dict[str, list[list[str]]], changed: list[dict[str, Any]], path: Path, *,
                      title: str) -> Path:
    """One categorical layers x heads panel per checkpoint; changed heads outlined in all."""
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
        axes.set_title(checkpoint_title(checkpoint), fontsize=9)
    figure.legend(handles=[Patch(color=CLASS_COLOURS[name], label=name) for name in CLASSES],
                  loc="lower center", ncol=len(CLASSES), fontsize=7, frameon=False)
    figure.suptitle(title, fontsize=9)
    figure.subplots_adjust(bottom=0.25)
    return save(figure, path)
