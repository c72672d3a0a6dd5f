"""Clark et al.'s coreference analysis: does a mention's head word attend to its antecedent?

Shown: each head's antecedent selection accuracy on all mentions per checkpoint (with each
pair's change), grouped bars by mention type for the baselines and each checkpoint's best
head beside Clark et al.'s Table 2, a Markdown table in Table 2's layout with their number in
brackets beside the rows of their protocol (Nearest, Head match, the best head) and none
beside ours (Nearest either side), each pair's change of the best head, cross-fitted over the
documents (chosen on one half, scored on the other) with its interval, MLflow metrics per
mention type, and the overview's row: the best head on all mentions (a best of many, as the
paper computes it: chosen on the mentions it is scored on).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import numpy as np

from harness.config import Settings, analysis_settings
from harness.options import option
from harness.results.checkpoints import FINETUNED, PRETRAINED
from harness.results.entries import AnyEntry, PerCheckpoint
from harness.results.run_record import RunSection
from harness.views.base import Entry, PaperPoint, Row, View, per_checkpoint_results, per_pair_results, register_view
from harness.views.drawing import draw_side_by_side_grids
from harness.views.evidence import Change, StoredUnits, best_of_many_words
from harness.views.metrics import Metric
from harness.views.palette import GREY
from harness.views.samples import documents_sample
from harness.views.saving import plt, save
from harness.views.titles import checkpoint_title, run_title, titled_pairs
from tasks.coreference import MENTION_TYPES

GROUPS = ("all", *MENTION_TYPES)
BASELINES = ("nearest", "head_match", "nearest_either_side")
ANALYSIS = "coreference"


def best_head_accuracy(
    group: str, value: float | None = None, checkpoint: str | None = None, reference: str | None = None
) -> Metric:
    """A checkpoint's best head's (or a ``reference`` baseline's) antecedent accuracy on ``group``'s
    mentions: ``coref_all_finetuned``, ``coref_pronoun_nearest``."""
    return Metric(ANALYSIS, f"coref_{group}", checkpoint=checkpoint, reference=reference, value=value)


CHANGE = best_head_accuracy("all").changed().name  # coref_all_change: the best head's, all mentions
UNIT = "documents"  # what is sampled: the mentions of one document are not independent


class PaperBestHead(TypedDict):
    """A paper's best head (1-indexed) and its accuracy by mention group."""

    layer: int
    head: int
    accuracy: dict[str, float]


class ClarkTable2(TypedDict):
    """Clark et al.'s Table 2: each method's accuracy by mention group, and their best head's."""

    nearest: dict[str, float]
    head_match: dict[str, float]
    rule_based: dict[str, float]
    neural_coref: dict[str, float]
    best_head: PaperBestHead


# Clark et al. 2019, Table 2 (BERT-base, CoNLL-2012 dev, documents cut to 128 tokens), as fractions.
CLARK_TABLE_2: ClarkTable2 = {
    "nearest": {"all": 0.27, "pronoun": 0.29, "proper": 0.29, "nominal": 0.19},
    "head_match": {"all": 0.52, "pronoun": 0.47, "proper": 0.67, "nominal": 0.40},
    "rule_based": {"all": 0.69, "pronoun": 0.70, "proper": 0.77, "nominal": 0.60},
    "neural_coref": {"all": 0.83},
    "best_head": {"layer": 5, "head": 4, "accuracy": {"all": 0.65, "pronoun": 0.64, "proper": 0.73, "nominal": 0.58}},
}
# Fixed bar colours for the rows both panels or only one panel have, so that a colour means the
# same method on both sides (the best heads keep their place in the row order: C3, C4).
BAR_COLORS = {"Nearest": "C0", "Head match": "C1", "Nearest either side (ours)": "C2", "Rule-based": GREY}


class CoreferenceResult(TypedDict):
    """A checkpoint's stored coreference: how the documents were read and cut, the mentions per
    group, each baseline's accuracy per group, each head's accuracy per group, the best head of
    each group (``layer``, ``head``, ``accuracy``; and ``overall_head_by_type``: the best head on
    all mentions, its accuracy per group), and each document's hits of every head (`UNIT`).
    Accuracies are None for a group without mentions."""

    word_attention_from: str
    max_tokens: int
    documents: int
    documents_cut: int
    words_cut: int
    mentions_cut: int
    mentions: dict[str, int]
    baselines: dict[str, dict[str, float | None]]
    accuracy_per_head: dict[str, list[list[float]]]
    # each group's best head (layer, head, accuracy), and beside the groups "overall_head_by_type":
    # two shapes in one object keyed by group names, which a TypedDict cannot declare
    best_head: dict[str, Any]
    units: StoredUnits


class CoreferenceComparison(TypedDict):
    """A pair's change per group of the best head, and at the earlier checkpoint's best head
    (its ``layer`` and ``head``, and the change per group), and the evidence of the best head's
    change on all mentions (by the name of its signed change)."""

    best_head: dict[str, float | None]
    at_before_best_head: dict[str, Any]  # its layer and head (int) beside the change per group: as ``best_head``
    evidence: dict[str, Change]


@analysis_settings
@dataclass
class CoreferenceSourceSettings(Settings):
    """How the coreference source cuts its documents: it records it with the data it read (its
    identity, in every result's key), so it is not among the analysis's own `settings`."""

    coref_windows: bool = option(
        False,
        "score coreference over whole documents cut into sentence windows, instead "
        "of only their first --max-tokens tokens (Clark et al.)",
        after="coref_data",
    )


CoreferenceEntry = Entry[PerCheckpoint[CoreferenceResult, CoreferenceComparison]]


@register_view
class CoreferenceView(View[PerCheckpoint[CoreferenceResult, CoreferenceComparison]]):
    name = ANALYSIS
    samples = documents_sample
    order = 110
    version = 5  # 5: the best head's change cross-fitted (a re-chosen maximum is biased upward)
    stored = CoreferenceResult
    compared = CoreferenceComparison
    per_head_keys = {"accuracy_per_head": "accuracy"}
    signed_changes = {CHANGE: "the best head's coreference antecedent accuracy"}
    papers = {
        CHANGE: PaperPoint(
            "Clark et al. 2019, Table 2",
            "pre-trained BERT-base only: head 5-4 finds an antecedent for 65% of mentions "
            "(CoNLL-2012), head match 52%, nearest 27%",
        )
    }

    @classmethod
    def metrics(cls, entry: CoreferenceEntry) -> list[Metric]:
        """Per mention type: each baseline, and each checkpoint's best head (None where no mention
        of the type was scored)."""
        checkpoints = per_checkpoint_results(entry)
        baselines = next(iter(checkpoints.values()))["baselines"]
        out = [
            best_head_accuracy(group, values[group], reference=name)
            for name, values in baselines.items()
            for group in GROUPS
        ]
        return out + [
            best_head_accuracy(group, stats["best_head"][group]["accuracy"], checkpoint=checkpoint)
            for checkpoint, stats in checkpoints.items()
            for group in GROUPS
        ]

    @classmethod
    def headline(cls, entry: CoreferenceEntry, metrics: list[Metric]) -> list[Metric]:
        """How the best head's antecedent accuracy changed (all mentions)."""
        return [metric for metric in metrics if metric.key == best_head_accuracy("all").changed()]

    @classmethod
    def draw(cls, entry: CoreferenceEntry, run: RunSection, out_dir: Path) -> list[Path]:
        checkpoints = per_checkpoint_results(entry)
        first = next(iter(checkpoints.values()))
        data = entry["source"]["notes"].get("coref_data", "coreference data")
        title = f"{run_title(run)} on {data}, {first['mentions']['all']} mentions"
        grids: dict[str, Sequence[Sequence[float]]] = {
            checkpoint_title(c): stats["accuracy_per_head"]["all"] for c, stats in checkpoints.items()
        }
        return [
            draw_side_by_side_grids(
                grids,
                out_dir / "coreference_accuracy.png",
                differences=titled_pairs(entry["pairs"]),
                title=f"antecedent selection accuracy per head\n{title}",
                colorbar_label="accuracy (all mentions)",
            ),
            draw_by_type(checkpoints, data, out_dir, title),
        ]

    @classmethod
    def tables(cls, entry: CoreferenceEntry, run: RunSection) -> dict[str, str]:
        data = "/".join(Path(entry["source"]["notes"].get("coref_data", "data")).parts[-2:])  # no machine's path
        return {"coreference_table": table_markdown(entry, data)}

    @classmethod
    def overview_rows(cls, entries: dict[str, AnyEntry], run: RunSection) -> list[Row]:
        """The best head on all mentions, beside Clark et al.'s best head."""
        entry: CoreferenceEntry = entries[cls.name]
        results = per_checkpoint_results(entry)
        paper = entry["reference"]["clark_table2"]["best_head"]
        cells = [
            f"{best['layer']}-{best['head']}: {100 * best['accuracy']:.1f}"
            for best in (results[c]["best_head"]["all"] for c in (PRETRAINED, FINETUNED))
        ]
        tokens = results[PRETRAINED]["max_tokens"]
        return [
            (
                f"coreference, best head (all mentions, {tokens} tokens)",
                *cells,
                f"{paper['layer']}-{paper['head']}: {100 * paper['accuracy']['all']:.0f} (CoNLL-2012)",
            )
        ]


def our_rows(checkpoints: dict[str, CoreferenceResult]) -> list[tuple[str, dict[str, float | None], dict[str, float]]]:
    """(label, accuracy by group, Clark's Table 2 row of the same protocol or {}): the baselines,
    then each checkpoint's best head overall."""
    baselines = next(iter(checkpoints.values()))["baselines"]
    rows = [
        ("Nearest", baselines["nearest"], CLARK_TABLE_2["nearest"]),
        ("Head match", baselines["head_match"], CLARK_TABLE_2["head_match"]),
        # Ours, the candidates of a head that may look either way: Clark had none, so no number of theirs.
        ("Nearest either side (ours)", baselines["nearest_either_side"], {}),
    ]
    for checkpoint, stats in checkpoints.items():
        best = stats["best_head"]
        rows.append(
            (
                f"best head {best['all']['layer']}-{best['all']['head']}, {checkpoint_title(checkpoint)}",
                best["overall_head_by_type"],
                CLARK_TABLE_2["best_head"]["accuracy"],
            )
        )
    return rows


def paper_rows() -> list[tuple[str, dict[str, float]]]:
    """(label, accuracy by group) of Clark et al.'s Table 2."""
    best = CLARK_TABLE_2["best_head"]
    return [
        ("Nearest", CLARK_TABLE_2["nearest"]),
        ("Head match", CLARK_TABLE_2["head_match"]),
        ("Rule-based", CLARK_TABLE_2["rule_based"]),
        (f"best head {best['layer']}-{best['head']}", best["accuracy"]),
    ]


def draw_by_type(checkpoints: dict[str, CoreferenceResult], data: str, out_dir: Path, title: str) -> Path:
    """Grouped bars by mention type: our baselines and best heads, and Clark's Table 2 beside."""
    mentions = next(iter(checkpoints.values()))["mentions"]
    figure, panels = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    x = np.arange(len(GROUPS))
    ours: list[tuple[str, Mapping[str, float | None]]] = [(label, values) for label, values, _ in our_rows(checkpoints)]
    theirs: list[tuple[str, Mapping[str, float | None]]] = list(paper_rows())
    panel_rows = (
        (panels[0], ours, f"ours: {data}", [f"{g}\n(n={mentions[g]})" for g in GROUPS]),
        (panels[1], theirs, "Clark et al. 2019: BERT-base, CoNLL-2012", list(GROUPS)),
    )
    for panel, rows, heading, ticks in panel_rows:
        width = 0.8 / len(rows)
        for offset, (label, values) in enumerate(rows):
            heights = [np.nan if (value := values.get(g)) is None else value for g in GROUPS]
            panel.bar(
                x + (offset - (len(rows) - 1) / 2) * width,
                heights,
                width,
                label=label,
                color=BAR_COLORS.get(label, f"C{offset}"),
            )
        panel.set_xticks(x, ticks)
        panel.set_xlabel("mention type")
        panel.set_ylim(0, 1.3)
        panel.set_yticks(np.linspace(0, 1, 6))
        panel.set_title(heading, fontsize=9)
        panel.grid(axis="y", alpha=0.3)
        panel.legend(fontsize=7, ncol=2, loc="upper center")
    panels[0].set_ylabel("antecedent selection accuracy")
    figure.suptitle(title, fontsize=9)
    return save(figure, out_dir / "coreference_by_type.png")


def points(evidence: Change) -> str:
    """``-3.8 [-7.1, -0.4]``: a change of fractions and its 95% interval, in points."""
    low, high = evidence["interval"]
    return f"{100 * evidence['value']:+.1f} [{100 * low:+.1f}, {100 * high:+.1f}]"


def table_markdown(entry: CoreferenceEntry, data: str) -> str:
    """Clark's Table 2 layout as Markdown: ours, with Clark's number in brackets; then each pair's change."""

    def line(label: str, ours: dict[str, float | None], theirs: dict[str, float]) -> str:
        cells = []
        for group in GROUPS:
            value, paper = ours.get(group), theirs.get(group)
            mine = "–" if value is None else f"{100 * value:.1f}"
            cells.append(mine if paper is None else f"{mine} ({100 * paper:.0f})")
        return f"| {label} | " + " | ".join(cells) + " |"

    checkpoints = per_checkpoint_results(entry)
    first = next(iter(checkpoints.values()))
    ours = our_rows(checkpoints)
    baselines, heads = ours[: len(BASELINES)], ours[len(BASELINES) :]
    lines = [
        f"# Coreference: antecedent selection by head words ({data})",
        "",
        f"Antecedent selection accuracy (%) on {data}; Clark et al. 2019 "
        "(BERT-base, CoNLL-2012, their best head 5-4) in brackets. Nearest: the nearest earlier mention, "
        "as theirs; Nearest either side: ours, the nearest mention a head may look at (no paper number).",
        "",
        "| method | " + " | ".join(f"{g} (n={first['mentions'][g]})" for g in GROUPS) + " |",
        "|---" * (len(GROUPS) + 1) + "|",
        *(line(*row) for row in baselines),
        line("Rule-based (Clark only)", {}, CLARK_TABLE_2["rule_based"]),
        *(line(*row) for row in heads),
    ]
    for (before, after), comparison in zip(entry["pairs"], per_pair_results(entry).values()):
        at = comparison["at_before_best_head"]
        evidence = comparison["evidence"][CHANGE]
        lines += [
            "",
            f"{checkpoint_title(after)} minus {checkpoint_title(before)} (points):",
            "",
            "| change | " + " | ".join(GROUPS) + " |",
            "|---" * (len(GROUPS) + 1) + "|",
            line("best head vs best head (each a best of many, chosen where scored)", comparison["best_head"], {}),
            line(f"at {checkpoint_title(before)}'s best head {at['layer']}-{at['head']}", at, {}),
            "",
            f"The best head's change on all mentions, {best_of_many_words(evidence)}: {points(evidence)} points, "
            f"{evidence['direction']}.",
        ]
    lines += [
        "",
        f"Documents: {first['documents']} ({first['documents_cut']} cut to {first['max_tokens']} "
        f"word pieces; {first['words_cut']} words and {first['mentions_cut']} coreferent mentions cut).",
    ]
    return "\n".join(lines) + "\n"
