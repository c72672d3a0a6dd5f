"""Kovaleva et al.'s attention patterns: how often each head's maps are vertical, diagonal,
vertical+diagonal, block or heterogeneous, before and after fine-tuning.

Figures: the share of each class over all maps per checkpoint (the paper's Figure 2), with
the 95% interval of the share corrected for the classifier's cross-validated errors (over
resamples of the dev examples and draws of the classifier's confusion), and the majority
class of each head per checkpoint, the heads whose class changed outlined; metrics: the share
of each class per checkpoint and the classifier's cross-validated macro-F1, the changes of the
shares the headline; the overview gives the shares. A study reports whether the share of each
class rises or falls with fine-tuning, each change judged by its paired interval over the
dev examples (each example's count of heads per class is stored, `harness.views.evidence`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import NotRequired, TypedDict

import numpy as np

from classifier import CLASSES
from harness.config import Settings, analysis_settings
from harness.options import existing, option
from harness.results.checkpoints import FINETUNED, PRETRAINED
from harness.results.entries import AnyEntry, PerCheckpoint
from harness.results.run_record import RunSection
from harness.results.study_record import StudyRecord, TaskAggregate, view_part
from harness.views.across_tasks import CHECKPOINTS, study_title
from harness.views.base import (
    ChangedHead,
    Entry,
    PaperPoint,
    Row,
    View,
    checkpoint_units,
    per_checkpoint_results,
    per_pair_results,
    register_view,
)
from harness.views.evidence import Change, StoredUnits
from harness.views.lazy import mpl
from harness.views.markdown import markdown_table
from harness.views.metrics import Metric
from harness.views.palette import GREY, OKABE_ITO
from harness.views.papers import PRASANNA_HETEROGENEOUS, directions
from harness.views.saving import plt, save
from harness.views.titles import axes_title, checkpoint_title, run_title, suptitle

ANALYSIS = "patterns"
UNIT = "dev examples"  # what the shares sample: each example's maps, all heads of it together
CLASS_COLOURS = {
    "vertical": OKABE_ITO["blue"],
    "diagonal": OKABE_ITO["orange"],
    "vertical+diagonal": OKABE_ITO["green"],
    "block": OKABE_ITO["vermillion"],
    "heterogeneous": GREY,
}


def share(name: str, checkpoint: str | None = None, value: float | None = None) -> Metric:
    """A checkpoint's share of class ``name``: ``pattern_finetuned_vertical_diagonal`` (its
    `Metric.changed`, the signed change: ``pattern_change_vertical_diagonal``)."""
    return Metric(ANALYSIS, "pattern", detail=name.replace("+", "_"), checkpoint=checkpoint, value=value)


class CorrectedShare(TypedDict):
    """A class's share corrected for the classifier's errors over a task's seeds: the seeds' mean and
    the envelope of their 95% intervals (lowest low, highest high)."""

    mean: float
    interval: list[float]


class PatternsAcrossSeeds(TypedDict, total=False):
    """What a study keeps of the patterns in a task's aggregate (`PatternsView.across_seeds`): per
    checkpoint and class the corrected share, where every seed stored it (else nothing)."""

    pattern_corrected: dict[str, dict[str, CorrectedShare]]


def patterns_part(entry: TaskAggregate) -> PatternsAcrossSeeds:
    """The patterns' part of a task's aggregate, as declared (`view_part`)."""
    return view_part(entry, PatternsAcrossSeeds)


def draw_pattern_shares(study: StudyRecord, path: Path) -> Path:
    """Stacked shares of each attention pattern per task, pre-trained and fine-tuned bars side by side (mean over
    seeds), saved at ``path`` (PNG, with a PDF beside it); returns ``path``."""
    tasks = list(study["tasks"])
    figure, axes = plt.subplots(figsize=(max(4.5, 1.3 * len(tasks) + 1.5), 3.8), layout="constrained")
    width = 0.38
    for offset, checkpoint in zip((-width / 2 - 0.01, width / 2 + 0.01), CHECKPOINTS):
        bottom = np.zeros(len(tasks))
        for name in CLASSES:
            shares = np.array([study["tasks"][task]["metrics"][share(name, checkpoint).name]["mean"] for task in tasks])
            axes.bar(
                np.arange(len(tasks)) + offset,
                shares,
                width,
                bottom=bottom,
                color=CLASS_COLOURS[name],
                edgecolor="black",
                linewidth=0.4,
                label=name if checkpoint == PRETRAINED else None,
            )
            bottom += shares
    axes.set_xticks(np.arange(len(tasks)), [f"{task}\npre / fine" for task in tasks], fontsize=8)
    axes.set_ylabel("share of attention maps")
    axes.set_ylim(0, 1)
    axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    suptitle(figure, study_title(study, "Attention patterns per task, pre-trained (left) and fine-tuned (right)"))
    return save(figure, path)


class PatternResult(TypedDict):
    """A checkpoint's stored patterns: the share of each class over all maps (and, with the shipped
    classifier's cross-validation, corrected for its errors with 95% intervals, and the
    cross-validated confusion counts the correction used), each head's
    majority class and its count of each class, how many examples (and sentence pairs) were
    classified, and each example's count of heads per class (`UNIT`)."""

    proportions: dict[str, float]
    corrected: NotRequired[dict[str, float]]
    corrected_interval: NotRequired[dict[str, list[float]]]
    confusion: NotRequired[list[list[int]]]
    per_head: list[list[str]]
    counts_per_head: list[list[list[int]]]
    num_examples: int
    pair_inputs: int
    units: StoredUnits


class PatternComparison(TypedDict):
    """A pair's heads whose majority class changed, and each class's change of share (by the name of
    its signed change)."""

    changed_heads: list[ChangedHead[str]]
    evidence: dict[str, Change]


@analysis_settings
@dataclass
class PatternSettings(Settings):
    """Which weights classify the attention maps."""

    pattern_weights: Path | None = option(
        None,
        "attention-pattern classifier weights from `python -m classifier train` (default: the shipped weights)",
        after="word_attention_from",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        self.pattern_weights = existing(PatternSettings, "pattern_weights", self.pattern_weights)


PatternsEntry = Entry[PerCheckpoint[PatternResult, PatternComparison]]


@register_view
class PatternsView(View[PerCheckpoint[PatternResult, PatternComparison]]):
    name = ANALYSIS
    order = 50
    along_by_default = True  # the study's findings on when attention changes read it
    # 3: `block` never predicted for single sentences; 4: the CNN sees the segments and measurements;
    # 5: boosted trees on the maps' measurements; 7: retrained on 1,325 labels with pure synthetic blocks;
    # 8: the within-segment measure per token (fair to unequal segments), 1,405 labels, longer synthetic maps;
    # 9: the band against chance (band lift) and its diagonal / heterogeneous line, depth-2 trees;
    # 10: per-example class counts (`units`), the corrected intervals over the examples too;
    # 11: the changes of the corrected shares (the classifier's confusion stored with them)
    version = 11
    stored = PatternResult
    compared = PatternComparison
    signed_changes = {share(name).changed().name: f"the share of {name} attention maps" for name in CLASSES}
    per_head_parts = {"counts_per_head": tuple(f"counts.{name}" for name in CLASSES)}
    papers = {
        share("heterogeneous").changed().name: PaperPoint(
            "Prasanna et al. 2020 (Kovaleva et al.'s classes, Fig. 2)",
            "heterogeneous share of bert-base-uncased, "
            "pre-trained to fine-tuned: "
            + ", ".join(
                f"{task} {before:.1f} to {after:.1f}" for task, (before, after) in PRASANNA_HETEROGENEOUS.items()
            ),
            directions(PRASANNA_HETEROGENEOUS),
        )
    }

    @classmethod
    def timed_units(cls, entry: PatternsEntry) -> dict[str, StoredUnits]:
        """Each checkpoint's per-example class counts: what the findings on when the shares change resample."""
        return checkpoint_units(entry)

    @classmethod
    def metrics(cls, entry: PatternsEntry) -> list[Metric]:
        """Share of each class per checkpoint, e.g. ``pattern_finetuned_vertical_diagonal``, and the
        classifier's cross-validated macro-F1."""
        shares = [
            share(name, checkpoint, value)
            for checkpoint, stats in per_checkpoint_results(entry).items()
            for name, value in stats["proportions"].items()
        ]
        score = entry.get("settings", {}).get("cross_validation")
        return shares + ([Metric(cls.name, "pattern_classifier_cv_macro_f1", value=score["macro_f1"])] if score else [])

    @classmethod
    def headline(cls, entry: PatternsEntry, metrics: list[Metric]) -> list[Metric]:
        """How the share of each pattern changed."""
        return [metric for metric in metrics if metric.change]

    @classmethod
    def draw(cls, entry: PatternsEntry, run: RunSection, out_dir: Path) -> list[Path]:
        results = per_checkpoint_results(entry)
        changed = [change for comparison in per_pair_results(entry).values() for change in comparison["changed_heads"]]
        return [
            draw_proportions(
                {c: r["proportions"] for c, r in results.items()},
                {c: r["corrected_interval"] for c, r in results.items() if "corrected" in r},
                out_dir / "pattern_proportions.png",
                title=f"{run_title(run)}: attention patterns over all heads and dev examples",
            ),
            draw_pattern_grid(
                {c: r["per_head"] for c, r in results.items()},
                changed,
                out_dir / "pattern_per_head.png",
                title=f"{run_title(run)}: majority pattern per head (boxed: changed by fine-tuning)",
            ),
        ]

    @classmethod
    def overview_rows(cls, entries: dict[str, AnyEntry], run: RunSection) -> list[Row]:
        """The share of each class, pre-trained and fine-tuned, in percent."""
        shares = {
            name: " / ".join(f"{100 * stats['proportions'][label]:.1f}" for label in CLASSES)
            for name, stats in per_checkpoint_results(entries[cls.name]).items()
        }
        return [
            (
                "pattern shares (vert / diag / vert+diag / block / het, %)",
                shares[PRETRAINED],
                shares[FINETUNED],
                "heterogeneous 32-61%",
            )
        ]

    @classmethod
    def across_seeds(cls, entries: list[PatternsEntry]) -> PatternsAcrossSeeds:
        """Per checkpoint and class, the share corrected for the classifier's errors: its mean
        over seeds and the envelope of the seeds' 95% intervals (lowest low, highest high)."""
        results = [
            {c: r for c, r in per_checkpoint_results(entry).items() if "corrected_interval" in r} for entry in entries
        ]
        checkpoints = set.intersection(*(set(found) for found in results))
        return (
            {
                "pattern_corrected": {
                    c: {
                        name: {
                            "mean": float(np.mean([r[c]["corrected"][name] for r in results])),
                            "interval": [
                                min(r[c]["corrected_interval"][name][0] for r in results),
                                max(r[c]["corrected_interval"][name][1] for r in results),
                            ],
                        }
                        for name in CLASSES
                    }
                    for c in sorted(checkpoints)
                }
            }
            if checkpoints
            else {}
        )

    @classmethod
    def study_tables(cls, study: StudyRecord) -> dict[str, str]:
        """Each class's share per task and checkpoint beside Prasanna et al.'s heterogeneous share."""
        tasks = study["tasks"]
        if not tasks or not all(share(CLASSES[0], PRETRAINED).name in entry["metrics"] for entry in tasks.values()):
            return {}
        return {"pattern_shares_by_task": pattern_shares_table(tasks)}

    @classmethod
    def draw_study(cls, study: StudyRecord, out_dir: Path) -> list[Path]:
        """Kovaleva et al.'s Figure 2 per task: each pattern's share, pre-trained beside fine-tuned."""
        tasks = study["tasks"].values()
        if not tasks or not all(share(CLASSES[0], PRETRAINED).name in entry["metrics"] for entry in tasks):
            return []
        return [draw_pattern_shares(study, out_dir / "pattern_shares_by_task.png")]


def pattern_shares_table(tasks: dict[str, TaskAggregate]) -> str:
    """Rows of task and checkpoint: each class's share in percent, mean over seeds, as the
    classifier labels the maps and, where stored, corrected for its errors with the envelope
    of the seeds' 95% intervals; Prasanna et al.'s heterogeneous share (bert-base-uncased)
    beside it."""
    rows = []
    for task, entry in tasks.items():
        for index, checkpoint in enumerate(CHECKPOINTS):
            corrected = patterns_part(entry).get("pattern_corrected", {}).get(checkpoint, {})
            cells = [
                f"{100 * entry['metrics'][share(name, checkpoint).name]['mean']:.1f}"
                + (
                    f"; {100 * corrected[name]['mean']:.1f} [{100 * corrected[name]['interval'][0]:.0f}, "
                    f"{100 * corrected[name]['interval'][1]:.0f}]"
                    if name in corrected
                    else ""
                )
                for name in CLASSES
            ]
            paper = PRASANNA_HETEROGENEOUS.get(task)
            rows.append([task, checkpoint_title(checkpoint), *cells, f"{paper[index]:.1f}" if paper else "-"])
    return markdown_table(
        [
            "task",
            "checkpoint",
            *(f"{name} %: labelled; corrected [95%]" for name in CLASSES),
            "heterogeneous %, Prasanna et al. (BERT-base)",
        ],
        rows,
    )


def draw_proportions(
    proportions: dict[str, dict[str, float]], corrected: dict[str, dict[str, list[float]]], path: Path, *, title: str
) -> Path:
    """Grouped bars: per class, the share of maps of each checkpoint (like the paper's Figure 2)
    with its value written above; over each bar, where given, the 95% interval of the share
    corrected for the classifier's cross-validated errors, the value then written above the
    interval's top (the interval need not hold the bar's top) so that it hides no part of it."""
    figure, axes = plt.subplots(figsize=(6.4, 3.6))
    positions = np.arange(len(CLASSES))
    width = 0.8 / len(proportions)
    for offset, (checkpoint, shares) in enumerate(proportions.items()):
        values = np.array([100 * shares.get(name, 0.0) for name in CLASSES])
        centres = positions + (offset - (len(proportions) - 1) / 2) * width
        axes.bar(
            centres,
            values,
            width,
            label=checkpoint_title(checkpoint),
            hatch="//" if offset else None,
            color=[CLASS_COLOURS[name] for name in CLASSES],
            edgecolor="black",
            linewidth=0.5,
        )
        tops = values
        if checkpoint in corrected:
            low, high = (np.array([100 * corrected[checkpoint][name][side] for name in CLASSES]) for side in (0, 1))
            axes.errorbar(
                centres,
                low,
                yerr=[np.zeros_like(low), high - low],
                fmt="none",
                ecolor="black",
                elinewidth=1.2,
                capsize=2,
                label="corrected for classifier errors (95%)" if offset == 0 else None,
            )
            tops = np.maximum(values, high)
        for centre, top, value in zip(centres, tops, values):
            axes.annotate(
                f"{value:.0f}",
                (centre, top),
                xytext=(0, 3),
                textcoords="offset points",
                ha="center",
                va="bottom",
                fontsize=7,
            )
    axes.set_xticks(positions, CLASSES, fontsize=8)
    axes.set_xlabel("attention pattern")
    axes.set_ylabel("share of attention maps (%)")
    axes.margins(y=0.12)  # room above the highest label
    axes_title(axes, title)
    axes.legend(fontsize=8)
    return save(figure, path)


def draw_pattern_grid(
    per_head: dict[str, list[list[str]]], changed: list[ChangedHead[str]], path: Path, *, title: str
) -> Path:
    """One categorical layers x heads panel per checkpoint; changed heads outlined in all."""
    colours = mpl.colors.ListedColormap([CLASS_COLOURS[name] for name in CLASSES])
    layers, heads = len(next(iter(per_head.values()))), len(next(iter(per_head.values()))[0])
    figure, panels = plt.subplots(
        1,
        len(per_head),
        figsize=(0.42 * heads * len(per_head) + 2.5, 0.42 * layers + 2.2),
        squeeze=False,
        layout="constrained",
    )  # lays the legend out beside the panels
    for axes, (checkpoint, names) in zip(panels[0], per_head.items()):
        grid = np.array([[CLASSES.index(name) for name in row] for row in names])
        axes.imshow(grid, cmap=colours, vmin=-0.5, vmax=len(CLASSES) - 0.5, aspect="auto")
        for entry in changed:
            axes.add_patch(
                mpl.patches.Rectangle(
                    (entry["head"] - 1.5, entry["layer"] - 1.5), 1, 1, fill=False, edgecolor="black", linewidth=1.5
                )
            )
        axes.set_xticks(range(heads), [str(h + 1) for h in range(heads)], fontsize=7)
        axes.set_yticks(range(layers), [str(layer + 1) for layer in range(layers)], fontsize=7)
        axes.set_xlabel("head")
        axes.set_ylabel("layer")
        axes.set_title(checkpoint_title(checkpoint), fontsize=9)
    figure.legend(
        handles=[mpl.patches.Patch(color=CLASS_COLOURS[name], label=name) for name in CLASSES],
        loc="outside right center",
        fontsize=7,
        frameon=False,
    )
    suptitle(figure, title, fontsize=9)
    return save(figure, path)
