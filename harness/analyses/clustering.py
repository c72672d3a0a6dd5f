"""Clark et al.'s head clustering, with the pre-trained and fine-tuned heads in one space.

The distance between two heads is the Jensen-Shannon divergence of their attention rows,
summed over tokens (Clark's ``head_distances.py``); every head of both checkpoints is
compared with every other, so the fine-tuned version of a head can be placed next to its
pre-trained version. The divergence is exact (0 log 0 = 0, no smoothing: Clark's
0.001/n + 0.999a only avoided NaNs). The cost is quadratic in heads and linear in tokens,
so a seeded sample of ``clustering_tokens_per_example`` rows per example (option, default
2) is compared and the number of tokens used is stored. Measured on 250 RTE examples
(MiniLM): 2 rows per example give distances correlated at r = 0.9993 with 32 rows (4 rows:
0.9997), and each head's pre-trained to fine-tuned distance at r = 0.9996 (4 rows: 0.9999).
Stored distances are the mean per token (Clark's sum divided by the tokens used), so runs
of different sizes compare; the 2-D picture is the same up to scale. Metric MDS (scikit-learn)
embeds the distance matrix.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from sklearn.manifold import MDS

from harness.analyses.base import Analysis, AnalysisContext, register_analysis
from harness.inputs.batches import AttentionBatch, real_tokens
from harness.views.base import pair_name
from harness.views.clustering import (
    BetweenVersions,
    ClusteringResult,
    ClusteringSettings,
    ClusteringView,
    WithinCheckpoint,
)

CHUNK_ELEMENTS = 2**22  # bounds the (heads chunk, heads, rows, seq) temporary to 16 MB (cache-sized chunks run faster)


def pairwise_js(rows: torch.Tensor) -> torch.Tensor:
    """Jensen-Shannon divergence (nats) between every pair of heads, summed over rows.

    ``rows``: (heads, rows, seq), each row a distribution (padding columns 0). Uses
    JS(p, q) = H(m) - (H(p) + H(q)) / 2 with m = (p + q) / 2, and
    H(m) = (log 2 * sum(p + q) - sum((p + q) log(p + q))) / 2, so the only pairwise
    elementwise work is one add and one x log x (0 log 0 = 0). Computed for the upper
    triangle only (it is symmetric); returns (heads, heads), float64 on ``rows``' device.
    """
    heads = rows.shape[0]
    own = -torch.xlogy(rows, rows).sum(dim=(1, 2))
    mass = rows.sum(dim=(1, 2))
    distances = torch.zeros(heads, heads, dtype=torch.float64, device=rows.device)
    chunk = max(1, CHUNK_ELEMENTS // rows[0].numel() // heads)
    for start in range(0, heads, chunk):
        stop = min(start + chunk, heads)
        summed = rows[start:stop, None] + rows[None, start:]
        pair_mass = mass[start:stop, None] + mass[None, start:]
        mixed = (math.log(2) * pair_mass - torch.xlogy(summed, summed).sum(dim=(2, 3))) / 2
        block = (mixed - (own[start:stop, None] + own[None, start:]) / 2).double()
        distances[start:stop, start:] = block
    distances = torch.triu(distances) + torch.triu(distances, diagonal=1).T
    return distances.clamp(min=0)


def sample_rows(
    lengths: torch.Tensor, per_example: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Seeded choice of up to ``per_example`` real rows per example: (example index, row index) pairs."""
    examples, positions = [], []
    for example, length in enumerate(lengths.cpu().tolist()):
        chosen = torch.randperm(length, generator=generator)[:per_example]
        examples.append(torch.full_like(chosen, example))
        positions.append(chosen)
    return torch.cat(examples), torch.cat(positions)


def embed(distances: np.ndarray, seed: int) -> tuple[np.ndarray, float]:
    """2-D metric MDS of a precomputed distance matrix; returns coordinates and stress."""
    mds = MDS(
        n_components=2,
        metric="precomputed",
        metric_mds=True,
        init="classical_mds",
        random_state=seed,
        normalized_stress=True,
    )
    coordinates = mds.fit_transform(distances)
    return coordinates, float(mds.stress_)


def layer_block_means(distances: np.ndarray, layers: int, heads: int) -> WithinCheckpoint:
    """Mean divergence between heads of the same layer vs of different layers (one checkpoint)."""
    layer_of = np.repeat(np.arange(layers), heads)
    same = layer_of[:, None] == layer_of[None, :]
    off_diagonal = ~np.eye(layers * heads, dtype=bool)
    return {
        "same_layer": float(distances[same & off_diagonal].mean()) if heads > 1 else float("nan"),
        "other_layers": float(distances[~same].mean()) if layers > 1 else float("nan"),
    }


@register_analysis
class Clustering(Analysis):
    """Pairwise JS divergence between all heads of all checkpoints, its MDS embedding, per-head change."""

    view = ClusteringView
    source = "corpus"
    joint = True
    settings = ClusteringSettings
    settings_used = ("analysis_seed",)

    def __init__(self, context: AnalysisContext) -> None:
        super().__init__(context)
        self.per_example = ClusteringSettings.of(context.settings).clustering_tokens_per_example
        self.generator = torch.Generator().manual_seed(context.seed)
        heads = len(context.checkpoints) * context.num_layers * context.num_heads
        self.totals = torch.zeros(heads, heads, dtype=torch.float64, device=context.device)
        self.tokens = 0
        self.num_items = 0

    def update(self, batch: AttentionBatch) -> None:
        examples, positions = sample_rows(batch.lengths, self.per_example, self.generator)
        examples, positions = examples.to(batch.device), positions.to(batch.device)
        # (checkpoints * layers * heads, sampled rows, seq); padding columns of real rows are ~0.
        rows = torch.cat(
            [
                batch.attentions[checkpoint][examples, :, :, positions].float().permute(1, 2, 0, 3).flatten(0, 1)
                for checkpoint in self.context.checkpoints
            ]
        )
        rows = rows * real_tokens(batch.lengths[examples], rows.shape[-1])[None]
        self.totals += pairwise_js(rows)
        self.tokens += len(positions)
        self.num_items += len(batch.items)

    def result(self) -> ClusteringResult:
        layers, heads = self.context.num_layers, self.context.num_heads
        checkpoints = list(self.context.checkpoints)
        mean = (self.totals / max(self.tokens, 1)).cpu().numpy()
        mean = (mean + mean.T) / 2  # symmetric up to rounding; MDS wants it exactly
        np.fill_diagonal(mean, 0.0)
        coordinates, stress = embed(mean, self.context.seed)
        size = layers * heads
        blocks = {
            c: layer_block_means(mean[i * size : (i + 1) * size, i * size : (i + 1) * size], layers, heads)
            for i, c in enumerate(checkpoints)
        }
        per_pair: dict[str, BetweenVersions] = {}
        for before, after in self.context.pairs:
            i, j = checkpoints.index(before), checkpoints.index(after)
            between = np.diagonal(mean[i * size : (i + 1) * size, j * size : (j + 1) * size]).reshape(layers, heads)
            per_pair[pair_name((before, after))] = {"between_versions": between.tolist()}
        return {
            "checkpoints": checkpoints,
            "num_layers": layers,
            "num_heads": heads,
            "head_order": "checkpoint, then layer, then head (row-major)",
            "js_divergence": mean.tolist(),
            "mds": coordinates.tolist(),
            "mds_stress": stress,
            "within_checkpoint": blocks,
            "tokens_used": self.tokens,
            "tokens_per_example": self.per_example,
            "num_items": self.num_items,
            "distance": "Jensen-Shannon divergence (nats), mean per token",
            "per_pair": per_pair,
        }
