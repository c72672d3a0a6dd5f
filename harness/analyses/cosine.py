"""Kovaleva et al.'s per-head change: cosine similarity of two checkpoints' attention maps.

For each example, declared pair of checkpoints and head, both maps are cropped to the real
(non-padding) tokens, flattened, and compared by cosine similarity; mean and standard
deviation over examples come from running sums on the attention's device. Each pair also
keeps each example's mean cosine per layer (examples x layers numbers, never maps), the units
the claim on the layers is resampled over (`harness.views.evidence`).
"""

from __future__ import annotations

import numpy as np
import torch

from harness.analyses.base import Analysis, AnalysisContext, register_analysis
from harness.inputs.batches import AttentionBatch, real_tokens
from harness.views.base import pair_name
from harness.views.cosine import UNIT, CosineResult, CosineStats, CosineView
from harness.views.evidence import UnitSums


def cosine_per_example(first: torch.Tensor, second: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Cosine similarity of cropped, flattened maps.

    ``first``/``second``: (batch, layers, heads, seq, seq); ``lengths``: (batch,).
    Returns (batch, layers, heads), in float32 whatever the attention's dtype. The crop keeps
    the real rows; in those, the padding columns are exactly 0 (the harness's mask adds the
    dtype's minimum before the softmax), so summing over whole real rows is the crop, without
    copying the maps to mask them.
    """
    rows = real_tokens(lengths, first.shape[-1]).float()[:, None, None, :]  # (batch, 1, 1, seq)
    a, b = first.float(), second.float()

    def over_real_rows(product: torch.Tensor) -> torch.Tensor:
        return (product.sum(dim=-1) * rows).sum(dim=-1)

    norms = (over_real_rows(a * a) * over_real_rows(b * b)).sqrt()
    return over_real_rows(a * b) / norms.clamp(min=1e-12)


class CosineSums:
    """Running sums of per-example cosines (batch, layers, heads) for each declared pair, on
    the attention's device, and the statistics they give: mean and std over examples per
    head, and the per-layer mean."""

    def __init__(self, context: AnalysisContext) -> None:
        shape = (len(context.pairs), context.num_layers, context.num_heads)
        self.total = torch.zeros(shape, dtype=torch.float64, device=context.device)
        self.total_squares = torch.zeros(shape, dtype=torch.float64, device=context.device)
        self.counts = [0] * len(context.pairs)

    def add(self, index: int, cosine: torch.Tensor) -> None:
        """Add a batch of pair ``index``'s per-example cosines, (batch, layers, heads), to its sums."""
        cosine = cosine.double()
        self.total[index] += cosine.sum(dim=0)
        self.total_squares[index] += (cosine**2).sum(dim=0)
        self.counts[index] += len(cosine)

    def stats(self, index: int) -> CosineStats:
        """Pair ``index``'s statistics as lists: ``per_head`` mean and ``per_head_std`` (population std over
        examples), ``per_layer`` mean over heads; and its ``num_examples``."""
        count = max(self.counts[index], 1)
        mean = (self.total[index] / count).cpu()
        variance = (self.total_squares[index].cpu() / count - mean**2).clamp(min=0)
        return {
            "per_head": mean.tolist(),
            "per_head_std": variance.sqrt().tolist(),
            "per_layer": mean.mean(dim=1).tolist(),
            "num_examples": self.counts[index],
        }


@register_analysis
class CosineSimilarity(Analysis):
    """Per declared pair: mean and std over examples of the per-head cosine, the per-layer mean,
    and each example's mean cosine per layer (``units``)."""

    view = CosineView
    joint = True

    def __init__(self, context: AnalysisContext) -> None:
        super().__init__(context)
        self.sums = CosineSums(context)
        self.per_example_layers: list[list[torch.Tensor]] = [[] for _ in context.pairs]

    def update(self, batch: AttentionBatch) -> None:
        for index, (before, after) in enumerate(self.context.pairs):
            cosine = cosine_per_example(batch.attentions[before], batch.attentions[after], batch.lengths)
            self.sums.add(index, cosine)
            self.per_example_layers[index].append(cosine.mean(dim=-1))

    def result(self) -> CosineResult:
        return {
            "per_pair": {
                pair_name(pair): {**self.sums.stats(index), "units": self.units(index).stored()}
                for index, pair in enumerate(self.context.pairs)
            }
        }

    def units(self, index: int) -> UnitSums:
        """Pair ``index``'s mean cosine over heads per example and layer, each example weighing one."""
        batches = self.per_example_layers[index]
        per_layer = torch.cat(batches).cpu().numpy() if batches else np.zeros((0, self.context.num_layers))
        return UnitSums.of(per_layer, np.ones(len(per_layer)), UNIT)
