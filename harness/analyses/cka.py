"""Representation change beside attention change: linear CKA of two checkpoints' hidden states per layer.

On the inputs of the attention cosine (the task's dev sample), every checkpoint's hidden states
(what each layer returned, `harness.model.forward.Capture.hidden_states`) are kept for up to
`harness.views.cka.TOKENS_PER_EXAMPLE` seeded ordinary tokens of each input and for its first
token ([CLS]); for each declared pair and layer, Kornblith et al.'s linear CKA of the two
checkpoints' column-centred states (`block_grams`: per seeded group of inputs, the inner products
of the groups' cross-products, from which the CKA of the whole sample and of any bootstrap
resample of the groups follow, `harness.views.cka.cka_of`), its chance level (the second
checkpoint's rows shuffled), and each input's mean attention cosine per layer (the units the
findings on attention against representations resample together). The ``cka_text`` analysis
measures the same on running text (`harness.inputs.sources.running_text`) and relates it to the
task's inputs.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch

from harness.analyses.base import ATTENTION, HIDDEN_STATES, Analysis, AnalysisContext, register_analysis
from harness.analyses.cosine import cosine_per_example
from harness.inputs.batches import AttentionBatch, EncodedBatch
from harness.inputs.sources.running_text import RunningTextSource
from harness.results.entries import AnyEntry
from harness.results.store import JsonObject
from harness.views.base import pair_name
from harness.views.cka import (
    TOKENS_PER_EXAMPLE,
    CkaPair,
    CkaResult,
    CkaTextView,
    CkaView,
    Similarity,
    against_other_inputs,
    example_blocks,
    layer_intervals,
)
from harness.views.evidence import UnitSums, pack

SHUFFLE_SEED = 1  # the chance level's shuffle of the second checkpoint's rows (the groups draw from the analysis seed)


def sampled_tokens(
    encoded: EncodedBatch, special_ids: list[int], count: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """(rows, positions) of up to ``count`` seeded ordinary tokens of each row: real, not a special
    token, not the first; rows in order."""
    ids = encoded.input_ids
    eligible = encoded.attention_mask.bool() & ~torch.isin(ids, torch.tensor(special_ids, dtype=ids.dtype))
    eligible[:, 0] = False
    scores = torch.rand(ids.shape, generator=generator).masked_fill(~eligible, -1.0)
    top = scores.topk(min(count, ids.shape[1]), dim=1)
    kept = top.values >= 0
    rows = torch.arange(len(ids))[:, None].expand_as(top.indices)
    return rows[kept], top.indices[kept]


def block_grams(first: torch.Tensor, second: torch.Tensor, blocks: torch.Tensor, groups: int) -> torch.Tensor:
    """(3, groups, groups): for the column-centred ``first`` and ``second`` (rows, width), the inner
    products ⟨A_gᵀB_g, A_hᵀB_h⟩ of the groups' cross-products for (A, B) = (first, second),
    (first, first), (second, second); ``blocks`` (rows,) is each row's group. Summed over all
    groups they are ‖YᵀX‖²_F, ‖XᵀX‖²_F and ‖YᵀY‖²_F of the whole sample."""
    x, y = first - first.mean(dim=0), second - second.mean(dim=0)
    members = [blocks == group for group in range(groups)]
    out = []
    for a, b in ((x, y), (x, x), (y, y)):
        products = torch.stack([a[rows].T @ b[rows] for rows in members]).reshape(groups, -1)
        out.append(products @ products.T)
    return torch.stack(out)


def chance_cka(first: torch.Tensor, second: torch.Tensor, seed: int) -> float:
    """Linear CKA of ``first`` with ``second``'s rows in a seeded random order: what unrelated rows
    of these widths give at this sample size."""
    order = torch.randperm(len(second), generator=torch.Generator().manual_seed(seed)).to(second.device)
    x, y = first - first.mean(dim=0), second[order] - second.mean(dim=0)
    cross, own, other = (torch.linalg.matrix_norm(a.T @ b) for a, b in ((x, y), (x, x), (y, y)))
    return float(cross**2 / (own * other).clamp(min=1e-30))


def similarity(first: torch.Tensor, second: torch.Tensor, blocks: torch.Tensor, groups: int) -> Similarity:
    """Linear CKA per layer of two checkpoints' states (rows, layers, width) on the same rows, with
    its interval, chance level and grams (`harness.views.cka.Similarity`)."""
    grams = torch.stack(
        [block_grams(first[:, layer], second[:, layer], blocks, groups) for layer in range(first.shape[1])]
    )
    stored = grams.double().cpu().numpy()
    values, low, high = layer_intervals(stored)
    return {
        "per_layer": values,
        "low_per_layer": low,
        "high_per_layer": high,
        "chance_per_layer": [
            chance_cka(first[:, layer], second[:, layer], SHUFFLE_SEED) for layer in range(first.shape[1])
        ],
        "rows": len(first),
        "width": first.shape[-1],
        "grams": pack(stored),
    }


@register_analysis
class RepresentationChange(Analysis):
    """Per declared pair: linear CKA per layer of the tokens and [CLS], and the attention's cosine on
    the same inputs."""

    view = CkaView
    joint = True
    needs = frozenset({ATTENTION, HIDDEN_STATES})
    unit = "dev examples"

    def __init__(self, context: AnalysisContext) -> None:
        super().__init__(context)
        self.tokens: dict[str, list[torch.Tensor]] = {name: [] for name in context.checkpoints}
        self.firsts: dict[str, list[torch.Tensor]] = {name: [] for name in context.checkpoints}
        self.token_inputs: list[torch.Tensor] = []  # the input each kept token row belongs to
        self.inputs = 0
        self.cosines: list[list[torch.Tensor]] = [[] for _ in context.pairs]
        self.generator = torch.Generator().manual_seed(context.seed)
        self.special_ids = list(context.tokenizer.all_special_ids) if context.tokenizer is not None else []

    def update(self, batch: AttentionBatch) -> None:
        rows, positions = sampled_tokens(batch.encoded, self.special_ids, TOKENS_PER_EXAMPLE, self.generator)
        for name in self.context.checkpoints:
            hidden = batch.hidden_states[name]  # (batch, layers, seq, width)
            self.tokens[name].append(hidden[rows.to(hidden.device), :, positions.to(hidden.device)].float())
            self.firsts[name].append(hidden[:, :, 0].float())
        self.token_inputs.append(rows + self.inputs)
        self.inputs += len(batch.items)
        for index, (before, after) in enumerate(self.context.pairs):
            cosine = cosine_per_example(batch.attentions[before], batch.attentions[after], batch.lengths)
            self.cosines[index].append(cosine.mean(dim=-1))

    def result(self) -> CkaResult:
        if not self.inputs:
            return {"per_pair": {}}
        blocks = example_blocks(self.inputs, self.context.seed)
        groups = int(blocks.max()) + 1
        device = self.context.device
        token_blocks = torch.as_tensor(blocks, device=device)[torch.cat(self.token_inputs).to(device)]
        first_blocks = torch.as_tensor(blocks, device=device)
        tokens = {name: torch.cat(parts) for name, parts in self.tokens.items()}
        firsts = {name: torch.cat(parts) for name, parts in self.firsts.items()}
        out: dict[str, CkaPair] = {}
        for index, (before, after) in enumerate(self.context.pairs):
            cosines = torch.cat(self.cosines[index]).cpu().numpy()
            out[pair_name((before, after))] = {
                "tokens": similarity(tokens[before], tokens[after], token_blocks, groups),
                "cls": similarity(firsts[before], firsts[after], first_blocks, groups),
                "attention_cosine_per_layer": cosines.mean(axis=0).tolist(),
                "units": UnitSums.of(cosines, np.ones(len(cosines)), self.unit).stored(),
                "num_examples": self.inputs,
                "blocks": blocks.tolist(),
            }
        return {"per_pair": out}


@register_analysis
class RepresentationChangeText(RepresentationChange):
    """`RepresentationChange` on running text, set against the task's inputs (`relate`)."""

    view = CkaTextView
    source = RunningTextSource.name
    unit = "segments"

    @classmethod
    def relate(cls, entry: AnyEntry, entries: Mapping[str, AnyEntry]) -> JsonObject | None:
        """Per pair measured on both, each measure's change on the task's inputs (the ``cka`` entry)
        minus on running text, per layer and over layers, with intervals (`against_other_inputs`)."""
        task = entries.get(CkaView.name)
        if task is None:
            return None
        own, theirs = entry["result"]["per_pair"], task["result"]["per_pair"]
        found = {pair: against_other_inputs(own[pair], theirs[pair]) for pair in own if pair in theirs}
        return {"task_inputs": found} if found else None
