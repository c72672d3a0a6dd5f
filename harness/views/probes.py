"""Clark et al.'s Table 3: how much dependency syntax a small probe reads from all heads.

Shown: the dev UAS of every probe and baseline per checkpoint beside the paper's numbers
(bars, and a Markdown table in Table 3's layout with each pair's change, the Attn probe's with
its interval over resampled dev sentences), the Attn probe's weight per head
(dependent->head) per checkpoint, MLflow metrics per probe, and the overview's row: Attn and
Attn + GloVe.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

import numpy as np

from harness.config import Settings, analysis_settings
from harness.options import option
from harness.results.checkpoints import FINETUNED, PRETRAINED
from harness.results.entries import AnyEntry, PerCheckpoint
from harness.results.run_record import RunSection
from harness.views.base import Entry, PaperPoint, Row, View, per_checkpoint_results, per_pair_results, register_view
from harness.views.drawing import draw_side_by_side_grids
from harness.views.evidence import RESAMPLES, Change, StoredUnits
from harness.views.metrics import Metric
from harness.views.samples import treebank_samples
from harness.views.saving import plt, save
from harness.views.titles import axes_title, checkpoint_title, run_title, titled_pairs

LEARNING_RATE = 0.002
PAPER_TABLE3 = {
    "right_branching": 26.0,
    "distances_glove": 58.0,
    "random_init_attn_glove": 30.0,
    "attn": 61.0,
    "attn_glove": 77.0,
}
PAPER_SETTING = "bert-base-uncased, PTB WSJ (Stanford Dependencies), trained on the full train set"
ATTENTION_PROBES = ("attn", "attn_glove")
BASELINES = ("right_branching", "distances_glove")
LABELS = {
    "right_branching": "right-branching",
    "distances_glove": "distances + GloVe",
    "attn": "Attn",
    "attn_glove": "Attn + GloVe",
}
ANALYSIS = "probes"


def uas(probe: str, value: float | None = None, checkpoint: str | None = None) -> Metric:
    """The dev UAS of a checkpoint's attention probe (``probes_uas_finetuned_attn``), or of a
    baseline without attention (``probes_uas_right_branching``)."""
    if checkpoint is None:
        return Metric(ANALYSIS, "probes_uas", reference=probe, value=value)
    return Metric(ANALYSIS, "probes_uas", detail=probe, checkpoint=checkpoint, value=value)


CHANGE = uas("attn", checkpoint=FINETUNED).changed().name  # probes_uas_change_attn
UNIT = "dev sentences"  # what is sampled: the words of one sentence are not independent


class ProbeCounts(TypedDict):
    """What the probes read: training and dev sentences and words, and the words and arcs cut."""

    train_sentences: int
    train_words: int
    dev_sentences: int
    dev_scored: int
    words_cut: int
    arcs_cut: int


class ProbesResult(ProbeCounts):
    """A checkpoint's stored probes: each probe's and baseline's dev UAS and mean training loss, the
    Attn probe's weight per head and direction, the settings, and each dev sentence's correct
    attachments of the Attn probe (`UNIT`)."""

    uas: dict[str, float]
    mean_train_loss: dict[str, float]
    attn_head_weights: dict[str, list[list[float]]]
    word_attention_from: str
    probe_init: str
    units: StoredUnits


class ProbesComparison(TypedDict):
    """A pair's change of each attention probe's UAS, and the evidence of the Attn probe's (by the
    name of its signed change)."""

    uas_change: dict[str, float]
    evidence: dict[str, Change]


PROBE_INITS = ("zeros", "glorot")


@analysis_settings
@dataclass
class ProbeSampleSettings(Settings):
    """How many training sentences the probes' source draws: it records them with the data it read
    (its identity, in every result's key), so they are not among the probes' own `settings`."""

    probe_train_sentences: int = option(
        2000,
        "seeded sample of training sentences for the attention probes "
        "(0: the whole training treebank, as Clark et al.)",
        minimum=0,
        because="0: the whole training treebank",
        quick=200,
        quick_after="max_corpus_items",
        unbounded=0,
        before="coref_data",
    )


@analysis_settings
@dataclass
class ProbeSettings(Settings):
    """Where every probe starts."""

    probe_init: str = option(
        "zeros",
        "probe initialisation: zeros = every head's weight 0 and the ROOT mix 1 (all "
        "heads start equal), linear maps at PyTorch's defaults; glorot = Clark et al.'s "
        "code (TensorFlow's default): every weight Glorot-uniform, biases 0",
        choices=PROBE_INITS,
        before="coref_data",  # after the training sample's size
    )


ProbesEntry = Entry[PerCheckpoint[ProbesResult, ProbesComparison]]


@register_view
class ProbesView(View[PerCheckpoint[ProbesResult, ProbesComparison]]):
    name = ANALYSIS
    samples = treebank_samples
    order = 120
    version = 4
    stored = ProbesResult
    compared = ProbesComparison
    signed_changes = {CHANGE: "the attention probe's UAS"}
    papers = {
        CHANGE: PaperPoint(
            "Clark et al. 2019, Table 3",
            "pre-trained BERT-base only: the attention probe reaches 61 UAS (PTB dev), right-branching 26",
        )
    }

    @classmethod
    def metrics(cls, entry: ProbesEntry) -> list[Metric]:
        """Dev UAS of every checkpoint's attention probes, and of the baselines."""
        checkpoints = per_checkpoint_results(entry)
        baselines = next(iter(checkpoints.values()))["uas"]
        return [uas(kind, stats["uas"][kind], c) for c, stats in checkpoints.items() for kind in ATTENTION_PROBES] + [
            uas(kind, baselines[kind]) for kind in BASELINES
        ]

    @classmethod
    def headline(cls, entry: ProbesEntry, metrics: list[Metric]) -> list[Metric]:
        """How the attention-only probe's UAS changed."""
        return [metric for metric in metrics if metric.key == uas("attn", checkpoint=FINETUNED).changed()]

    @classmethod
    def draw(cls, entry: ProbesEntry, run: RunSection, out_dir: Path) -> list[Path]:
        title = run_title(run)
        checkpoints = per_checkpoint_results(entry)
        weights = {
            checkpoint_title(c): stats["attn_head_weights"]["dependent->head"] for c, stats in checkpoints.items()
        }
        limit = max(float(np.abs(np.asarray(grid)).max()) for grid in weights.values()) or 1.0
        return [
            draw_uas_bars(checkpoints, out_dir / "probes_uas.png", title=title),
            draw_side_by_side_grids(
                weights,
                out_dir / "probes_attn_weights.png",
                vmin=-limit,
                vmax=limit,
                differences=titled_pairs(entry["pairs"]),
                title=f"{title}: Attn probe weight per head (dependent->head)",
                colorbar_label="weight of the head's attention",
                cmap="RdBu_r",
            ),
        ]

    @classmethod
    def tables(cls, entry: ProbesEntry, run: RunSection) -> dict[str, str]:
        return {"probes_table3": probe_table_markdown(entry, title=run_title(run))}

    @classmethod
    def overview_rows(cls, entries: dict[str, AnyEntry], run: RunSection) -> list[Row]:
        """The dev UAS of the Attn and Attn + GloVe probes, beside the paper's."""
        entry: ProbesEntry = entries[cls.name]
        paper = entry["reference"]["clark_table3_uas"]
        cells = [
            f"{stats['uas']['attn']:.1f} / {stats['uas']['attn_glove']:.1f}"
            for stats in (per_checkpoint_results(entry)[c] for c in (PRETRAINED, FINETUNED))
        ]
        return [("probe UAS Attn / Attn+GloVe", *cells, f"{paper['attn']:.0f} / {paper['attn_glove']:.0f}")]


def probe_table_markdown(entry: ProbesEntry, *, title: str) -> str:
    """Clark et al.'s Table 3 layout: UAS per checkpoint, each pair's change, the paper's number."""
    checkpoints = per_checkpoint_results(entry)
    first = next(iter(checkpoints.values()))
    pairs = list(zip(entry["pairs"], per_pair_results(entry).values()))
    header = [
        "model",
        *(checkpoint_title(c) for c in checkpoints),
        *(f"change {checkpoint_title(a)}->{checkpoint_title(b)}" for (a, b), _ in pairs),
        "paper (BERT-base)",
    ]
    lines = [
        f"# Probes: dev UAS without punctuation ({title})",
        "",
        f"Trained online on {first['train_sentences']} treebank training sentences ({first['train_words']} "
        f"words) from the {first['probe_init']} initialisation, one Adam step (lr {LEARNING_RATE}) per "
        f"sentence, one epoch; scored on {first['dev_scored']} "
        f"dev dependents of {first['dev_sentences']} sentences. Paper: {PAPER_SETTING}.",
        "",
        "| " + " | ".join(header) + " |",
        "|---" * len(header) + "|",
    ]
    for kind in (*BASELINES, *ATTENTION_PROBES):
        changes = [
            "(no attention)" if kind in BASELINES else f"{comparison['uas_change'][kind]:+.1f}"
            for _, comparison in pairs
        ]
        cells = [
            LABELS[kind],
            *(f"{stats['uas'][kind]:.1f}" for stats in checkpoints.values()),
            *changes,
            f"{PAPER_TABLE3[kind]:.0f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    for (before, after), comparison in pairs:
        evidence = comparison["evidence"][CHANGE]
        low, high = evidence["interval"]
        lines += [
            "",
            f"Attn, {checkpoint_title(after)} minus {checkpoint_title(before)}, over {RESAMPLES} resamples "
            f"of the {evidence['n']} {evidence['unit']} (the probes' training not resampled): "
            f"{evidence['value']:+.1f} [{low:+.1f}, {high:+.1f}] points, {evidence['direction']}.",
        ]
    return "\n".join(lines) + "\n"


def draw_uas_bars(checkpoints: dict[str, ProbesResult], path: Path, *, title: str) -> Path:
    """UAS of every probe and baseline, one bar per checkpoint, the paper's numbers as crosses."""
    kinds = [*BASELINES, *ATTENTION_PROBES]
    positions = np.arange(len(kinds))
    width = 0.8 / len(checkpoints)
    figure, axes = plt.subplots(figsize=(6, 3.4))
    for k, (checkpoint, stats) in enumerate(checkpoints.items()):
        bars = axes.bar(
            positions + (k - (len(checkpoints) - 1) / 2) * width,
            [stats["uas"][kind] for kind in kinds],
            width=width,
            label=checkpoint_title(checkpoint),
        )
        axes.bar_label(bars, fmt="%.1f", fontsize=6)
    axes.scatter(
        positions,
        [PAPER_TABLE3[k] for k in kinds],
        marker="x",
        color="black",
        zorder=3,
        label="Clark et al. BERT-base (PTB)",
    )
    axes.set_xticks(positions, [LABELS[k] for k in kinds])
    axes.set_ylabel("dev UAS without punctuation (%)")
    axes.set_ylim(0, 100)
    axes_title(axes, f"{title}: dependency probes")
    axes.grid(axis="y", alpha=0.3)
    axes.legend(fontsize=7, loc="upper left")
    return save(figure, path)
