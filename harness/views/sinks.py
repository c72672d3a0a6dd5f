"""Are [CLS] and [SEP] no-ops? Attention sinks and norm-weighted attention per token kind, per checkpoint.

Figures: raw beside norm-weighted attention per token kind, head and layer (Clark's Figure 2
beside Kobayashi's norm-based view), the sink share per kind and layer, what changed per
kind and layer for each declared pair, and per-head grids of the raw and norm-weighted
shares of [CLS], [SEP] and punctuation; table: every statistic per kind and layer; metrics:
each share's overall value per checkpoint and kind, and its change per pair. A study reports
whether the share of raw attention on [CLS] and on [SEP] rises or falls with fine-tuning,
each change judged by its paired interval over the dev examples (each example's raw share of
the two kinds is stored, `harness.views.evidence`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from harness.results.checkpoints import FINETUNED
from harness.results.entries import PerCheckpoint
from harness.results.run_record import RunSection
from harness.views.base import (
    Entry,
    PaperPoint,
    View,
    checkpoint_units,
    per_checkpoint_results,
    per_pair_results,
    register_view,
)
from harness.views.drawing import head_grid, panel_grid, panels_for, scatter_by_layer
from harness.views.evidence import Change, StoredUnits
from harness.views.metrics import Metric
from harness.views.palette import OKABE_ITO, checkpoint_colour
from harness.views.saving import save
from harness.views.titles import checkpoint_title, run_title, titled_pairs

if TYPE_CHECKING:
    from matplotlib.axes import Axes

ANALYSIS = "sinks"
EPSILON = 0.3  # Gu et al.'s sink threshold on a token's mean received attention

# Token kind -> how it is shown; the kinds partition the real tokens.
KINDS = {"cls": "[CLS]", "sep": "[SEP]", "punct": '"." or ","', "other": "other tokens"}

# Statistic name -> how it is shown in tables and figures.
STATISTICS = {
    "sink_share": f"sink share (mean attention > {EPSILON})",
    "raw_share": "share of raw attention",
    "norm_share": "share of norm-weighted attention",
    "value_norm": "mean ‖f(x)‖",
}

# A colour-blind-safe colour and a marker per kind, so lines differ without colour too.
KIND_STYLES = {
    "cls": (OKABE_ITO["vermillion"], "o"),
    "sep": (OKABE_ITO["blue"], "s"),
    "punct": (OKABE_ITO["purple"], "^"),
    "other": (OKABE_ITO["green"], "D"),
}
SHARES = ("sink_share", "raw_share", "norm_share")
JUDGED_KINDS = ("cls", "sep")  # the kinds whose raw share's change a study judges (`signed_changes`)
UNIT = "dev examples"  # what the shares sample: each example's rows, all heads of it together
MEASURES = {"raw_share": "raw attention", "norm_share": "norm-weighted ‖αf(x)‖"}


def share(statistic: str, kind: str, value: float | None = None, checkpoint: str | None = None) -> Metric:
    """A checkpoint's overall ``statistic`` of a token ``kind``: ``sinks_finetuned_raw_share_cls``."""
    return Metric(ANALYSIS, "sinks", detail=f"{statistic}_{kind}", checkpoint=checkpoint, value=value)


def raw_share_change(kind: str) -> str:
    """The metric name of the change of a kind's overall raw share: ``sinks_change_raw_share_cls``."""
    return share("raw_share", kind, checkpoint=FINETUNED).changed().name


class SinksResult(TypedDict):
    """A checkpoint's stored sinks: each statistic of each token kind per head, per layer and
    overall (statistic, then kind), the tokens of each kind, how many inputs, and each input's
    raw share of each judged kind (by kind)."""

    per_head: dict[str, dict[str, list[list[float]]]]
    per_layer: dict[str, dict[str, list[float]]]
    overall: dict[str, dict[str, float]]
    num_tokens: dict[str, int]
    num_items: int
    units: dict[str, StoredUnits]


class SinksComparison(TypedDict):
    """A pair's change of every per-layer and overall value, and of each judged kind's raw share
    with its interval (by the name of its signed change)."""

    per_layer: dict[str, dict[str, list[float]]]
    overall: dict[str, dict[str, float]]
    evidence: dict[str, Change]


SinksEntry = Entry[PerCheckpoint[SinksResult, SinksComparison]]


@register_view
class SinksView(View[PerCheckpoint[SinksResult, SinksComparison]]):
    name = ANALYSIS
    order = 80
    version = 2
    stored = SinksResult
    compared = SinksComparison
    signed_changes = {raw_share_change(kind): f"the share of attention on {KINDS[kind]}" for kind in JUDGED_KINDS}
    papers = dict.fromkeys(
        signed_changes,
        PaperPoint(
            "Kovaleva et al. 2019, Fig. 6",
            "fine-tuned bert-base-uncased only: [SEP] takes the most attention in the "
            "middle layers, [CLS] in the early ones; no pre-trained comparison",
        ),
    )
    left_out = ("per_head",)

    @classmethod
    def timed_units(cls, entry: SinksEntry) -> dict[str, StoredUnits]:
        """Each checkpoint's per-input shares of [CLS] and [SEP], kept at each trajectory point."""
        return checkpoint_units(entry)

    @classmethod
    def metrics(cls, entry: SinksEntry) -> list[Metric]:
        """Per checkpoint, statistic and kind the overall value; per pair its change
        (``sinks_pretrained_to_finetuned_raw_share_cls_change``)."""
        out = [
            share(stat, kind, value, checkpoint)
            for checkpoint, stats in per_checkpoint_results(entry).items()
            for stat in SHARES
            for kind, value in stats["overall"][stat].items()
        ]
        return out + [
            Metric(cls.name, "sinks", detail=f"{stat}_{kind}_change", pair=(before, after), value=value)
            for (before, after), changes in zip(entry["pairs"], per_pair_results(entry).values())
            for stat in SHARES
            for kind, value in changes["overall"][stat].items()
        ]

    @classmethod
    def draw(cls, entry: SinksEntry, run: RunSection, out_dir: Path) -> list[Path]:
        written = [
            draw_raw_vs_norm(entry, run, out_dir / "sinks_raw_vs_norm_weighted.png"),
            draw_sink_shares(entry, run, out_dir / "sinks_sink_share.png"),
        ]
        if entry["pairs"]:
            written.append(draw_changes(entry, run, out_dir / "sinks_changes.png"))
        for kind in ("cls", "sep", "punct"):
            rows = {
                measure: {
                    checkpoint_title(c): stats["per_head"][stat][kind]
                    for c, stats in per_checkpoint_results(entry).items()
                }
                for stat, measure in (("raw_share", "raw"), ("norm_share", "norm-weighted"))
            }
            written.append(
                head_grid.draw_grid_rows(
                    rows,
                    out_dir / f"sinks_heads_{kind}.png",
                    colorbar_label="share",
                    differences=titled_pairs(entry["pairs"]),
                    title=f"Raw and norm-weighted (‖αf(x)‖) attention to {KINDS[kind]} per head: {run_title(run)}",
                )
            )
        return written

    @classmethod
    def tables(cls, entry: SinksEntry, run: RunSection) -> dict[str, str]:
        return {
            "sinks_by_layer": f"# Attention sinks and norm-weighted attention: {run_title(run)}\n\n{layer_table(entry)}"
        }


def draw_raw_vs_norm(entry: SinksEntry, run: RunSection, path: Path) -> Path:
    """One row of panels per token kind, one column per measure (raw, norm-weighted): each
    checkpoint's share per head (dots) and per layer (line) overlaid in its colour, as Clark's
    Figure 2 beside Kobayashi's norm-based view."""
    checkpoints = per_checkpoint_results(entry)
    figure, axes = panel_grid(len(KINDS), len(MEASURES))
    for row, (kind, label) in enumerate(KINDS.items()):
        for column, (stat, measure) in enumerate(MEASURES.items()):
            panel = axes[row, column]
            for index, (checkpoint, stats) in enumerate(checkpoints.items()):
                scatter_by_layer(
                    panel,
                    stats["per_head"][stat][kind],
                    checkpoint_colour(checkpoint, index),
                    checkpoint_title(checkpoint),
                    band=(index, len(checkpoints)),
                )
            panel.set_ylabel(f"share to {label}")
            panel.set_title(measure, fontsize=9)
            panel.legend(fontsize=7)
    for column in range(len(MEASURES)):
        axes[-1, column].set_xlabel("layer")
    figure.suptitle(
        f"Raw vs norm-weighted attention per token kind (Clark Fig. 2, Kobayashi): {run_title(run)}", fontsize=10
    )
    return save(figure, path)


def plot_kinds(panel: Axes, per_layer: dict[str, list[float]], labels: dict[str, str]) -> None:
    """One line per token kind over layers (1-indexed), in the kind's colour and marker."""
    for kind, values in per_layer.items():
        colour, marker = KIND_STYLES[kind]
        layers = list(range(1, len(values) + 1))
        panel.plot(layers, values, color=colour, marker=marker, label=labels[kind])
        panel.set_xticks(layers)
    panel.grid(alpha=0.3)
    panel.legend(fontsize=7)


def draw_sink_shares(entry: SinksEntry, run: RunSection, path: Path) -> Path:
    """One panel per token kind: its sink share per layer, every checkpoint overlaid in its colour
    (overall share in the legend)."""
    checkpoints = per_checkpoint_results(entry)
    figure, panels = panels_for(len(KINDS))
    for position, (panel, (kind, label)) in enumerate(zip(panels, KINDS.items())):
        for index, (checkpoint, stats) in enumerate(checkpoints.items()):
            values = stats["per_layer"]["sink_share"][kind]
            layers = list(range(1, len(values) + 1))
            panel.plot(
                layers,
                values,
                color=checkpoint_colour(checkpoint, index),
                marker=KIND_STYLES[kind][1],
                label=f"{checkpoint_title(checkpoint)} (overall {stats['overall']['sink_share'][kind]:.2f})",
            )
            panel.set_xticks(layers)
        panel.set_ylim(-0.03, 1.03)
        panel.set_xlabel("layer")
        panel.set_title(label, fontsize=9)
        panel.grid(alpha=0.3)
        panel.legend(fontsize=7)
        if position % 2 == 0:  # the left column
            panel.set_ylabel(f"share of heads with mean\nattention > {EPSILON}")
    figure.suptitle(f"Attention sinks per token kind (Gu et al., ε = {EPSILON}): {run_title(run)}", fontsize=10)
    return save(figure, path)


def draw_changes(entry: SinksEntry, run: RunSection, path: Path) -> Path:
    """One row per declared pair, one column per share: its change (b minus a) per layer and kind."""
    pairs = per_pair_results(entry)
    figure, axes = panel_grid(len(pairs), len(SHARES), sharey=False)
    for row, ((before, after), changes) in enumerate(zip(entry["pairs"], pairs.values())):
        for column, stat in enumerate(SHARES):
            panel = axes[row, column]
            panel.axhline(0.0, color="black", linewidth=0.8)
            plot_kinds(panel, changes["per_layer"][stat], KINDS)
            panel.set_title(STATISTICS[stat], fontsize=9)
            panel.set_ylabel(f"change, {checkpoint_title(before)}\n-> {checkpoint_title(after)}")
            panel.set_xlabel("layer")
    figure.suptitle(f"What changed per token kind: {run_title(run)}", fontsize=10)
    return save(figure, path)


def layer_table(entry: SinksEntry) -> str:
    """Markdown: per checkpoint, every statistic and kind per layer and overall."""
    parts = []
    for checkpoint, stats in per_checkpoint_results(entry).items():
        layers = len(next(iter(stats["per_layer"]["raw_share"].values())))
        lines = [
            f"**{checkpoint_title(checkpoint)}** ({stats['num_items']} examples)",
            "",
            "| statistic | kind | " + " | ".join(f"layer {layer + 1}" for layer in range(layers)) + " | overall |",
            "|---|---|" + "---|" * (layers + 1),
        ]
        lines += [
            f"| {STATISTICS[stat]} | {label} | "
            + " | ".join(f"{value:.3f}" for value in stats["per_layer"][stat][kind])
            + f" | {stats['overall'][stat][kind]:.3f} |"
            for stat in STATISTICS
            for kind, label in KINDS.items()
        ]
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"
