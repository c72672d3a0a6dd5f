"""Kovaleva et al.'s feature attention as their code computed it (§4.4), and her §5.

Shown, for each feature the stored result names: each checkpoint's value per head with each
pair's change (the panels of ``features``, counted in inputs), and §5's bars: the last layer's
[CLS] attention per feature, mean over heads with their range; MLflow metrics: the largest
per-head value and §5's mean over last-layer heads, per feature and checkpoint.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from harness.results.entries import PerCheckpoint
from harness.results.run_record import RunSection
from harness.views.base import Entry, View, per_checkpoint_results, register_view
from harness.views.features import (
    FeatureChanges,
    FeatureStatistics,
    FeaturesView,
    draw_feature_panels,
    feature_names,
    slug,
)
from harness.views.metrics import Metric
from harness.views.saving import plt, save
from harness.views.titles import axes_title, checkpoint_title, run_title


class TaskFeaturesResult(FeatureStatistics):
    """A checkpoint's stored features on the task's inputs: the statistics, the inputs that have
    each feature and those counted for it, how many examples, and per feature the last layer's
    [CLS] attention per head (§5)."""

    inputs_with_feature: dict[str, int]
    inputs_counted: dict[str, int]
    examples: int
    cls_last_layer: dict[str, list[float]]


TaskFeaturesEntry = Entry[PerCheckpoint[TaskFeaturesResult, FeatureChanges]]


@register_view
class TaskFeaturesView(View[PerCheckpoint[TaskFeaturesResult, FeatureChanges]]):
    name = "features_task"
    order = 140
    version = 1
    stored = TaskFeaturesResult
    compared = FeatureChanges
    per_head_keys, per_layer_keys = FeaturesView.per_head_keys, FeaturesView.per_layer_keys  # the same changes

    @classmethod
    def metrics(cls, entry: TaskFeaturesEntry) -> list[Metric]:
        """Per feature and checkpoint: the largest per-head value (``features_task_finetuned_nouns_max``),
        and §5's mean over last-layer heads (``cls_last_layer_finetuned_nouns``)."""
        out = []
        for checkpoint, stats in per_checkpoint_results(entry).items():
            for name in stats["names"]:
                out += [
                    Metric(
                        cls.name,
                        cls.name,
                        detail=f"{slug(name)}_max",
                        checkpoint=checkpoint,
                        value=stats["max_head"][name]["value"],
                    ),
                    Metric(
                        cls.name,
                        "cls_last_layer",
                        detail=slug(name),
                        checkpoint=checkpoint,
                        value=float(np.mean(stats["cls_last_layer"][name])),
                    ),
                ]
        return out

    @classmethod
    def draw(cls, entry: TaskFeaturesEntry, run: RunSection, out_dir: Path) -> list[Path]:
        first = next(iter(per_checkpoint_results(entry).values()))
        inputs = first["examples"]
        # a feature's panels say how many of the inputs have it ("3 of 64 inputs"): the count once
        paths = [
            draw_feature_panels(
                entry,
                name,
                out_dir / f"features_task_{slug(name)}.png",
                title=f"{run_title(run)} dev (spaCy tags)",
                counts=first["inputs_with_feature"],
                unit=f"of {inputs} inputs",
            )
            for name in feature_names(entry)
        ]
        return [
            *paths,
            draw_cls_focus(
                entry,
                out_dir / "features_task_cls_last_layer.png",
                title=f"{run_title(run)} dev ({inputs} inputs, spaCy tags)",
            ),
        ]


def draw_cls_focus(entry: TaskFeaturesEntry, path: Path, *, title: str) -> Path:
    """§5: per feature, the last layer's [CLS] attention (mean over heads, with the range of
    heads as error bars), one bar per checkpoint."""
    results = per_checkpoint_results(entry)
    names = feature_names(entry)
    figure, axes = plt.subplots(figsize=(7.8, 3.4))  # room for the legend beside the bars
    width = 0.8 / len(results)
    positions = np.arange(len(names))
    for offset, (checkpoint, stats) in enumerate(results.items()):
        per_head = np.asarray([stats["cls_last_layer"][name] for name in names])  # (features, heads)
        mean = per_head.mean(axis=1)
        spread = [mean - per_head.min(axis=1), per_head.max(axis=1) - mean]
        axes.bar(positions + offset * width, mean, width, yerr=spread, capsize=2, label=checkpoint_title(checkpoint))
    axes.set_xticks(positions + width * (len(results) - 1) / 2, names, rotation=20)
    axes.set_ylabel("attention from [CLS], last layer\n(mean over heads; bars: range)")
    axes_title(axes, f"{title}: where [CLS] looks in the last layer (Kovaleva §5)")
    axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))  # beside the bars: no range hidden
    axes.grid(alpha=0.3, axis="y")
    return save(figure, path)
