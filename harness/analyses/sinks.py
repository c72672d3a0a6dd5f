"""Are [CLS] and [SEP] no-ops? Attention sinks and norm-weighted attention per token kind, per checkpoint.

Clark et al. 2019 read BERT's heavy attention to [SEP] as a no-op. Two later measures test that
reading, per token kind ([CLS], [SEP], "." or ",", every other real token):

- **sink share** (Gu et al., ICLR 2025, "When attention sink emerges in language models"): token k
  is a sink of a head when the head's mean attention to it, over the example's real rows, exceeds
  epsilon = 0.3; Gu's Sink_k is the share of heads in which it is one. Per head: the share of the
  kind's tokens that are sinks, averaged over the examples that have the kind; per layer the mean
  over its heads; overall the mean over all heads (Gu's Sink^epsilon, averaged over the kind's tokens).
- **norm-weighted attention** (Kobayashi et al. 2020, "Attention is not only a weight"): what token j
  adds to row i's output through a head is alpha_ij f(x_j), f(x_j) = (x_j W_V + b_V) W_O^h. Per head
  and kind: the share of each row's raw attention (sum over the kind's tokens of alpha_ij) and of its
  norm-weighted mass (sum over the kind of ||alpha_ij f(x_j)||, over the sum over all tokens) that
  goes to the kind, averaged over the real rows (Clark's denominator: attention *from* all tokens),
  then over examples; and the mean ||f(x_j)|| of the kind's tokens. Kobayashi et al. found BERT's
  large attention to [SEP] and punctuation comes with small ||f(x)||: the norm-weighted share
  shrinks sharply.

A kind that never occurs has 0 everywhere (``num_tokens`` says so). `compare` gives, per declared
pair (a, b), b minus a of every per-layer and overall value. The norms come from the one forward
path (`Capture(value_norms=True)`, asked for with the `VALUE_NORMS` need).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from matplotlib.axes import Axes

from harness.analyses.base import ATTENTION, VALUE_NORMS, Analysis, AnalysisContext, register_analysis
from harness.views.base import pair_name, per_checkpoint_results, per_pair_results
from harness.analyses.surface import SpecialIds, token_masks
from harness.inputs.batches import AttentionBatch
from harness.views.style import (OKABE_ITO, checkpoint_colour, checkpoint_title, draw_grid_rows, panel_grid, panels_for,
                             run_title, save, scatter_by_layer, titled_pairs)

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
KIND_STYLES = {"cls": (OKABE_ITO["vermillion"], "o"), "sep": (OKABE_ITO["blue"], "s"),
               "punct": (OKABE_ITO["purple"], "^"), "other": (OKABE_ITO["green"], "D")}
SHARES = ("sink_share", "raw_share", "norm_share")


def kind_members(input_ids: torch.Tensor, lengths: torch.Tensor, ids: SpecialIds) -> tuple[torch.Tensor, torch.Tensor]:
    """The (batch, seq) float mask of real tokens, and the (batch, seq, kinds) one-hot kind of each real token."""
    masks = token_masks(input_ids, lengths, ids)
    other = masks["real"] - masks["cls"] - masks["sep"] - masks["punct"]
    return masks["real"], torch.stack([masks["cls"], masks["sep"], masks["punct"], other], dim=-1)


def mean_over_rows(per_row: torch.Tensor, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean of ``per_row`` (batch, layers, heads, seq, kinds) over the selected rows (1 selects; broadcastable
    to (batch, layers, heads, seq, 1)); returns the means (batch, layers, heads, kinds) and their weights
    (1 where any row was selected, else 0; broadcastable to the means)."""
    count = rows.sum(dim=-2)
    return (per_row * rows).sum(dim=-2) / count.clamp(min=1), (count > 0).float()


def sink_statistics(attention: torch.Tensor, value_norms: torch.Tensor, input_ids: torch.Tensor,
                    lengths: torch.Tensor, ids: SpecialIds) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """Every statistic of `STATISTICS` per example, head and kind.

    ``attention``: (batch, layers, heads, seq, seq), rows attend to columns; ``value_norms``: (batch,
    layers, heads, seq) ||f(x_j)|| per head; rows and columns past ``lengths`` are padding and ignored.
    Returns name -> (values (batch, layers, heads, kinds), weights broadcastable to them: 1 where the
    value is defined, 0 where the example lacks the kind or a head's rows carry no norm-weighted mass).
    """
    real, kinds = kind_members(input_ids, lengths, ids)
    members = kinds[:, None, None]  # (batch, 1, 1, seq, kinds)
    real_rows = real[:, None, None, :, None]  # (batch, 1, 1, seq, 1)
    # Mean attention each token receives from the real rows, as a product: no map-sized temporary.
    received = (real[:, None, None, None, :] @ attention).squeeze(-2) / lengths[:, None, None, None]
    sinks = (received > EPSILON).float()[..., None]  # (batch, layers, heads, seq, 1)
    # ||alpha_ij f(x_j)|| = alpha_ij ||f(x_j)||: each row's raw and norm-weighted attention per kind in one
    # pass over the maps, against the kind masks and the masks weighted by ||f(x_j)||.
    norm_weighted_members = value_norms[..., None] * members  # (batch, layers, heads, seq, kinds)
    columns = torch.cat([members.expand_as(norm_weighted_members), norm_weighted_members], dim=-1)
    raw, weighted = (attention @ columns).split(kinds.shape[-1], dim=-1)
    stats = {"sink_share": mean_over_rows(sinks, members),
             "value_norm": mean_over_rows(value_norms[..., None], members),
             "raw_share": mean_over_rows(raw, real_rows)}
    mass = weighted.sum(dim=-1, keepdim=True)
    with_mass = real_rows * (mass > 0)  # a row whose every attended vector is 0 has no shares
    stats["norm_share"] = mean_over_rows(weighted / mass.clamp(min=torch.finfo(mass.dtype).tiny), with_mass)
    return stats


def layer_means(grids: dict[str, list[list[float]]]) -> dict[str, list[float]]:
    return {kind: [sum(row) / len(row) for row in grid] for kind, grid in grids.items()}


def overall_means(grids: dict[str, list[list[float]]]) -> dict[str, float]:
    return {kind: sum(map(sum, grid)) / sum(map(len, grid)) for kind, grid in grids.items()}


@register_analysis
class AttentionSinks(Analysis):
    """Sink shares and raw vs norm-weighted attention per token kind and head, per checkpoint."""

    name = "sinks"
    version = 1
    source = "task"
    needs = frozenset({ATTENTION, VALUE_NORMS})
    reference = {
        "epsilon": EPSILON, "kinds": KINDS,
        "gu_et_al_2025": "Sink_k: share of heads whose mean attention to token k exceeds epsilon = 0.3",
        "kobayashi_et_al_2020": "BERT-base: the norm-weighted share of [SEP] and punctuation is far below "
                                "their attention-weight share (small ||f(x)||)",
    }

    def __init__(self, context: AnalysisContext) -> None:
        super().__init__(context)
        self.ids = SpecialIds.of(context.tokenizer)
        shape = (len(context.checkpoints), len(STATISTICS), context.num_layers, context.num_heads, len(KINDS))
        self.totals = torch.zeros(shape, dtype=torch.float64, device=context.device)
        self.counts = torch.zeros(shape, dtype=torch.float64, device=context.device)
        self.tokens = torch.zeros(len(KINDS), dtype=torch.float64, device=context.device)
        self.num_items = 0

    def update(self, batch: AttentionBatch) -> None:
        for index, checkpoint in enumerate(self.context.checkpoints):
            stats = sink_statistics(batch.attentions[checkpoint].float(), batch.value_norms[checkpoint],
                                    batch.input_ids, batch.lengths, self.ids)
            for position, name in enumerate(STATISTICS):
                values, weights = stats[name]
                weights = weights.expand_as(values)
                self.totals[index, position] += (values * weights).sum(dim=0).double()
                self.counts[index, position] += weights.sum(dim=0).double()
        self.tokens += kind_members(batch.input_ids, batch.lengths, self.ids)[1].sum(dim=(0, 1)).double()
        self.num_items += len(batch.items)

    def result(self) -> dict[str, Any]:
        means = (self.totals / self.counts.clamp(min=1)).cpu()
        tokens = {kind: int(count) for kind, count in zip(KINDS, self.tokens.tolist())}
        results = {}
        for index, checkpoint in enumerate(self.context.checkpoints):
            per_head = {name: {kind: means[index, position, ..., k].tolist() for k, kind in enumerate(KINDS)}
                        for position, name in enumerate(STATISTICS)}
            results[checkpoint] = {
                "per_head": per_head,
                "per_layer": {name: layer_means(grids) for name, grids in per_head.items()},
                "overall": {name: overall_means(grids) for name, grids in per_head.items()},
                "num_tokens": tokens, "num_items": self.num_items,
            }
        return results

    @classmethod
    def compare(cls, per_checkpoint: dict[str, Any], pairs: list[tuple[str, str]]) -> dict[str, Any]:
        """Per pair (a, b): b minus a of every per-layer and overall value."""
        def change(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
            return {stat: {kind: ([b - a for a, b in zip(values, after[stat][kind])] if isinstance(values, list)
                                  else after[stat][kind] - values) for kind, values in kinds.items()}
                    for stat, kinds in before.items()}

        return {pair_name((a, b)): {part: change(per_checkpoint[a][part], per_checkpoint[b][part])
                                    for part in ("per_layer", "overall")} for a, b in pairs}

    @classmethod
    def metrics(cls, entry: dict[str, Any]) -> list[tuple[str, float]]:
        """Per checkpoint, statistic and kind the overall value; per pair its change."""
        out = [(f"sinks_{checkpoint}_{stat}_{kind}", value)
               for checkpoint, stats in per_checkpoint_results(entry).items()
               for stat in SHARES for kind, value in stats["overall"][stat].items()]
        return out + [(f"sinks_{name.replace('->', '_to_')}_{stat}_{kind}_change", value)
                      for name, changes in per_pair_results(entry).items()
                      for stat in SHARES for kind, value in changes["overall"][stat].items()]

    @classmethod
    def draw(cls, entry: dict[str, Any], run: dict[str, Any], out_dir: Path) -> list[Path]:
        written = [draw_raw_vs_norm(entry, run, out_dir / "sinks_raw_vs_norm_weighted.png"),
                   draw_sink_shares(entry, run, out_dir / "sinks_sink_share.png")]
        if entry["pairs"]:
            written.append(draw_changes(entry, run, out_dir / "sinks_changes.png"))
        for kind in ("cls", "sep", "punct"):
            rows = {measure: {checkpoint_title(c): stats["per_head"][stat][kind]
                              for c, stats in per_checkpoint_results(entry).items()}
                    for stat, measure in (("raw_share", "raw"), ("norm_share", "norm-weighted"))}
            written.append(draw_grid_rows(
                rows, out_dir / f"sinks_heads_{kind}.png", colorbar_label="share",
                differences=titled_pairs(entry["pairs"]),
                title=f"Raw and norm-weighted (‖αf(x)‖) attention to {KINDS[kind]} per head: {run_title(run)}"))
        return written

    @classmethod
    def tables(cls, entry: dict[str, Any], run: dict[str, Any]) -> dict[str, str]:
        return {"sinks_by_layer": f"# Attention sinks and norm-weighted attention: {run_title(run)}\n\n"
                                  f"{layer_table(entry)}"}


MEASURES = {"raw_share": "raw attention", "norm_share": "norm-weighted ‖αf(x)‖"}


def draw_raw_vs_norm(entry: dict[str, Any], run: dict[str, Any], path: Path) -> Path:
    """One row of panels per token kind, one column per measure (raw, norm-weighted): each
    checkpoint's share per head (dots) and per layer (line) overlaid in its colour, as Clark's
    Figure 2 beside Kobayashi's norm-based view."""
    checkpoints = per_checkpoint_results(entry)
    figure, axes = panel_grid(len(KINDS), len(MEASURES))
    for row, (kind, label) in enumerate(KINDS.items()):
        for column, (stat, measure) in enumerate(MEASURES.items()):
            panel = axes[row, column]
            for index, (checkpoint, stats) in enumerate(checkpoints.items()):
                scatter_by_layer(panel, stats["per_head"][stat][kind], checkpoint_colour(checkpoint, index),
                                 checkpoint_title(checkpoint), band=(index, len(checkpoints)))
            panel.set_ylabel(f"share to {label}")
            panel.set_title(measure, fontsize=9)
            panel.legend(fontsize=7)
    for column in range(len(MEASURES)):
        axes[-1, column].set_xlabel("layer")
    figure.suptitle(f"Raw vs norm-weighted attention per token kind (Clark Fig. 2, Kobayashi): {run_title(run)}",
                    fontsize=10)
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


def draw_sink_shares(entry: dict[str, Any], run: dict[str, Any], path: Path) -> Path:
    """One panel per token kind: its sink share per layer, every checkpoint overlaid in its colour
    (overall share in the legend)."""
    checkpoints = per_checkpoint_results(entry)
    figure, panels = panels_for(len(KINDS))
    for position, (panel, (kind, label)) in enumerate(zip(panels, KINDS.items())):
        for index, (checkpoint, stats) in enumerate(checkpoints.items()):
            values = stats["per_layer"]["sink_share"][kind]
            layers = list(range(1, len(values) + 1))
            panel.plot(layers, values, color=checkpoint_colour(checkpoint, index), marker=KIND_STYLES[kind][1],
                       label=f"{checkpoint_title(checkpoint)} (overall {stats['overall']['sink_share'][kind]:.2f})")
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


def draw_changes(entry: dict[str, Any], run: dict[str, Any], path: Path) -> Path:
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


def layer_table(entry: dict[str, Any]) -> str:
    """Markdown: per checkpoint, every statistic and kind per layer and overall."""
    parts = []
    for checkpoint, stats in per_checkpoint_results(entry).items():
        layers = len(next(iter(stats["per_layer"]["raw_share"].values())))
        lines = [f"**{checkpoint_title(checkpoint)}** ({stats['num_items']} examples)", "",
                 "| statistic | kind | " + " | ".join(f"layer {layer + 1}" for layer in range(layers)) + " | overall |",
                 "|---|---|" + "---|" * (layers + 1)]
        lines += [f"| {STATISTICS[stat]} | {label} | "
                  + " | ".join(f"{value:.3f}" for value in stats["per_layer"][stat][kind])
                  + f" | {stats['overall'][stat][kind]:.3f} |" for stat in STATISTICS for kind, label in KINDS.items()]
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"
