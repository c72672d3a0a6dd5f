"""Kovaleva et al.'s per-head change: cosine similarity of pre-trained vs fine-tuned maps.

For each example and head, both maps are cropped to the real (non-padding) tokens,
flattened, and compared by cosine similarity; mean and standard deviation over examples
come from running sums, so memory does not depend on the number of examples.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from harness.analyses.base import Analysis, AnalysisContext, register_analysis
from harness.attention import FINETUNED, PRETRAINED, AttentionBatch, real_tokens


def real_token_mask(lengths: torch.Tensor, seq_len: int) -> torch.Tensor:
    """(batch, seq, seq) mask that is 1 where both row and column are real tokens."""
    real = real_tokens(lengths, seq_len)
    return (real[:, :, None] & real[:, None, :]).float()


def cosine_per_example(first: torch.Tensor, second: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Cosine similarity of cropped, flattened maps.

    ``first``/``second``: (batch, layers, heads, seq, seq); ``lengths``: (batch,).
    Returns (batch, layers, heads).
    """
    mask = real_token_mask(lengths, first.shape[-1])[:, None, None]
    a = (first * mask).flatten(start_dim=3)
    b = (second * mask).flatten(start_dim=3)
    return torch.nn.functional.cosine_similarity(a, b, dim=-1, eps=1e-12)


@register_analysis
class CosineSimilarity(Analysis):
    """Mean and std over examples of the per-head cosine similarity, plus the per-layer mean."""

    name = "cosine"

    def __init__(self, context: AnalysisContext) -> None:
        super().__init__(context)
        shape = (context.num_layers, context.num_heads)
        self.total = torch.zeros(shape, dtype=torch.float64)
        self.total_squares = torch.zeros(shape, dtype=torch.float64)
        self.count = 0

    def update(self, batch: AttentionBatch) -> None:
        cosine = cosine_per_example(
            batch.attentions[PRETRAINED], batch.attentions[FINETUNED], batch.lengths
        ).double()
        self.total += cosine.sum(dim=0)
        self.total_squares += (cosine**2).sum(dim=0)
        self.count += cosine.shape[0]

    def result(self) -> dict[str, Any]:
        mean = self.total / max(self.count, 1)
        variance = (self.total_squares / max(self.count, 1) - mean**2).clamp(min=0)
        return {
            "cosine_per_head": mean.tolist(),
            "cosine_per_head_std": variance.sqrt().tolist(),
            "cosine_per_layer": mean.mean(dim=1).tolist(),
            "cosine_num_examples": self.count,
        }

    @classmethod
    def stored_in(cls, summary: dict[str, Any]) -> bool:
        return "cosine_per_head" in summary

    @staticmethod
    def metrics(summary: dict[str, Any]) -> list[tuple[str, float]]:
        return [(f"cosine_layer_{layer + 1}", value) for layer, value in enumerate(summary["cosine_per_layer"])]

    @staticmethod
    def draw(summary: dict[str, Any], out_dir: Path) -> list[Path]:
        from harness.figures import draw_layer_lines, draw_head_grid

        title = f"{summary['model']} on {summary['task']}: pre-trained vs fine-tuned attention"
        return [
            draw_head_grid(summary["cosine_per_head"], out_dir / "cosine_per_head.png",
                           title=title, colorbar_label="cosine similarity (mean over examples)",
                           vmin=None, vmax=1.0, cmap="viridis"),
            draw_layer_lines({"fine-tuned vs pre-trained": summary["cosine_per_layer"]},
                             out_dir / "cosine_per_layer.png", title=title,
                             ylabel="mean cosine similarity"),
        ]
