"""Clark et al.'s surface analyses per head on the task's own dev inputs, for both checkpoints side by side.

Per example, every head's attention is reduced to Clark's token-level statistics, then
averaged over examples (their code: per document over rows, then over documents):

- relative position: attention to the token itself, the previous and the next token,
  averaged over the rows that have such a token (Clark divided by all n rows, so a pure
  next-token head scored (n-1)/n; here it scores 1);
- special tokens: attention to [CLS], [SEP], "." and "," averaged over all rows (Clark's
  denominator: attention *from* all tokens), plus [SEP] rows attending to [SEP] and the
  other rows attending to [SEP] (Clark's Figure 2, below);
- entropy: mean over rows of each row's entropy in nats, the entropy of the [CLS] row, and
  log n, the entropy of uniform attention (Clark's Figure 4). Computed exactly with
  0 log 0 = 0; Clark's 0.9999a + 0.0001/n smoothing only avoided NaNs and moves values by
  at most ~0.001 nats.

Heads are then labelled with Clark's thresholds and the heads whose labels changed under
fine-tuning are listed. Each example's attention to [CLS] and to [SEP] per layer is kept as
well (`UnitSums` of the examples: the claims on them are judged on resamples of the
examples). `harness.analyses.surface_text` measures the same on Clark's kind of input.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from transformers.tokenization_utils_base import PreTrainedTokenizerBase

from harness.analyses.base import Analysis, AnalysisContext, changed_heads, register_analysis
from harness.inputs.batches import AttentionBatch, real_tokens
from harness.inputs.encoding import token_text
from harness.results.store import JsonObject
from harness.views.base import pair_name
from harness.views.evidence import StoredUnits, UnitSums
from harness.views.surface import SPECIAL_TOKENS, STATISTICS, LabelChanges, SurfaceResult, SurfaceView

TOKEN_TYPES = ("cls", "sep", "period", "comma", "punct")

# Clark et al.'s behaviour thresholds: label -> (statistic, lower bound).
BEHAVIOURS = {
    "broad": ("entropy", 3.8),
    "previous": ("previous", 0.5),
    "next": ("next", 0.5),
    "cls": ("cls", 0.6),
    "sep": ("sep", 0.6),
    "punct": ("punct", 0.6),
}

# Clark et al. 2019 on BERT-base (1000 Wikipedia segments), layers 1-indexed.
CLARK_BERT_BASE = {
    "previous_heads_layers": [2, 4, 7, 8],
    "next_heads_layers": [1, 2, 2, 3, 6],
    "layers_with_over_half_on_sep": [6, 7, 8, 9, 10],
    "sep_to_sep": "> 0.9 in most heads",
    "last_layer_cls_entropy": 3.89,
}


def spellings(tokenizer: PreTrainedTokenizerBase, mark: str) -> tuple[int, ...]:
    """The ids of every token that is ``mark`` alone, however the tokenizer writes it: attached to
    a word (``.``) or after a space (RoBERTa's ``Ġ.``); none where it is unknown."""
    found = {
        token_id
        for text in (mark, f"a {mark}", f"a{mark}")
        for token_id in tokenizer(text, add_special_tokens=False)["input_ids"]
        if token_id != tokenizer.unk_token_id and token_text(tokenizer, token_id) == mark
    }
    return tuple(sorted(found))


@dataclass(frozen=True)
class SpecialIds:
    """Vocabulary ids of the tokens Clark tracks, by role: the tokenizer's own [CLS] and [SEP]
    (RoBERTa's ``<s>``, ``</s>``), and every spelling of ``"."`` and ``","`` (none when unknown)."""

    cls: int | None
    sep: int | None
    period: tuple[int, ...]
    comma: tuple[int, ...]

    @classmethod
    def of(cls, tokenizer: PreTrainedTokenizerBase) -> SpecialIds:
        return cls(tokenizer.cls_token_id, tokenizer.sep_token_id, spellings(tokenizer, "."), spellings(tokenizer, ","))


def token_masks(input_ids: torch.Tensor, lengths: torch.Tensor, ids: SpecialIds) -> dict[str, torch.Tensor]:
    """Float masks (batch, seq): real tokens, and each tracked token type among them."""
    real = real_tokens(lengths, input_ids.shape[1])

    def where(token_ids: int | tuple[int, ...] | None) -> torch.Tensor:
        wanted = (token_ids,) if isinstance(token_ids, int) else token_ids or ()
        return torch.isin(input_ids, torch.tensor(wanted, dtype=input_ids.dtype, device=input_ids.device)) & real

    masks = {
        "real": real,
        "cls": where(ids.cls),
        "sep": where(ids.sep),
        "period": where(ids.period),
        "comma": where(ids.comma),
    }
    masks["punct"] = masks["period"] | masks["comma"]
    return {name: mask.float() for name, mask in masks.items()}


def row_mean(values: torch.Tensor, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean of ``values`` (batch, layers, heads, seq) over the selected ``rows`` (batch, seq).

    Returns the means (batch, layers, heads) and which examples have any selected row (batch,).
    """
    count = rows.sum(dim=1)
    total = (values * rows[:, None, None, :]).sum(dim=-1)
    return total / count.clamp(min=1)[:, None, None], count > 0


def surface_statistics(
    attention: torch.Tensor,
    input_ids: torch.Tensor,
    lengths: torch.Tensor,
    ids: SpecialIds,
    row_entropy: torch.Tensor | None = None,
) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """Every statistic of `STATISTICS` per example and head.

    ``attention``: (batch, layers, heads, seq, seq), rows attend to columns; padding rows and
    columns past ``lengths`` are ignored; ``row_entropy``: (batch, layers, heads, seq) each
    row's entropy where already computed (`AttentionBatch.row_entropy`). Returns name ->
    (values (batch, layers, heads), valid (batch,)): an example is invalid for a statistic it
    has no rows for (no [SEP]).
    """
    masks = token_masks(input_ids, lengths, ids)
    real = masks["real"]
    # Attention of every row to each token type, in one pass over the maps: (batch, layers, heads, seq, types).
    type_columns = torch.stack([masks[name] for name in TOKEN_TYPES], dim=-1)[:, None, None]
    summed = attention @ type_columns
    to_type = {name: summed[..., index] for index, name in enumerate(TOKEN_TYPES)}
    has_neighbour = real[:, 1:]  # rows 1..n-1 have a previous token; rows 0..n-2 a next one
    stats = {name: row_mean(to_type[name], real) for name in TOKEN_TYPES}
    stats["self"] = row_mean(attention.diagonal(dim1=-2, dim2=-1), real)
    stats["previous"] = row_mean(attention.diagonal(offset=-1, dim1=-2, dim2=-1), has_neighbour)
    stats["next"] = row_mean(attention.diagonal(offset=1, dim1=-2, dim2=-1), has_neighbour)
    stats["sep_to_sep"] = row_mean(to_type["sep"], masks["sep"])
    stats["rest_to_sep"] = row_mean(to_type["sep"], real - masks["sep"])
    if row_entropy is None:  # padding columns of real rows carry ~0 attention, and entr(0) = 0
        row_entropy = torch.special.entr(attention).sum(dim=-1)
    stats["entropy"] = row_mean(row_entropy, real)
    stats["cls_entropy"] = (row_entropy[..., 0], lengths > 0)
    return stats


def behaviour_labels(per_head: dict[str, list[list[float]]]) -> list[list[list[str]]]:
    """Clark's labels of every head (layers x heads lists of labels) from per-head means."""
    layers, heads = len(per_head["entropy"]), len(per_head["entropy"][0])
    return [
        [
            [label for label, (stat, bound) in BEHAVIOURS.items() if per_head[stat][layer][head] > bound]
            for head in range(heads)
        ]
        for layer in range(layers)
    ]


THRESHOLDS: JsonObject = {  # the analysis's `reference`: the bounds each behaviour is judged by
    "thresholds": {label: {"statistic": stat, "above": bound} for label, (stat, bound) in BEHAVIOURS.items()}
}


@register_analysis
class Surface(Analysis):
    """Relative position, special tokens, entropy and behaviour labels per head, per checkpoint,
    on the task's dev sample; ``unit`` names the inputs the per-unit sums are kept over."""

    view = SurfaceView
    source = "task"
    unit = "dev examples"
    reference = THRESHOLDS

    def __init__(self, context: AnalysisContext) -> None:
        super().__init__(context)
        self.ids = SpecialIds.of(context.run_tokenizer)
        shape = (len(context.checkpoints), len(STATISTICS), context.num_layers, context.num_heads)
        self.totals = torch.zeros(shape, dtype=torch.float64, device=context.device)
        self.counts = torch.zeros(shape[:2], dtype=torch.float64, device=context.device)
        # per checkpoint: each input's attention to each special token per layer (mean over heads), batch by batch
        self.units: dict[str, dict[str, list[torch.Tensor]]] = {
            checkpoint: {token: [] for token in SPECIAL_TOKENS} for checkpoint in context.checkpoints
        }
        self.counted: dict[str, list[torch.Tensor]] = {checkpoint: [] for checkpoint in context.checkpoints}
        self.uniform_entropy_total = 0.0
        self.num_items = 0

    def update(self, batch: AttentionBatch) -> None:
        for index, checkpoint in enumerate(self.context.checkpoints):
            stats = surface_statistics(
                batch.attentions[checkpoint].float(),
                batch.input_ids,
                batch.lengths,
                self.ids,
                batch.row_entropy(checkpoint),
            )
            for position, name in enumerate(STATISTICS):
                values, valid = stats[name]
                self.totals[index, position] += values[valid].double().sum(dim=0)
                self.counts[index, position] += valid.sum()
            self.keep_units(checkpoint, stats)
        self.uniform_entropy_total += float(batch.lengths.double().log().sum())
        self.num_items += len(batch.items)

    def keep_units(self, checkpoint: str, stats: dict[str, tuple[torch.Tensor, torch.Tensor]]) -> None:
        """Each input's attention to [CLS] and to [SEP] per layer (mean over its heads) and whether
        it counts (it has real rows: the same for both tokens), on the device."""
        for token in SPECIAL_TOKENS:
            values, valid = stats[token]
            self.units[checkpoint][token].append(values.double().mean(dim=-1) * valid[:, None])
        self.counted[checkpoint].append(valid.double())

    def unit_sums(self, checkpoint: str) -> dict[str, StoredUnits]:
        """The kept per-input sums of ``checkpoint`` as stored `UnitSums`, by special token."""

        def joined(parts: list[torch.Tensor], shape: tuple[int, ...]) -> np.ndarray:
            return torch.cat(parts).cpu().numpy() if parts else np.zeros(shape)

        counted = joined(self.counted[checkpoint], (0,))
        return {
            token: UnitSums.of(joined(parts, (0, self.context.num_layers)), counted, self.unit).stored()
            for token, parts in self.units[checkpoint].items()
        }

    def result(self) -> dict[str, SurfaceResult]:
        means = (self.totals / self.counts.clamp(min=1)[:, :, None, None]).cpu()
        results: dict[str, SurfaceResult] = {}
        for index, checkpoint in enumerate(self.context.checkpoints):
            per_head = {name: means[index, position].tolist() for position, name in enumerate(STATISTICS)}
            labels = behaviour_labels(per_head)
            results[checkpoint] = {
                "per_head": per_head,
                "per_layer": {
                    name: means[index, position].mean(dim=1).tolist() for position, name in enumerate(STATISTICS)
                },
                "labels": labels,
                "label_counts": {label: sum(label in cell for row in labels for cell in row) for label in BEHAVIOURS},
                "uniform_entropy": self.uniform_entropy_total / max(self.num_items, 1),
                "num_items": self.num_items,
                "units": self.unit_sums(checkpoint),
            }
        return results

    @classmethod
    def compare(cls, per_checkpoint: dict[str, SurfaceResult], pairs: list[tuple[str, str]]) -> dict[str, LabelChanges]:
        return {
            pair_name((a, b)): {
                "label_changes": changed_heads(per_checkpoint[a]["labels"], per_checkpoint[b]["labels"])
            }
            for a, b in pairs
        }
