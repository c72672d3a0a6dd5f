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

A kind that never occurs has 0 everywhere (``num_tokens`` says so). Each example's raw share of
[CLS] and of [SEP], summed over its heads, is kept too (``units``: examples x 2 numbers). `compare`
gives, per declared pair (a, b), b minus a of every per-layer and overall value, and the change
of the overall raw share of [CLS] and [SEP] with its paired interval over the dev examples. The
norms come from the one forward path (`Capture(value_norms=True)`, asked for with the
`VALUE_NORMS` need).
"""

from __future__ import annotations

import numpy as np
import torch

from harness.analyses.base import ATTENTION, VALUE_NORMS, Analysis, AnalysisContext, register_analysis
from harness.analyses.surface import SpecialIds, token_masks
from harness.inputs.batches import AttentionBatch
from harness.results.store import JsonObject
from harness.views.base import pair_name
from harness.views.evidence import Change, StoredUnits, UnitSums, paired_change
from harness.views.sinks import (
    EPSILON,
    JUDGED_KINDS,
    KINDS,
    STATISTICS,
    UNIT,
    SinksComparison,
    SinksResult,
    SinksView,
    raw_share_change,
)

JUDGED = [list(KINDS).index(kind) for kind in JUDGED_KINDS]  # their positions along the kinds axis


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


def sink_statistics(
    attention: torch.Tensor, value_norms: torch.Tensor, input_ids: torch.Tensor, lengths: torch.Tensor, ids: SpecialIds
) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
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
    stats = {
        "sink_share": mean_over_rows(sinks, members),
        "value_norm": mean_over_rows(value_norms[..., None], members),
        "raw_share": mean_over_rows(raw, real_rows),
    }
    mass = weighted.sum(dim=-1, keepdim=True)
    with_mass = real_rows * (mass > 0)  # a row whose every attended vector is 0 has no shares
    stats["norm_share"] = mean_over_rows(weighted / mass.clamp(min=torch.finfo(mass.dtype).tiny), with_mass)
    return stats


def layer_means(grids: dict[str, list[list[float]]]) -> dict[str, list[float]]:
    """Per kind, the mean over heads of each layer of a (layers, heads) grid."""
    return {kind: [sum(row) / len(row) for row in grid] for kind, grid in grids.items()}


def overall_means(grids: dict[str, list[list[float]]]) -> dict[str, float]:
    """Per kind, the mean over every layer and head of a (layers, heads) grid."""
    return {kind: sum(map(sum, grid)) / sum(map(len, grid)) for kind, grid in grids.items()}


@register_analysis
class AttentionSinks(Analysis):
    """Sink shares and raw vs norm-weighted attention per token kind and head, per checkpoint."""

    view = SinksView
    source = "task"
    needs = frozenset({ATTENTION, VALUE_NORMS})
    reference = {
        "epsilon": EPSILON,
        "kinds": KINDS,
        "gu_et_al_2025": "Sink_k: share of heads whose mean attention to token k exceeds epsilon = 0.3",
        "kobayashi_et_al_2020": "BERT-base: the norm-weighted share of [SEP] and punctuation is far below "
        "their attention-weight share (small ||f(x)||)",
    }

    def __init__(self, context: AnalysisContext) -> None:
        super().__init__(context)
        self.ids = SpecialIds.of(context.run_tokenizer)
        shape = (len(context.checkpoints), len(STATISTICS), context.num_layers, context.num_heads, len(KINDS))
        self.totals = torch.zeros(shape, dtype=torch.float64, device=context.device)
        self.counts = torch.zeros(shape, dtype=torch.float64, device=context.device)
        self.tokens = torch.zeros(len(KINDS), dtype=torch.float64, device=context.device)
        self.num_items = 0
        # per checkpoint, per batch: each example's raw share of the judged kinds summed over heads, and the
        # number of heads that define it, (batch, judged kinds) each
        self.raw_sums: list[list[tuple[torch.Tensor, torch.Tensor]]] = [[] for _ in context.checkpoints]

    def update(self, batch: AttentionBatch) -> None:
        for index, checkpoint in enumerate(self.context.checkpoints):
            stats = sink_statistics(
                batch.attentions[checkpoint].float(),
                batch.value_norms[checkpoint],
                batch.input_ids,
                batch.lengths,
                self.ids,
            )
            for position, name in enumerate(STATISTICS):
                values, weights = stats[name]
                weights = weights.expand_as(values)
                self.totals[index, position] += (values * weights).sum(dim=0).double()
                self.counts[index, position] += weights.sum(dim=0).double()
            values, weights = stats["raw_share"]
            weights = weights.expand_as(values)[..., JUDGED]
            self.raw_sums[index].append(((values[..., JUDGED] * weights).sum(dim=(1, 2)), weights.sum(dim=(1, 2))))
        self.tokens += kind_members(batch.input_ids, batch.lengths, self.ids)[1].sum(dim=(0, 1)).double()
        self.num_items += len(batch.items)

    def result(self) -> dict[str, SinksResult]:
        means = (self.totals / self.counts.clamp(min=1)).cpu()
        tokens = {kind: int(count) for kind, count in zip(KINDS, self.tokens.tolist())}
        results: dict[str, SinksResult] = {}
        for index, checkpoint in enumerate(self.context.checkpoints):
            per_head = {
                name: {kind: means[index, position, ..., k].tolist() for k, kind in enumerate(KINDS)}
                for position, name in enumerate(STATISTICS)
            }
            results[checkpoint] = {
                "per_head": per_head,
                "per_layer": {name: layer_means(grids) for name, grids in per_head.items()},
                "overall": {name: overall_means(grids) for name, grids in per_head.items()},
                "num_tokens": tokens,
                "num_items": self.num_items,
                "units": {kind: units.stored() for kind, units in self.units(index).items()},
            }
        return results

    def units(self, index: int) -> dict[str, UnitSums]:
        """Checkpoint number ``index``'s raw share of each judged kind per example: the sum over its
        heads over the number of heads, so that the ratio of sums over examples is the overall share."""
        if not self.raw_sums[index]:
            return {kind: UnitSums.of(np.zeros(0), np.zeros(0), UNIT) for kind in JUDGED_KINDS}
        shares, heads = (torch.cat(parts).double().cpu().numpy() for parts in zip(*self.raw_sums[index]))
        return {kind: UnitSums.of(shares[:, k], heads[:, k], UNIT) for k, kind in enumerate(JUDGED_KINDS)}

    @classmethod
    def compare(
        cls, per_checkpoint: dict[str, SinksResult], pairs: list[tuple[str, str]]
    ) -> dict[str, SinksComparison]:
        """Per pair (a, b): b minus a of every per-layer and overall value, and the change of the
        raw share of each judged kind with its paired interval over the dev examples (``evidence``,
        by the signed change's metric name)."""

        def change(before: JsonObject, after: JsonObject) -> JsonObject:
            return {
                stat: {
                    kind: (
                        [b - a for a, b in zip(values, after[stat][kind])]
                        if isinstance(values, list)
                        else after[stat][kind] - values
                    )
                    for kind, values in kinds.items()
                }
                for stat, kinds in before.items()
            }

        def evidence(before: dict[str, StoredUnits], after: dict[str, StoredUnits]) -> dict[str, Change]:
            return {
                raw_share_change(kind): paired_change(UnitSums.read(before[kind]), UnitSums.read(after[kind]))
                for kind in JUDGED_KINDS
            }

        return {
            pair_name((a, b)): {
                "per_layer": change(per_checkpoint[a]["per_layer"], per_checkpoint[b]["per_layer"]),
                "overall": change(per_checkpoint[a]["overall"], per_checkpoint[b]["overall"]),
                "evidence": evidence(per_checkpoint[a]["units"], per_checkpoint[b]["units"]),
            }
            for a, b in pairs
        }
