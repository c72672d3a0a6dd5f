"""Kovaleva et al.'s Section 4.4: how much attention each head gives to linguistic features.

Shown, for each feature the stored result names (in its order): each checkpoint's value per
head with each pair's change, and the change per layer (mean over heads) of the linguistic
features, [CLS] and [SEP] left out; MLflow metrics: the largest per-head value per feature and
checkpoint. The panels of one feature are drawn here for ``features_task`` too.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict, TypeVar

from harness.results.entries import PerCheckpoint
from harness.results.run_record import RunSection
from harness.views.base import BestHead, Entry, View, per_checkpoint_results, per_pair_results, register_view
from harness.views.drawing import draw_layer_lines, draw_side_by_side_grids
from harness.views.metrics import Metric
from harness.views.samples import treebank_samples
from harness.views.titles import checkpoint_title, model_title, titled_pairs

SPECIAL = ("[CLS]", "[SEP]")


def slug(name: str) -> str:
    """A feature's name as metric names and file names spell it (``"[CLS]"`` -> ``"cls"``)."""
    return name.strip("[]").lower()


def feature_names(entry: Entry[PerCheckpoint[Statistics, FeatureChanges]]) -> list[str]:
    """The features of a stored entry, in the order the analysis measured them."""
    return next(iter(per_checkpoint_results(entry).values()))["names"]


class FeatureStatistics(TypedDict):
    """A checkpoint's attention to each feature (in ``names``' order): per head, per layer (mean over
    heads), and its largest head."""

    names: list[str]
    per_head: dict[str, list[list[float]]]
    per_layer: dict[str, list[float]]
    max_head: dict[str, BestHead]


Statistics = TypeVar("Statistics", bound=FeatureStatistics)  # the treebank's features or the task's


class FeaturesResult(FeatureStatistics):
    """A checkpoint's stored features on the treebank: the statistics, the sentences that have each
    feature, how words were read, and the words cut."""

    sentences_with_feature: dict[str, int]
    word_attention_from: str
    words_cut: int


class FeatureChanges(TypedDict):
    """A pair's change of each feature per head and per layer."""

    change_per_head: dict[str, list[list[float]]]
    change_per_layer: dict[str, list[float]]


FeaturesEntry = Entry[PerCheckpoint[FeaturesResult, FeatureChanges]]


@register_view
class FeaturesView(View[PerCheckpoint[FeaturesResult, FeatureChanges]]):
    name = "features"
    samples = treebank_samples
    order = 130
    version = 2
    stored = FeaturesResult
    compared = FeatureChanges
    per_head_keys = {"change_per_head": "change"}
    per_layer_keys = {"change_per_layer": "change"}

    @classmethod
    def metrics(cls, entry: FeaturesEntry) -> list[Metric]:
        """Per feature and checkpoint, the largest per-head value (``features_finetuned_nouns_max``)."""
        return [
            Metric(
                cls.name,
                cls.name,
                detail=f"{slug(name)}_max",
                checkpoint=checkpoint,
                value=stats["max_head"][name]["value"],
            )
            for checkpoint, stats in per_checkpoint_results(entry).items()
            for name in stats["names"]
        ]

    @classmethod
    def draw(cls, entry: FeaturesEntry, run: RunSection, out_dir: Path) -> list[Path]:
        # the sentences are the treebank's, whatever task the run fine-tuned on
        on = f"{model_title(run.get('model', 'model'))} on {entry['source']['notes'].get('treebank', 'the treebank')}"
        sentences = next(iter(per_checkpoint_results(entry).values()))["sentences_with_feature"]
        paths = [
            draw_feature_panels(entry, name, out_dir / f"features_{slug(name)}.png", title=on, counts=sentences)
            for name in feature_names(entry)
        ]
        for (before, after), comparison in zip(entry["pairs"], per_pair_results(entry).values()):
            lines = {name: values for name, values in comparison["change_per_layer"].items() if name not in SPECIAL}
            paths.append(
                draw_layer_lines(
                    lines,
                    out_dir / f"features_change_per_layer_{before}-{after}.png",
                    title=f"{on}: change in attention to linguistic features",
                    ylabel=f"{checkpoint_title(after)} minus {checkpoint_title(before)}\n(mean over heads)",
                )
            )
        return paths


def draw_feature_panels(
    entry: Entry[PerCheckpoint[Statistics, FeatureChanges]],
    name: str,
    path: Path,
    *,
    title: str,
    counts: dict[str, int],
    unit: str = "sentences",
) -> Path:
    """One feature: each checkpoint per head (shared colour scale), then each pair's change
    (diverging); the title says how many ``unit`` had the feature (``counts``)."""
    checkpoints = per_checkpoint_results(entry)
    count = counts[name]
    return draw_side_by_side_grids(
        {checkpoint_title(c): stats["per_head"][name] for c, stats in checkpoints.items()},
        path,
        title=f"{title}: attention to {name} ({count} {unit})",
        vmin=0.0,
        colorbar_label="attention (row mean, max over words)",
        differences=titled_pairs(entry["pairs"]),
    )
