"""Kovaleva et al.'s per-head change: cosine similarity of two checkpoints' attention maps.

For each example, declared pair of checkpoints and head, both maps are cropped to the real
(non-padding) tokens, flattened, and compared by cosine similarity; mean and standard
deviation over examples come from running sums on the attention's device, so memory does
not depend on the number of examples.
"""

from __future__ import annotations

from pathlib import Path
from statistics import fmean
from typing import Any

import torch

from harness.analyses.base import (Analysis, AnalysisContext, best_head, pair_name, per_pair_results,
                                   register_analysis)
from harness.inputs.batches import AttentionBatch, real_tokens
from harness.views.style import checkpoint_title, draw_head_grid, draw_layer_lines, run_title


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
        cosine = cosine.double()
        self.total[index] += cosine.sum(dim=0)
        self.total_squares[index] += (cosine**2).sum(dim=0)
        self.counts[index] += len(cosine)

    def stats(self, index: int) -> dict[str, Any]:
        count = max(self.counts[index], 1)
        mean = (self.total[index] / count).cpu()
        variance = (self.total_squares[index].cpu() / count - mean**2).clamp(min=0)
        return {"per_head": mean.tolist(), "per_head_std": variance.sqrt().tolist(),
                "per_layer": mean.mean(dim=1).tolist(), "num_examples": self.counts[index]}


def most_changed(per_head: list[list[float]]) -> dict[str, Any]:
    """The head (1-indexed) with the lowest mean cosine, and that cosine."""
    found = best_head(-torch.tensor(per_head))
    return {"layer": found["layer"], "head": found["head"], "value": -found["value"]}


@register_analysis
class CosineSimilarity(Analysis):
    """Per declared pair: mean and std over examples of the per-head cosine, and the per-layer mean."""

    name = "cosine"
    version = 2
    joint = True

    def __init__(self, context: AnalysisContext) -> None:
        super().__init__(context)
        self.sums = CosineSums(context)

    def update(self, batch: AttentionBatch) -> None:
        for index, (before, after) in enumerate(self.context.pairs):
            self.sums.add(index, cosine_per_example(batch.attentions[before], batch.attentions[after], batch.lengths))

    def result(self) -> dict[str, Any]:
        return {"per_pair": {pair_name(pair): self.sums.stats(index) for index, pair in enumerate(self.context.pairs)}}

    @classmethod
    def metrics(cls, entry: dict[str, Any]) -> list[tuple[str, float]]:
        """Per pair, the mean cosine per layer, over all heads, and over the last two layers
        (Kovaleva et al.: those change most)."""
        out = []
        for index, (name, stats) in enumerate(per_pair_results(entry).items()):
            prefix = "cosine" if index == 0 else f"cosine_{name.replace('->', '_to_')}"
            out += [(f"{prefix}_layer_{layer + 1}", value) for layer, value in enumerate(stats["per_layer"])]
            out += [(f"{prefix}_mean", fmean(stats["per_layer"])),
                    (f"{prefix}_last_two_layers", fmean(stats["per_layer"][-2:]))]
        return out

    @classmethod
    def headline(cls, metrics: dict[str, float]) -> list[str]:
        return [name for name in ("cosine_mean", "cosine_last_two_layers") if name in metrics]

    @classmethod
    def draw(cls, entry: dict[str, Any], run: dict[str, Any], out_dir: Path) -> list[Path]:
        pairs = per_pair_results(entry)
        paths = []
        for index, ((before, after), stats) in enumerate(zip(entry["pairs"], pairs.values())):
            suffix = "" if index == 0 else f"_{before}_{after}"
            paths.append(draw_head_grid(
                stats["per_head"], out_dir / f"cosine_per_head{suffix}.png",
                title=f"{run_title(run)}: {checkpoint_title(before)} vs {checkpoint_title(after)} attention",
                colorbar_label="cosine similarity (mean over examples)", vmax=1.0))
        series = {f"{checkpoint_title(before)} vs {checkpoint_title(after)}": stats["per_layer"]
                  for (before, after), stats in zip(entry["pairs"], pairs.values())}
        paths.append(draw_layer_lines(series, out_dir / "cosine_per_layer.png",
                                      title=f"{run_title(run)}: attention similarity per layer",
                                      ylabel="mean cosine similarity"))
        return paths
