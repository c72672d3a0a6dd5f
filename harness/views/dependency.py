"""Clark et al.'s Table 1: do single heads track dependency relations?

Shown: the best single head's accuracy per relation and checkpoint beside the best offset
baseline and the paper's BERT-base number (bars, and a Markdown table in Table 1's layout with
each pair's change and the best head in each direction), each head's accuracy on all relations
per checkpoint, MLflow metrics per relation, and two rows of the overview: ours ``all`` and
Clark's ``all_clark`` (every word counted), the protocol the paper's ``all`` belongs to. Our
UD relations meet the paper's Stanford Dependencies rows through `UD_TO_SD`. The table gives
each pair's change of the best head on ours ``all`` with its interval over resampled sentences.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypedDict, overload

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
from harness.views.samples import treebank_samples
from harness.views.saving import plt, save
from harness.views.titles import axes_title, checkpoint_title, run_title, titled_pairs

DIRECTIONS = ("dependent->head", "head->dependent")
ALL = "all"
ALL_CLARK: Final = "all_clark"
ANALYSIS = "syntax"
BASELINE = "baseline"  # the best offset: where a word's head is a fixed number of words away


def relation_accuracy(
    relation: str, value: float | None = None, checkpoint: str | None = None, reference: str | None = None
) -> Metric:
    """The best head's accuracy on ``relation`` of a checkpoint, or the best offset's (``reference``
    `BASELINE`): ``syntax_finetuned_nsubj``, ``syntax_baseline_nmod_poss``."""
    return Metric(
        ANALYSIS, "syntax", detail=relation.replace(":", "_"), checkpoint=checkpoint, reference=reference, value=value
    )


CHANGE = relation_accuracy(ALL).changed().name  # syntax_change_all
UNIT = "treebank sentences"  # what is sampled: the words of one sentence are not independent
# UD relation -> Stanford Dependencies relation of Clark et al.'s Table 1 (BERT-base, PTB WSJ).
# UD "case" links a preposition to its noun: the reverse arc of SD "pobj" (noun to preposition).
UD_TO_SD = {
    "det": "det",
    "nsubj": "nsubj",
    "obj": "dobj",
    "amod": "amod",
    "case": "pobj",
    "aux": "aux",
    "advmod": "advmod",
    "mark": "mark",
    "compound": "nn",
    "nmod:poss": "poss",
    "aux:pass": "auxpass",
    "ccomp": "ccomp",
    "compound:prt": "prt",
}
# relation: (best head layer-head, accuracy, baseline accuracy, baseline offset)
PAPER_TABLE1 = {
    "all": ("7-6", 34.5, 26.3, 1),
    "prep": ("7-4", 66.7, 61.8, -1),
    "pobj": ("9-6", 76.3, 34.6, -2),
    "det": ("8-11", 94.3, 51.7, 1),
    "nn": ("4-10", 70.4, 70.2, 1),
    "nsubj": ("8-2", 58.5, 45.5, 1),
    "amod": ("4-10", 75.6, 68.3, 1),
    "dobj": ("8-10", 86.8, 40.0, -2),
    "advmod": ("7-6", 48.8, 40.2, 1),
    "aux": ("4-10", 81.1, 71.5, 1),
    "poss": ("7-6", 80.5, 47.7, 1),
    "auxpass": ("4-10", 82.5, 40.5, 1),
    "ccomp": ("8-1", 48.8, 12.4, -2),
    "mark": ("8-2", 50.7, 14.5, 2),
    "prt": ("6-7", 99.1, 91.4, -1),
}
PAPER_MODEL = "bert-base-uncased (Clark et al. 2019, PTB WSJ dev, Stanford Dependencies)"


class PaperRow(TypedDict):
    """A row of Clark et al.'s Table 1: the relation, its best head (``"7-6"``), that head's
    accuracy, the best fixed-offset baseline's and its offset."""

    relation: str
    head: str
    accuracy: float
    baseline_accuracy: float
    baseline_offset: int


def paper_row(relation: str) -> PaperRow | None:
    """Clark et al.'s Table 1 row for one of our rows (SD relations as named, UD ones through
    `UD_TO_SD`), or None. The paper's `all` counted every word, so it belongs to `ALL_CLARK`, not
    to our `ALL`."""
    if relation == ALL:
        return None
    name = ALL if relation == ALL_CLARK else relation if relation in PAPER_TABLE1 else UD_TO_SD.get(relation)
    if name not in PAPER_TABLE1:
        return None
    head, accuracy, baseline, offset = PAPER_TABLE1[name]
    return {
        "relation": name,
        "head": head,
        "accuracy": accuracy,
        "baseline_accuracy": baseline,
        "baseline_offset": offset,
    }


class DirectedHead(TypedDict):
    """A head (1-indexed), the direction it is read in, and its accuracy (%)."""

    layer: int
    head: int
    direction: str
    accuracy: float


class OffsetBaseline(TypedDict):
    """The best offset and its accuracy (%)."""

    offset: int
    accuracy: float


class RelationRow(TypedDict):
    """One relation of a checkpoint: how many dependents, the best head (overall and per direction),
    the best offset, and every head's accuracy (%) per direction, (directions, layers, heads)."""

    relation: str
    count: int
    best: DirectedHead
    by_direction: dict[str, DirectedHead]
    baseline: OffsetBaseline
    per_head: list[list[list[float]]]


class SyntaxResult(TypedDict):
    """A checkpoint's stored dependency heads: a row per relation (ours ``all`` first) and Clark's
    ``all_clark`` (None without relations), the settings and counts of the treebank read, and
    each sentence's correct predictions on ours ``all`` per direction and head (`UNIT`)."""

    relations: list[RelationRow]
    all_clark: RelationRow | None
    min_count: int
    offsets: list[int]
    directions: list[str]
    word_attention_from: str
    num_sentences: int
    num_words: int
    num_scored: int
    words_cut: int
    arcs_cut: int
    units: StoredUnits


class RelationChange(TypedDict):
    """A relation's change of the best head's accuracy (points), and the later checkpoint's accuracy
    at the earlier one's best head."""

    relation: str
    change: float
    after_at_before_head: float


class SyntaxComparison(TypedDict):
    """A pair's change per relation and of Clark's ``all_clark``, and the evidence of the best head's
    change on ours ``all`` (by the name of its signed change)."""

    relations: list[RelationChange]
    all_clark: RelationChange | None
    evidence: dict[str, Change]


@analysis_settings
@dataclass
class SyntaxSettings(Settings):
    """Which dependency relations are scored: those with enough dependents."""

    syntax_min_count: int = option(
        100,
        "drop dependency relations with fewer scored dependents (Clark et al.: 100)",
        minimum=1,
        quick=20,  # named in --quick's help where its place puts it: after the probes' training sample
        after="syntax_train_data",
    )


DependencyEntry = Entry[PerCheckpoint[SyntaxResult, SyntaxComparison]]


@register_view
class DependencyView(View[PerCheckpoint[SyntaxResult, SyntaxComparison]]):
    name = ANALYSIS
    samples = treebank_samples
    order = 100
    version = 5  # 5: the best head's change cross-fitted (a re-chosen maximum is biased upward)
    stored = SyntaxResult
    compared = SyntaxComparison
    signed_changes = {CHANGE: "the best heads' dependency accuracy"}
    papers = {
        CHANGE: PaperPoint(
            "Clark et al. 2019, Table 1",
            "pre-trained BERT-base only: the best head (7-6) finds 34.5% of all dependency heads "
            "against 26.3% for the best offset (PTB)",
        )
    }

    @classmethod
    def metrics(cls, entry: DependencyEntry) -> list[Metric]:
        """Best-head accuracy per relation and checkpoint (`all_clark`, the paper's protocol, too),
        and the offset baseline."""
        out = [
            relation_accuracy(row["relation"], row["best"]["accuracy"], checkpoint=checkpoint)
            for checkpoint, stats in per_checkpoint_results(entry).items()
            for row in rows_of(stats)
        ]
        first = next(iter(per_checkpoint_results(entry).values()))
        return out + [
            relation_accuracy(row["relation"], row["baseline"]["accuracy"], reference=BASELINE)
            for row in rows_of(first)
        ]

    @classmethod
    def draw(cls, entry: DependencyEntry, run: RunSection, out_dir: Path) -> list[Path]:
        if not next(iter(per_checkpoint_results(entry).values()))["relations"]:
            return []
        title = run_title(run)
        return [
            draw_relation_bars(entry, out_dir / "syntax_relations.png", title=title),
            draw_all_heads(entry, out_dir / "syntax_all_relations.png", title=title),
        ]

    @classmethod
    def tables(cls, entry: DependencyEntry, run: RunSection) -> dict[str, str]:
        if not next(iter(per_checkpoint_results(entry).values()))["relations"]:
            return {}
        return {"syntax_table1": table_markdown(entry, title=run_title(run))}

    @classmethod
    def overview_rows(cls, entries: dict[str, AnyEntry], run: RunSection) -> list[Row]:
        """The best head on `all` by our protocol and by Clark's (every word), each with its
        offset baseline, the paper's number beside Clark's."""
        entry: DependencyEntry = entries[cls.name]
        results = per_checkpoint_results(entry)
        paper = entry["reference"]["clark_table1"][ALL_CLARK]
        return [
            (
                "dependency `all` without punctuation and roots, best head (UD EWT dev)",
                *(overview_cell(results[c]["relations"][0]) for c in (PRETRAINED, FINETUNED)),
                "",
            ),
            (
                "dependency `all`, every word (Clark's protocol)",
                *(overview_cell(results[c][ALL_CLARK]) for c in (PRETRAINED, FINETUNED)),
                f"{paper['head']}: {paper['accuracy']} (offset {paper['baseline_accuracy']}; PTB)",
            ),
        ]


def overview_cell(row: RelationRow | None) -> str:
    """``"7-6: 34.5 (offset 26.3)"``: a row's best head, its accuracy and the offset baseline's (a
    dash for Clark's row of a run without relations)."""
    if row is None:
        return "–"
    best = row["best"]
    return f"{best['layer']}-{best['head']}: {best['accuracy']:.1f} (offset {row['baseline']['accuracy']:.1f})"


@overload
def rows_of(stats: SyntaxResult) -> list[RelationRow]: ...
@overload
def rows_of(stats: SyntaxComparison) -> list[RelationChange]: ...
def rows_of(stats: SyntaxResult | SyntaxComparison) -> list[Any]:  # the overloads type each caller's rows
    """A checkpoint's (or a pair's) rows for tables and figures: ours `all`, then `all_clark`, then the relations."""
    rows = stats["relations"]
    return [*rows[:1], stats[ALL_CLARK], *rows[1:]] if stats[ALL_CLARK] else rows


def head_name(best_entry: DirectedHead) -> str:
    """``"7-6 d>h"``: a best head as layer-head and direction (d>h: dependent attends to head)."""
    arrow = "d>h" if best_entry["direction"] == DIRECTIONS[0] else "h>d"
    return f"{best_entry['layer']}-{best_entry['head']} {arrow}"


def table_markdown(entry: DependencyEntry, *, title: str) -> str:
    """Clark et al.'s Table 1 per checkpoint, each pair's change, and the paper's BERT-base numbers."""
    checkpoints = per_checkpoint_results(entry)
    first = next(iter(checkpoints.values()))
    pairs = list(zip(entry["pairs"], per_pair_results(entry).values()))
    header = [
        "relation",
        "n",
        *(f"{checkpoint_title(c)} head | acc" for c in checkpoints),
        *(
            f"change {checkpoint_title(a)}->{checkpoint_title(b)} | {checkpoint_title(b)} at {checkpoint_title(a)} head"
            for (a, b), _ in pairs
        ),
        "offset baseline",
        "paper relation",
        "paper head",
        "paper acc",
        "paper baseline",
    ]
    columns = sum(cell.count("|") + 1 for cell in header)
    lines = [
        f"# Dependency heads ({title})",
        "",
        f"UAS-style accuracy (%) of the best single head per relation; {first['num_scored']} dependents in "
        f"{first['num_sentences']} sentences (punctuation and root excluded; {first['words_cut']} words cut by "
        f"--max-tokens). {ALL_CLARK}: every word counted, punctuation and roots included (a root is always "
        "wrong for attention), offsets clipped at the sentence's ends, as Clark et al.'s code for the paper's "
        "`all`. Head = layer-head, 1-indexed; d>h: dependent attends to head, h>d: head attends to "
        f"dependent. Offset baseline: the best of the offsets {', '.join(f'{o:+d}' for o in first['offsets'])} "
        f"(Clark et al.'s code). Paper: {PAPER_MODEL}, a different model and treebank.",
        "",
        "| " + " | ".join(header) + " |",
        "|---" * columns + "|",
    ]
    for position, row in enumerate(rows_of(first)):
        cells = [row["relation"], str(row["count"])]
        for stats in checkpoints.values():
            mine = rows_of(stats)[position]["best"]
            cells += [head_name(mine), f"{mine['accuracy']:.1f}"]
        for _, comparison in pairs:
            change = rows_of(comparison)[position]
            cells += [f"{change['change']:+.1f}", f"{change['after_at_before_head']:.1f}"]
        cells.append(f"{row['baseline']['accuracy']:.1f} ({row['baseline']['offset']:+d})")
        paper = paper_row(row["relation"])
        cells += (
            [
                paper["relation"],
                paper["head"],
                f"{paper['accuracy']:.1f}",
                f"{paper['baseline_accuracy']:.1f} ({paper['baseline_offset']:+d})",
            ]
            if paper
            else [""] * 4
        )
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "Best head in each direction (layer-head: accuracy):",
        "",
        "| relation | "
        + " | ".join(f"{direction} {checkpoint_title(c)}" for direction in DIRECTIONS for c in checkpoints)
        + " |",
        "|---" * (1 + len(DIRECTIONS) * len(checkpoints)) + "|",
    ]
    for position, row in enumerate(rows_of(first)):
        cells = [
            f"{best_entry['layer']}-{best_entry['head']}: {best_entry['accuracy']:.1f}"
            for direction in DIRECTIONS
            for stats in checkpoints.values()
            for best_entry in [rows_of(stats)[position]["by_direction"][direction]]
        ]
        lines.append(f"| {row['relation']} | " + " | ".join(cells) + " |")
    for (before, after), comparison in pairs:
        evidence = comparison["evidence"][CHANGE]
        low, high = evidence["interval"]
        lines += [
            "",
            f"{checkpoint_title(after)} minus {checkpoint_title(before)}, the best head on `all`, "
            f"{best_of_many_words(evidence, scale=1.0)}: {evidence['value']:+.1f} [{low:+.1f}, {high:+.1f}] points, "
            f"{evidence['direction']}.",
        ]
    return "\n".join(lines) + "\n"


def draw_relation_bars(entry: DependencyEntry, path: Path, *, title: str, limit: int = 20) -> Path:
    """Grouped bars per relation: best head of each checkpoint, the offset baseline, the paper."""
    checkpoints = per_checkpoint_results(entry)
    rows = rows_of(next(iter(checkpoints.values())))[:limit]
    bars = {
        f"{checkpoint_title(c)} best head": [r["best"]["accuracy"] for r in rows_of(stats)[:limit]]
        for c, stats in checkpoints.items()
    }
    bars["best offset baseline"] = [r["baseline"]["accuracy"] for r in rows]
    positions = np.arange(len(rows))
    height = 0.8 / len(bars)
    figure, axes = plt.subplots(figsize=(7, 0.12 * len(bars) * len(rows) + 1.8))
    for k, (label, values) in enumerate(bars.items()):
        axes.barh(positions + (k - (len(bars) - 1) / 2) * height, values, height=height, label=label)
    paper = [(i, p["accuracy"]) for i, r in enumerate(rows) if (p := paper_row(r["relation"]))]
    if paper:
        axes.scatter(
            [a for _, a in paper],
            [i for i, _ in paper],
            marker="x",
            color="black",
            zorder=3,
            label="Clark et al. BERT-base (SD relation)",
        )
    axes.set_yticks(positions, [f"{r['relation']} (n={r['count']})" for r in rows])
    axes.invert_yaxis()
    axes.set_xlim(0, 100)
    axes.set_xlabel("accuracy of the best single head (%)")
    axes_title(axes, f"{title}: dependency relations tracked by single heads")
    axes.grid(axis="x", alpha=0.3)
    axes.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12 - 0.3 / len(rows)), ncol=2)
    return save(figure, path)


def draw_all_heads(entry: DependencyEntry, path: Path, *, title: str) -> Path:
    """Per-head accuracy on all relations (better direction), one panel per checkpoint."""
    grids = {
        checkpoint_title(c): np.asarray(stats["relations"][0]["per_head"]).max(axis=0)
        for c, stats in per_checkpoint_results(entry).items()
    }
    return draw_side_by_side_grids(
        grids,
        path,
        title=f"{title}: accuracy on all relations per head",
        colorbar_label="accuracy (%), better direction",
        differences=titled_pairs(entry["pairs"]),
    )
