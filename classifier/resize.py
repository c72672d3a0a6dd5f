"""Attention maps of any size (2..512 tokens) to the CNN's fixed input.

A map is resized with adaptive *max* pooling, which keeps a one-token diagonal or a single
attended column visible whatever the length: every output cell takes the strongest input
cell of its window (for maps shorter than the input size the windows overlap, which is a
nearest-neighbour upscaling). A second channel, adaptive *mean* pooling, keeps how broad
the attention is, which separates heterogeneous maps from thin patterns. Each channel is
divided by its own maximum so that long sequences (small weights) look like short ones.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

INPUT_SIZE = 32
CHANNELS = 2


def _scaled(pooled: torch.Tensor) -> torch.Tensor:
    """Each (size, size) map divided by its maximum; shape is kept (..., size, size)."""
    peak = pooled.amax(dim=(-2, -1), keepdim=True).clamp(min=1e-12)
    return pooled / peak


def normalise(maps: torch.Tensor, size: int = INPUT_SIZE) -> torch.Tensor:
    """Same-length maps (count, n, n) to CNN input (count, 2, size, size), float32."""
    maps = maps.float()
    return torch.stack(
        [_scaled(F.adaptive_max_pool2d(maps, size)), _scaled(F.adaptive_avg_pool2d(maps, size))], dim=1
    )


def normalise_list(maps: Sequence[np.ndarray | torch.Tensor], size: int = INPUT_SIZE) -> torch.Tensor:
    """Square maps of mixed sizes to CNN input (len(maps), 2, size, size), in input order.

    Maps of the same length are pooled in one call.
    """
    for index, attention in enumerate(maps):
        if attention.ndim != 2 or attention.shape[0] != attention.shape[1] or attention.shape[0] < 2:
            raise ValueError(f"map {index} has shape {tuple(attention.shape)}; expected a square (n, n) map with n >= 2")
    out = torch.empty(len(maps), CHANNELS, size, size)
    by_length: dict[int, list[int]] = {}
    for index, attention in enumerate(maps):
        by_length.setdefault(int(attention.shape[0]), []).append(index)
    for indices in by_length.values():
        stacked = torch.stack([torch.as_tensor(np.asarray(maps[i], dtype=np.float32)) for i in indices])
        out[indices] = normalise(stacked, size)
    return out


def normalise_padded(attentions: torch.Tensor, lengths: torch.Tensor, size: int = INPUT_SIZE) -> torch.Tensor:
    """A padded batch of every head's maps to CNN input, cropped to each example's real tokens.

    ``attentions``: (batch, layers, heads, seq, seq); ``lengths``: (batch,).
    Returns (batch * layers * heads, 2, size, size), ordered batch-major then layer, head.
    """
    batch, layers, heads = attentions.shape[:3]
    out = torch.empty(batch, layers * heads, CHANNELS, size, size)
    for length in lengths.unique().tolist():
        rows = (lengths == length).nonzero(as_tuple=True)[0]
        cropped = attentions[rows, :, :, :length, :length].reshape(-1, length, length)
        out[rows] = normalise(cropped, size).view(len(rows), layers * heads, CHANNELS, size, size)
    return out.view(-1, CHANNELS, size, size)
