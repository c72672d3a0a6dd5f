"""Vig's head behaviours, for both checkpoints side by side: how much each head attends to
identical words in the same and in the other sentence, to the other pieces of the same word,
to the next and the previous token and to the delimiters, each beside its chance level.

Vig ("Deconstructing BERT", 2019; "A Multiscale Visualization of Attention in the Transformer
Model", ACL 2019 demo) named these behaviours from visualisations of BERT-base without counting
them. Figures: each behaviour per head and layer with its chance level (the share a uniform row
would give), and per-head grids of each behaviour side by side with their differences; tables:
per behaviour, its labelled and strongest heads in every checkpoint with each declared pair's
change, and the heads whose behaviour labels changed; metrics: per checkpoint the strongest
head and the mean over heads of each behaviour, how many heads carry each label, and the
chance levels; the overview counts the labelled heads and names the strongest head linking the
two sentences through identical words. A study keeps the identical-word behaviours per layer
over seeds and reports whether the attention to identical words in the other sentence rises or
falls with fine-tuning, by the changes' intervals over resampled dev examples, which that
behaviour's table gives too. On a single-sentence task (CoLA, SST-2) the other sentence is not
defined: its panel, grid and table are left out, the lines printed say nothing of it, and the
overview says so in words.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import NotRequired, TypedDict

import numpy as np

from harness.results.checkpoints import FINETUNED, PRETRAINED
from harness.results.entries import AnyEntry, PerCheckpoint
from harness.results.run_record import RunSection
from harness.results.study_record import Elementwise, StudyRecord, TaskAggregate, view_part
from harness.views.across_tasks import CHECKPOINTS, draw_per_layer_by_task, metric_table
from harness.views.base import (
    ChangedHead,
    Entry,
    HeadValue,
    PaperPoint,
    Row,
    View,
    per_checkpoint_results,
    per_pair_results,
    register_view,
)
from harness.views.drawing import draw_side_by_side_grids, panels_for, scatter_by_layer
from harness.views.evidence import RESAMPLES, Change, StoredUnits, best_of_many_words
from harness.views.markdown import markdown_table
from harness.views.metrics import Metric, chosen
from harness.views.palette import checkpoint_colour
from harness.views.saving import save
from harness.views.seeds import elementwise
from harness.views.surface import label_change_table
from harness.views.titles import axes_title, checkpoint_title, difference_title, run_title, suptitle, titled_pairs

# Statistic name -> how it is shown; each behaviour's label is named as its statistic.
STATISTICS = {
    "same_segment_identical": "identical words in the same sentence",
    "other_segment_identical": "identical words in the other sentence",
    "same_word_pieces": "other pieces of the same word",
    "next": "the next token",
    "previous": "the previous token",
    "delimiters": "the delimiters ([CLS], [SEP])",
}
ANALYSIS = "vig"
CROSS = "other_segment_identical"  # the question: heads that link the two sentences through identical words
UNIT = "dev examples"  # what the changes of `CROSS` are resampled over
IDENTICAL = ("same_segment_identical", "other_segment_identical")  # kept per layer over seeds
TABLE_HEADS = 5  # a behaviour's table lists its labelled heads and this many strongest heads of each checkpoint
VIG_2019 = "named, not counted (Vig 2019)"
NOT_DEFINED = "not defined: one sentence per example"
CHANCE = "chance"  # the share a uniform row would give: the reference of each behaviour
COUNTS_ROW = "Vig heads: identical words in the same / other sentence, word pieces, next, previous, delimiters"


def behaviour(what: str, checkpoint: str | None = None, value: float | None = None) -> Metric:
    """A checkpoint's metric ``what`` of a behaviour (its ``max``, ``mean`` or ``heads``):
    ``vig_finetuned_next_max``."""
    return Metric(ANALYSIS, "vig", detail=what, checkpoint=checkpoint, value=value)


def change_of(what: str) -> str:
    """The name of the fine-tuned minus pre-trained change of ``what``: ``vig_change_next_max``."""
    return behaviour(what, FINETUNED).changed().name


def cross_keys(what: str) -> list[Metric]:
    """The pre-trained and fine-tuned checkpoints' metric ``what`` and its change, without values."""
    return [behaviour(what, checkpoint) for checkpoint in CHECKPOINTS] + [behaviour(what, FINETUNED).changed()]


def defined(stats: VigResult, statistic: str) -> bool:
    """Whether ``statistic`` means anything on the inputs of a checkpoint's ``stats``: every one
    does but attention to the other sentence, which needs pairs of sentences. Results stored
    before the pairs were counted (no ``pair_items``) tell a single-sentence task by its having
    no row for it."""
    return statistic != CROSS or stats.get("pair_items", stats["examples"][CROSS]) > 0


def defined_statistics(entry: VigEntry) -> list[str]:
    """The statistics of `STATISTICS` that an entry's inputs define (`defined`)."""
    first = next(iter(per_checkpoint_results(entry).values()))
    return [statistic for statistic in STATISTICS if defined(first, statistic)]


def strongest_cell(stats: VigResult, statistic: str) -> str:
    """``5-3: 0.421 (chance 0.031)``: a checkpoint's strongest head of ``statistic``, or why there is none."""
    if not defined(stats, statistic):
        return NOT_DEFINED
    if not stats["examples"][statistic]:
        return "no example has such rows"
    best = stats["strongest"][statistic]
    return f"{best['layer']}-{best['head']}: {best['value']:.3f} (chance {stats['chance'][statistic]:.3f})"


def label_counts_cell(stats: VigResult) -> str:
    """``0 / 1 / 2 / 3 / 4 / 30``: how many heads carry each label, in `STATISTICS` order ("not
    defined" for a label the inputs do not define)."""
    return " / ".join(
        str(stats["label_counts"][label]) if defined(stats, label) else "not defined" for label in STATISTICS
    )


class VigResult(TypedDict):
    """A checkpoint's stored behaviours: each per head and per layer, its strongest head, its
    chance level and the examples that have rows for it, each head's labels and how many heads
    carry each, how many inputs (``pair_items`` of them pairs of sentences; absent from results
    stored before they were counted), and each example's share of `CROSS` per head (`UNIT`)."""

    per_head: dict[str, list[list[float]]]
    per_layer: dict[str, list[float]]
    strongest: dict[str, HeadValue]
    chance: dict[str, float]
    examples: dict[str, int]
    labels: list[list[list[str]]]
    label_counts: dict[str, int]
    num_items: int
    pair_items: NotRequired[int]
    units: StoredUnits


class VigComparison(TypedDict):
    """A pair's change of every behaviour per head, the heads whose labels changed, and the changes
    of `CROSS` with their intervals (by the names of its signed changes; none where undefined)."""

    per_head: dict[str, list[list[float]]]
    label_changes: list[ChangedHead[list[str]]]
    evidence: dict[str, Change]


VigEntry = Entry[PerCheckpoint[VigResult, VigComparison]]


@register_view
class VigView(View[PerCheckpoint[VigResult, VigComparison]]):
    name = ANALYSIS
    order = 90
    version = 3  # 3: the strongest head's change cross-fitted (a re-chosen maximum is biased upward)
    stored = VigResult
    compared = VigComparison
    signed_changes = {
        change_of(f"{CROSS}_max"): "the strongest head's share of attention to identical words in the other sentence",
        change_of(f"{CROSS}_mean"): "the mean share over heads of attention to identical words in the other sentence",
    }
    papers = dict.fromkeys(
        signed_changes,
        PaperPoint(
            "Vig 2019",
            "pre-trained BERT and GPT-2 only: some heads attend to identical words, "
            "in the same and in the other sentence; no fine-tuned model measured",
        ),
    )

    @classmethod
    def metrics(cls, entry: VigEntry) -> list[Metric]:
        """Per checkpoint and behaviour: the strongest head's share (``_max``), the mean over heads
        (``_mean``), how many heads carry its label (``_heads``); and each chance level. A
        behaviour no example has rows for (pairs whose sentences share no word) has only its head
        count, 0: its shares are not 0 but undefined, and a study does not judge them. The other
        sentence of a single-sentence task has no metric at all: it is not defined there."""
        results = per_checkpoint_results(entry)
        first = next(iter(results.values()))
        measured = [statistic for statistic in STATISTICS if first["examples"][statistic]]
        out = [
            behaviour(f"{statistic}_{what}", checkpoint, value)
            for checkpoint, stats in results.items()
            for statistic in measured
            for what, value in (
                ("max", stats["strongest"][statistic]["value"]),
                ("mean", float(np.mean(stats["per_head"][statistic]))),
            )
        ]
        out += [
            behaviour(f"{statistic}_heads", checkpoint, stats["label_counts"][statistic])
            for checkpoint, stats in results.items()
            for statistic in defined_statistics(entry)
        ]
        return out + [
            Metric(cls.name, "vig", detail=statistic, reference=CHANCE, value=first["chance"][statistic])
            for statistic in measured
        ]

    @classmethod
    def headline(cls, entry: VigEntry, metrics: list[Metric]) -> list[Metric]:
        """The issue's question, does fine-tuning build or remove heads that link the two sentences
        through identical words: the strongest such head's share and how many heads carry the
        label, per checkpoint and their changes (the other labels' counts are metrics and a
        study table)."""
        return chosen(metrics, [key for what in ("max", "heads") for key in cross_keys(f"{CROSS}_{what}")])

    @classmethod
    def draw(cls, entry: VigEntry, run: RunSection, out_dir: Path) -> list[Path]:
        return [
            draw_by_layer(entry, run, out_dir / "vig_by_layer.png"),
            *(
                draw_heads(entry, run, statistic, out_dir / f"vig_heads_{statistic}.png")
                for statistic in defined_statistics(entry)
            ),
        ]

    @classmethod
    def tables(cls, entry: VigEntry, run: RunSection) -> dict[str, str]:
        tables = {
            "vig_label_changes": f"# Heads whose Vig behaviour label changed: {run_title(run)}\n\n"
            f"{label_change_table(entry)}"
        }
        tables.update(
            {
                f"vig_heads_{statistic}": f"# Attention to {STATISTICS[statistic]} per head (its labelled "
                f"heads and the {TABLE_HEADS} strongest of each checkpoint): "
                f"{run_title(run)}\n\n{head_table(entry, statistic)}"
                for statistic in defined_statistics(entry)
            }
        )
        if CROSS in defined_statistics(entry):
            tables[f"vig_heads_{CROSS}"] += change_lines(entry)
        return tables

    @classmethod
    def overview_rows(cls, entries: dict[str, AnyEntry], run: RunSection) -> list[Row]:
        """How many heads carry each Vig label, and the strongest head on identical words in the other sentence."""
        results = per_checkpoint_results(entries[cls.name])
        return [
            (COUNTS_ROW, label_counts_cell(results[PRETRAINED]), label_counts_cell(results[FINETUNED]), VIG_2019),
            (
                f"Vig: strongest head on {STATISTICS[CROSS]}",
                strongest_cell(results[PRETRAINED], CROSS),
                strongest_cell(results[FINETUNED], CROSS),
                VIG_2019,
            ),
        ]

    @classmethod
    def printed(cls, entry: VigEntry) -> list[str]:
        """Per checkpoint the heads per label and, on pairs of sentences, the strongest head
        linking them; per pair how many heads changed label."""
        labels = defined_statistics(entry)
        lines = [
            f"vig ({checkpoint}): heads "
            + ", ".join(f"{name} {stats['label_counts'][name]}" for name in labels)
            + (f"; strongest on {STATISTICS[CROSS]} {strongest_cell(stats, CROSS)}" if CROSS in labels else "")
            for checkpoint, stats in per_checkpoint_results(entry).items()
        ]
        return lines + [
            f"vig ({pair}): {len(comparison['label_changes'])} heads changed behaviour label"
            for pair, comparison in per_pair_results(entry).items()
        ]

    @classmethod
    def across_seeds(cls, entries: list[VigEntry]) -> VigAcrossSeeds:
        """Attention to identical words per layer, pre-trained and fine-tuned, mean and spread over
        seeds (in the other sentence only where the task has pairs of sentences)."""
        kept = [name for name in IDENTICAL if all(name in defined_statistics(entry) for entry in entries)]
        return {
            "vig_identical": {
                checkpoint: {
                    statistic: elementwise(
                        [per_checkpoint_results(entry)[checkpoint]["per_layer"][statistic] for entry in entries]
                    )
                    for statistic in kept
                }
                for checkpoint in CHECKPOINTS
            }
        }

    @classmethod
    def draw_study(cls, study: StudyRecord, out_dir: Path) -> list[Path]:
        """Attention to identical words in the same and in the other sentence per layer and task."""
        tasks = study["tasks"].values()
        if not tasks or not all("vig_identical" in entry for entry in tasks):
            return []
        return [draw_identical_by_task(study, out_dir / "vig_identical_by_task.png")]

    @classmethod
    def study_tables(cls, study: StudyRecord) -> dict[str, str]:
        """Heads per label and the strongest head linking the sentences per task, mean ± s.d. over seeds."""
        present = {name for entry in study["tasks"].values() for name in entry["metrics"]}
        keys = [behaviour(f"{label}_heads", checkpoint) for label in STATISTICS for checkpoint in CHECKPOINTS]
        names = [key.name for key in keys + cross_keys(f"{CROSS}_max") if key.name in present]
        return {"vig_by_task": metric_table(study, names)} if names else {}


def draw_by_layer(entry: VigEntry, run: RunSection, path: Path) -> Path:
    """One panel per behaviour: each checkpoint's share per head (dots) and per layer (line)
    overlaid in its colour, and the chance level (dotted)."""
    checkpoints = per_checkpoint_results(entry)
    chance = next(iter(checkpoints.values()))["chance"]
    statistics = defined_statistics(entry)
    figure, panels = panels_for(len(statistics))
    for panel, statistic in zip(panels, statistics):
        for index, (checkpoint, stats) in enumerate(checkpoints.items()):
            scatter_by_layer(
                panel,
                stats["per_head"][statistic],
                checkpoint_colour(checkpoint, index),
                checkpoint_title(checkpoint),
                band=(index, len(checkpoints)),
            )
        panel.axhline(chance[statistic], color="black", linestyle=":", linewidth=1, label="chance (uniform row)")
        axes_title(panel, STATISTICS[statistic])
        panel.set_ylabel("share of attention")
        panel.set_xlabel("layer")
        panel.legend(fontsize=7)
    suptitle(figure, f"Vig's head behaviours per layer: {run_title(run)}")
    return save(figure, path)


def draw_heads(entry: VigEntry, run: RunSection, statistic: str, path: Path) -> Path:
    """A per-head grid of ``statistic`` for every checkpoint, side by side with each pair's difference."""
    checkpoints = per_checkpoint_results(entry)
    chance = next(iter(checkpoints.values()))["chance"][statistic]
    grids = {checkpoint_title(checkpoint): stats["per_head"][statistic] for checkpoint, stats in checkpoints.items()}
    return draw_side_by_side_grids(
        grids,
        path,
        differences=titled_pairs(entry["pairs"]),
        colorbar_label="share of attention",
        title=f"Attention to {STATISTICS[statistic]} per head (chance {chance:.3f}): {run_title(run)}",
    )


def table_heads(entry: VigEntry, statistic: str) -> list[tuple[int, int]]:
    """0-indexed (layer, head) of the heads carrying ``statistic``'s label in any checkpoint and
    the `TABLE_HEADS` strongest of each checkpoint, strongest (over checkpoints) first."""
    grids = [np.asarray(stats["per_head"][statistic]) for stats in per_checkpoint_results(entry).values()]
    labelled = {
        (layer, head)
        for stats in per_checkpoint_results(entry).values()
        for layer, row in enumerate(stats["labels"])
        for head, labels in enumerate(row)
        if statistic in labels
    }
    strongest: set[tuple[int, int]] = {
        (int(layer), int(head))
        for grid in grids
        for flat in np.argsort(-grid, axis=None, kind="stable")[:TABLE_HEADS]
        for layer, head in [np.unravel_index(flat, grid.shape)]
    }
    return sorted(labelled | strongest, key=lambda cell: (-max(grid[cell] for grid in grids), cell))


def head_table(entry: VigEntry, statistic: str) -> str:
    """Markdown: per head of `table_heads`, each checkpoint's share, each declared pair's change,
    the chance level and the labels it carries."""
    checkpoints = per_checkpoint_results(entry)
    changes = [np.asarray(comparison["per_head"][statistic]) for comparison in per_pair_results(entry).values()]
    chance = next(iter(checkpoints.values()))["chance"][statistic]
    header = [
        "head",
        *map(checkpoint_title, checkpoints),
        *(difference_title(*pair) for pair in entry["pairs"]),
        "chance",
        "labelled in",
    ]
    rows = [
        [
            f"{layer + 1}-{head + 1}",
            *(f"{stats['per_head'][statistic][layer][head]:.3f}" for stats in checkpoints.values()),
            *(f"{change[layer, head]:+.3f}" for change in changes),
            f"{chance:.3f}",
            ", ".join(
                checkpoint_title(c) for c, stats in checkpoints.items() if statistic in stats["labels"][layer][head]
            )
            or "-",
        ]
        for layer, head in table_heads(entry, statistic)
    ]
    return markdown_table(header, rows)


def change_lines(entry: VigEntry) -> str:
    """Each pair's changes of the strongest head's and of the mean share of attention to
    identical words in the other sentence, with their intervals over the dev examples (none
    where no example has such rows)."""
    lines = []
    for (before, after), comparison in zip(entry["pairs"], per_pair_results(entry).values()):
        for what, reduce in (("the strongest head", "max"), ("the mean over heads", "mean")):
            evidence = comparison["evidence"].get(change_of(f"{CROSS}_{reduce}"))
            if evidence:
                low, high = evidence["interval"]
                how = (
                    best_of_many_words(evidence, scale=1.0)
                    if reduce == "max"
                    else f"over {RESAMPLES} resamples of the {evidence['n']} {evidence['unit']}"
                )
                lines.append(
                    f"{difference_title(before, after)}, {what}, {how}: {evidence['value']:+.3f} "
                    f"[{low:+.3f}, {high:+.3f}], {evidence['direction']}."
                )
    return "".join(f"\n{line}\n" for line in lines)


class VigAcrossSeeds(TypedDict):
    """What a study keeps of the VIG in a task's aggregate (`VigView.across_seeds`): per checkpoint,
    each of `IDENTICAL` that every seed's inputs define, per layer over the seeds."""

    vig_identical: dict[str, dict[str, Elementwise]]


def identical_part(task: TaskAggregate) -> dict[str, dict[str, Elementwise]]:
    """The VIG's identical-words series of a task's aggregate, as declared (`view_part`); ask whether
    the task has them first."""
    return view_part(task, VigAcrossSeeds)["vig_identical"]


def draw_identical_by_task(study: StudyRecord, path: Path) -> Path:
    """Attention to identical words in the same and in the other sentence per layer, a line per
    task and checkpoint (none in the other sentence for a single-sentence task), a panel per
    behaviour some task has, saved at ``path`` (PNG, with a PDF beside it)."""
    tasks = study["tasks"].values()
    kept = [
        statistic for statistic in IDENTICAL if any(statistic in identical_part(entry)[PRETRAINED] for entry in tasks)
    ]
    panels = {
        STATISTICS[statistic]: lambda entry, checkpoint, statistic=statistic: identical_per_layer(
            entry, checkpoint, statistic
        )
        for statistic in kept
    }
    return draw_per_layer_by_task(study, panels, "share of attention", "Attention to identical words per layer", path)


def identical_per_layer(task: TaskAggregate, checkpoint: str, statistic: str) -> list[float]:
    """A study task's mean over seeds of ``statistic`` per layer; NaN in every layer (no line is
    drawn, the layers stay on the axis) where its inputs do not define it (`across_seeds`)."""
    kept = identical_part(task)[checkpoint]
    return kept[statistic]["mean"] if statistic in kept else [math.nan] * len(kept[IDENTICAL[0]]["mean"])
