"""Clark et al.'s surface analyses per head on the task's own dev inputs, for both checkpoints side by side.

Figures: attention to [CLS], [SEP] and punctuation, by relative position, and the entropies,
per head and layer with every checkpoint overlaid, and per-head grids of six statistics side
by side with their differences; tables: the heads whose Clark label changed and every
statistic per layer; metrics: how many heads carry each label per checkpoint; the overview
names the heads of four labels. Every title names the inputs: the task's dev inputs here
(one or two sentences, one or two [SEP]), not Clark's two paragraphs of running text, whose
figures (`harness.views.surface_text`) are the ones set beside Clark's Figures 2 and 4. The
claim here is Kovaleva et al.'s, made on each task's dev examples of the fine-tuned model:
[CLS] peaks before [SEP], judged on resamples of the dev examples. A study keeps the
attention to [CLS] and [SEP] per layer over seeds.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import ClassVar, Literal, TypedDict

import numpy as np

from harness.results.checkpoints import FINETUNED, PRETRAINED
from harness.results.entries import AnyEntry, Pairs, PerCheckpoint
from harness.results.run_record import RunSection
from harness.results.study_record import Elementwise, StudyRecord, TaskAggregate, view_part
from harness.views.across_tasks import draw_per_layer_by_task
from harness.views.base import (
    ChangedHead,
    Claim,
    Entry,
    PaperPoint,
    Row,
    View,
    per_checkpoint_results,
    per_pair_results,
    register_view,
)
from harness.views.drawing import draw_side_by_side_grids, panels_for, scatter_by_layer
from harness.views.evidence import StoredUnits, UnitSums, Verdict, best_above, resampled_verdict
from harness.views.markdown import markdown_table
from harness.views.metrics import Metric
from harness.views.palette import checkpoint_colour
from harness.views.papers import KOVALEVA_TASKS, expected_for
from harness.views.saving import save
from harness.views.seeds import elementwise
from harness.views.titles import checkpoint_title, run_title, suptitle, titled_pairs

# Statistic name -> how it is shown in tables and figures.
STATISTICS = {
    "self": "itself",
    "previous": "previous token",
    "next": "next token",
    "cls": "[CLS]",
    "sep": "[SEP]",
    "period": '"."',
    "comma": '","',
    "punct": '"." or ","',
    "sep_to_sep": "[SEP] rows to [SEP]",
    "rest_to_sep": "other rows to [SEP]",
    "entropy": "entropy (nats)",
    "cls_entropy": "[CLS] row entropy (nats)",
}

HEATMAP_STATISTICS = ("previous", "next", "cls", "sep", "punct", "entropy")
SERIES_STYLES = (("-", "o"), ("--", "s"))  # line style and marker of the first and second statistic in a panel
SPECIAL_TOKENS = ("cls", "sep")  # kept per input and layer for the claims, and per layer over seeds by a study
# Clark behaviour label -> how the overview table names it.
OVERVIEW_LABELS = {"previous": "previous", "next": "next", "cls": "[CLS]", "broad": "broad"}


Token = Literal["cls", "sep"]  # a key of `SpecialTokenSeries`
TOKEN_TITLES: dict[Token, str] = {"cls": "[CLS]", "sep": "[SEP]"}
HALF = 0.5  # Clark et al.: over half of a layer's attention goes to [SEP] (layers 6-10 of BERT-base)


class SpecialTokenSeries(TypedDict):
    """A checkpoint's attention to each of `SPECIAL_TOKENS` per layer over a task's seeds, element by element."""

    cls: Elementwise
    sep: Elementwise


# What a study keeps of a surface view in a task's aggregate (`SurfaceView.across_seeds`): per checkpoint
# its `SpecialTokenSeries`, under the view's ``study_key``, which differs between `SurfaceView` and its
# running-text view (a TypedDict's keys are fixed names).
SurfaceAcrossSeeds = dict[str, dict[str, SpecialTokenSeries]]


def special_tokens_part(entry: TaskAggregate, key: str) -> dict[str, SpecialTokenSeries]:
    """The ``key`` series of a task's aggregate (a surface view's ``study_key``), as declared
    (`view_part`); ask whether the task has ``key`` first."""
    return view_part(entry, SurfaceAcrossSeeds)[key]


def draw_special_tokens(study: StudyRecord, key: str, inputs: str, path: Path) -> Path:
    """Mean attention to [CLS] and to [SEP] per layer on ``inputs``, a line per task and checkpoint, a panel per
    token, from each task's ``key`` series; saved at ``path`` (PNG, with a PDF beside it); returns ``path``."""

    def series(token: Token) -> Callable[[TaskAggregate, str], list[float]]:
        return lambda entry, checkpoint: special_tokens_part(entry, key)[checkpoint][token]["mean"]

    panels = {f"attention to {title}": series(token) for token, title in TOKEN_TITLES.items()}
    return draw_per_layer_by_task(
        study, panels, "mean attention", f"Attention to [CLS] and [SEP] per layer on {inputs}", path
    )


def special_token_units(entry: SurfaceEntry, checkpoint: str) -> dict[str, UnitSums] | None:
    """``checkpoint``'s attention to [CLS] and to [SEP] per input and layer, as the analysis kept
    it, by token; None where the entry has no such checkpoint."""
    stats = per_checkpoint_results(entry).get(checkpoint)
    return None if stats is None else {token: UnitSums.read(stats["units"][token]) for token in SPECIAL_TOKENS}


def peak_layers(units: UnitSums, weights: np.ndarray) -> np.ndarray:
    """The layer with the largest mean attention on each resample (a row of ``weights``)."""
    return units.ratios(weights).argmax(axis=-1)


def cls_peaks_before_sep(checkpoint: str) -> Callable[[Entry], Verdict | None]:
    """The judge of "in ``checkpoint``, attention to [CLS] peaks in an earlier layer than attention
    to [SEP]": on each resample of the inputs, the layer of the largest mean attention to [CLS]
    comes before the layer of the largest mean attention to [SEP]."""

    def judge(entry: SurfaceEntry) -> Verdict | None:
        units = special_token_units(entry, checkpoint)
        if units is None:
            return None
        cls_units, sep_units = units["cls"], units["sep"]
        return resampled_verdict(
            lambda weights: peak_layers(cls_units, weights) < peak_layers(sep_units, weights),
            cls_units.count,
            cls_units.unit,
            f"{checkpoint_title(checkpoint)}: the layer of the largest mean attention to [CLS] "
            "comes before the layer of the largest mean attention to [SEP] (effect: layers between them)",
            effect=lambda weights: (peak_layers(sep_units, weights) - peak_layers(cls_units, weights)).astype(float),
        )

    return judge


def sep_takes_half_a_layer(checkpoint: str) -> Callable[[Entry], Verdict | None]:
    """The judge of "in ``checkpoint``, over half of some layer's attention goes to [SEP]": the
    layer with the largest mean attention to [SEP], chosen on one half of the inputs and scored
    on the other (`harness.views.evidence.best_above`: the largest of the layers scored where it
    was chosen is biased upward), is above 0.5."""

    def judge(entry: SurfaceEntry) -> Verdict | None:
        units = special_token_units(entry, checkpoint)
        if units is None:
            return None
        return best_above(
            units["sep"], HALF, f"{checkpoint_title(checkpoint)}: the largest layer's mean attention to [SEP]"
        )

    return judge


class SurfaceResult(TypedDict):
    """A checkpoint's stored surface statistics: each statistic per head and per layer, each head's
    behaviour labels and how many heads carry each, the entropy of a uniform row, how many inputs,
    and each input's attention to each special token per layer (by token)."""

    per_head: dict[str, list[list[float]]]
    per_layer: dict[str, list[float]]
    labels: list[list[list[str]]]
    label_counts: dict[str, int]
    uniform_entropy: float
    num_items: int
    units: dict[str, StoredUnits]


class LabelChanges(TypedDict):
    """A pair's heads whose labels changed."""

    label_changes: list[ChangedHead[list[str]]]


SurfaceEntry = Entry[PerCheckpoint[SurfaceResult, LabelChanges]]


@register_view
class SurfaceView(View[PerCheckpoint[SurfaceResult, LabelChanges]]):
    """Class attributes beyond `View`'s: ``inputs`` (what was measured, as titles name it),
    ``study_key`` (its per-layer series in a study's task aggregate), ``paper_row`` (the
    papers' cell of its overview row) and ``heatmaps`` (the statistics drawn as per-head grids)."""

    name = "surface"
    order = 60
    inputs: ClassVar[str] = "the task's dev inputs"
    study_key: ClassVar[str] = "special_tokens"
    paper_row: ClassVar[str] = ""
    heatmaps: ClassVar[tuple[str, ...]] = HEATMAP_STATISTICS
    claims = {
        "cls_peaks_before_sep_on_task_inputs": Claim(
            "on the task's dev inputs, attention to [CLS] peaks in an earlier layer than attention to [SEP] in the "
            "fine-tuned model",
            cls_peaks_before_sep(FINETUNED),
        )
    }
    papers = {
        "cls_peaks_before_sep_on_task_inputs": PaperPoint(
            "Kovaleva et al. 2019, Fig. 6",
            "early layers attend to [CLS], later ones to [SEP] (bert-base-uncased "
            "fine-tuned per task, on the task's dev examples; here the run's model, "
            "which may be pre-trained otherwise)",
            expected_for(KOVALEVA_TASKS),
        )
    }
    version = 3
    left_out = ("per_head",)
    stored = SurfaceResult
    compared = LabelChanges

    @classmethod
    def input_title(cls, entry: SurfaceEntry) -> str:
        """The inputs the entry measured, as its titles name them."""
        return cls.inputs

    @classmethod
    def metrics(cls, entry: SurfaceEntry) -> list[Metric]:
        """Per checkpoint: how many heads carry each of Clark's behaviour labels (``surface_finetuned_cls_heads``)."""
        return [
            Metric(cls.name, cls.name, detail=f"{label}_heads", checkpoint=checkpoint, value=count)
            for checkpoint, stats in per_checkpoint_results(entry).items()
            for label, count in stats["label_counts"].items()
        ]

    @classmethod
    def draw(cls, entry: SurfaceEntry, run: RunSection, out_dir: Path) -> list[Path]:
        return draw_surface(entry, run, out_dir, cls.name, cls.input_title(entry), cls.heatmaps)

    @classmethod
    def tables(cls, entry: SurfaceEntry, run: RunSection) -> dict[str, str]:
        inputs = cls.input_title(entry)
        return {
            f"{cls.name}_label_changes": f"# Heads whose Clark label changed on {inputs}: {run_title(run)}\n\n"
            f"{label_change_table(entry)}",
            f"{cls.name}_by_layer": f"# Clark's statistics per layer on {inputs}: {run_title(run)}\n\n"
            f"{layer_table(entry)}",
        }

    @classmethod
    def overview_rows(cls, entries: dict[str, AnyEntry], run: RunSection) -> list[Row]:
        """The heads carrying each of four Clark labels, pre-trained and fine-tuned, on the inputs it measured."""
        entry: SurfaceEntry = entries[cls.name]
        cells = {
            name: " / ".join(head_list(labelled_heads(stats["labels"], label)) for label in OVERVIEW_LABELS)
            for name, stats in per_checkpoint_results(entry).items()
        }
        return [
            (
                f"Clark heads on {cls.input_title(entry)}: {' / '.join(OVERVIEW_LABELS.values())}",
                cells[PRETRAINED],
                cells[FINETUNED],
                cls.paper_row,
            )
        ]

    @classmethod
    def across_seeds(cls, entries: list[SurfaceEntry]) -> SurfaceAcrossSeeds:
        """Attention to [CLS] and [SEP] (`SPECIAL_TOKENS`) per layer, pre-trained and fine-tuned, mean and
        spread over seeds."""
        layers = {
            checkpoint: [per_checkpoint_results(entry)[checkpoint]["per_layer"] for entry in entries]
            for checkpoint in (PRETRAINED, FINETUNED)
        }
        return {
            cls.study_key: {
                checkpoint: {
                    "cls": elementwise([per_layer["cls"] for per_layer in seeds]),
                    "sep": elementwise([per_layer["sep"] for per_layer in seeds]),
                }
                for checkpoint, seeds in layers.items()
            }
        }

    @classmethod
    def study_tables(cls, study: StudyRecord) -> dict[str, str]:
        """Attention to [CLS] and to [SEP] per layer, task and checkpoint, mean over seeds."""
        tasks = study["tasks"]
        if not tasks or not all(cls.study_key in entry for entry in tasks.values()):
            return {}
        layers = max(
            len(special_tokens_part(entry, cls.study_key)[PRETRAINED]["cls"]["mean"]) for entry in tasks.values()
        )
        rows = []
        for task, entry in tasks.items():
            for checkpoint in (PRETRAINED, FINETUNED):
                series = special_tokens_part(entry, cls.study_key)[checkpoint]
                cells = [
                    f"{cls_share:.2f} / {sep_share:.2f}"
                    for cls_share, sep_share in zip(series["cls"]["mean"], series["sep"]["mean"])
                ]
                rows.append([task, checkpoint_title(checkpoint), *cells, *["-"] * (layers - len(cells))])
        return {
            f"{cls.study_key}_per_layer_by_task": markdown_table(
                ["task", "checkpoint", *(f"layer {n}: [CLS] / [SEP]" for n in range(1, layers + 1))], rows
            )
        }

    @classmethod
    def draw_study(cls, study: StudyRecord, out_dir: Path) -> list[Path]:
        """Attention to [CLS] and [SEP] per layer and task on the inputs it measured."""
        tasks = study["tasks"].values()
        if not tasks or not all(cls.study_key in entry for entry in tasks):
            return []
        return [draw_special_tokens(study, cls.study_key, cls.inputs, out_dir / f"{cls.study_key}_by_task.png")]


def head_list(names: list[tuple[int, int]]) -> str:
    """``3-1, 4-2``: 1-indexed (layer, head) pairs, or ``none``."""
    return ", ".join(f"{layer}-{head}" for layer, head in names) or "none"


def labelled_heads(labels: list[list[list[str]]], label: str) -> list[tuple[int, int]]:
    """1-indexed (layer, head) of the heads carrying a Clark behaviour label."""
    return [
        (layer + 1, head + 1) for layer, row in enumerate(labels) for head, names in enumerate(row) if label in names
    ]


def draw_by_layer(
    entry: SurfaceEntry,
    run: RunSection,
    rows: dict[str, tuple[str, ...]],
    path: Path,
    *,
    heading: str,
    reference: dict[str, float] | None = None,
) -> Path:
    """One panel per entry of ``rows`` (y label -> its statistics), every checkpoint overlaid in
    its colour; a second statistic in a panel dashed, with square markers."""
    checkpoints = per_checkpoint_results(entry)
    figure, panels = panels_for(len(rows))
    for panel, (ylabel, statistics) in zip(panels, rows.items()):
        series = [
            (index, checkpoint, statistic, style)
            for index, checkpoint in enumerate(checkpoints)
            for statistic, style in zip(statistics, SERIES_STYLES)
        ]
        for band, (index, checkpoint, statistic, (linestyle, marker)) in enumerate(series):
            label = checkpoint_title(checkpoint) + (f": {STATISTICS[statistic]}" if len(statistics) > 1 else "")
            scatter_by_layer(
                panel,
                checkpoints[checkpoint]["per_head"][statistic],
                checkpoint_colour(checkpoint, index),
                label,
                band=(band, len(series)),
                linestyle=linestyle,
                marker=marker,
            )
        for label, value in (reference or {}).items():
            panel.axhline(value, color="black", linestyle=":", linewidth=1, label=label)
        panel.set_ylabel(ylabel)
        panel.set_xlabel("layer")
        panel.legend(fontsize=7)
    suptitle(figure, f"{heading}: {run_title(run)}")
    return save(figure, path)


def label_change_table(entry: Entry[Pairs[LabelChanges]]) -> str:
    """Markdown tables, one per declared pair, of the heads whose Clark behaviour labels changed."""
    parts = []
    for (before, after), comparison in zip(entry["pairs"], per_pair_results(entry).values()):
        lines = [
            f"**{checkpoint_title(before)} -> {checkpoint_title(after)}**",
            "",
            f"| layer | head | {checkpoint_title(before)} | {checkpoint_title(after)} |",
            "|---|---|---|---|",
        ]
        for change in comparison["label_changes"]:
            lines.append(
                f"| {change['layer']} | {change['head']} | {', '.join(change['before']) or '-'} | "
                f"{', '.join(change['after']) or '-'} |"
            )
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def layer_table(entry: SurfaceEntry) -> str:
    """Markdown: every statistic per layer (1-indexed), one column per checkpoint."""
    results = per_checkpoint_results(entry)
    lines = [
        "| statistic | " + " | ".join(checkpoint_title(c) for c in results) + " |",
        "|---" * (len(results) + 1) + "|",
    ]
    for statistic, label in STATISTICS.items():
        cells = [" ".join(f"{value:.2f}" for value in stats["per_layer"][statistic]) for stats in results.values()]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def draw_surface(
    entry: SurfaceEntry, run: RunSection, out_dir: Path, prefix: str, inputs: str, heatmaps: tuple[str, ...]
) -> list[Path]:
    """The per-layer figures of special tokens, relative position and entropy on ``inputs``, then
    a per-head grid of each statistic of ``heatmaps``, in files named ``prefix_...``; the files written."""
    uniform = next(iter(per_checkpoint_results(entry).values()))["uniform_entropy"]
    written = [
        draw_by_layer(
            entry,
            run,
            {
                "attention to [CLS]": ("cls",),
                "attention to [SEP]": ("sep",),
                'attention to "." or ","': ("punct",),
                "attention to [SEP]\nby row type": ("sep_to_sep", "rest_to_sep"),
            },
            out_dir / f"{prefix}_special_tokens.png",
            heading=f"Attention to special tokens as Clark's Fig. 2 measures it, on {inputs}",
        ),
        draw_by_layer(
            entry,
            run,
            {"previous token": ("previous",), "next token": ("next",), "itself": ("self",)},
            out_dir / f"{prefix}_relative_position.png",
            heading=f"Attention by relative position on {inputs}",
        ),
        draw_by_layer(
            entry,
            run,
            {"mean row entropy\n(nats)": ("entropy",), "[CLS] row entropy\n(nats)": ("cls_entropy",)},
            out_dir / f"{prefix}_entropy.png",
            heading=f"Attention entropy as Clark's Fig. 4 measures it, on {inputs}",
            reference={"uniform attention": uniform},
        ),
    ]
    for statistic in heatmaps:
        grids = {
            checkpoint_title(c): stats["per_head"][statistic] for c, stats in per_checkpoint_results(entry).items()
        }
        written.append(
            draw_side_by_side_grids(
                grids,
                out_dir / f"{prefix}_heads_{statistic}.png",
                differences=titled_pairs(entry["pairs"]),
                title=f"{STATISTICS[statistic]} per head on {inputs}: {run_title(run)}",
                colorbar_label="nats" if statistic == "entropy" else "mean attention",
            )
        )
    return written
