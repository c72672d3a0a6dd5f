"""Attention maps of any size (2..512 tokens) to the CNN's fixed input.

A map of n tokens is index-resampled to m = 32 * ceil(n / 32) (nearest neighbour, so every
token keeps at least one pixel) and pooled by m / 32 to 32 x 32 with *max* pooling,
which keeps a one-token diagonal or a single attended column visible whatever the length,
and with *mean* pooling, which keeps how broad the attention is. Channels (each divided by
its own maximum, so that long sequences with small weights look like short ones): the
max-pooled map, its square root (weak structure next to a dominant [CLS] column), and the
square root of the mean-pooled map.

A padded batch is resized in one vectorised call: each example's index map points into its
own real tokens only, so padding never enters.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

INPUT_SIZE = 32
CHANNELS = 3


def _scaled(pooled: torch.Tensor) -> torch.Tensor:
    """Each (size, size) map divided by its maximum; shape is kept (..., size, size)."""
    return pooled / pooled.amax(dim=(-2, -1), keepdim=True).clamp(min=1e-12)


def normalise_padded(attentions: torch.Tensor, lengths: torch.Tensor, size: int = INPUT_SIZE) -> torch.Tensor:
    """Padded maps to CNN input, each cropped to its example's real tokens.

    ``attentions``: (batch, ..., seq, seq), e.g. (batch, layers, heads, seq, seq);
    ``lengths``: (batch,). Returns (batch * prod(...), 3, size, size), batch-major.
    """
    batch, seq = attentions.shape[0], attentions.shape[-1]
    maps = attentions.reshape(batch, -1, seq, seq).float()
    count = maps.shape[1]
    factor = -(-int(lengths.max()) // size)
    side = size * factor
    # source token of each of the `side` resampled positions, per example: (batch, side)
    index = (torch.arange(side, device=maps.device)[None, :] * lengths[:, None].double() / side).long()
    # pool rows, then columns (max and mean are separable), never building the side x side map
    rows = torch.gather(maps, 2, index[:, None, :, None].expand(batch, count, side, seq))
    rows = rows.view(batch, count, size, factor, seq)
    pooled = []
    for reduce_rows in (rows.amax(dim=3), rows.mean(dim=3)):
        columns = torch.gather(reduce_rows, 3, index[:, None, None, :].expand(batch, count, size, side))
        pooled.append(columns.view(batch * count, 1, size, size, factor))
    peak = _scaled(pooled[0].amax(dim=-1))
    mean = _scaled(pooled[1].mean(dim=-1))
    return torch.cat([peak, peak.sqrt(), mean.sqrt()], dim=1)


def normalise_list(maps: Sequence[np.ndarray | torch.Tensor], size: int = INPUT_SIZE) -> torch.Tensor:
    """Square maps of mixed sizes to CNN input (len(maps), 3, size, size), in input order.

    Maps of similar length are padded together and resized in one call.
    """
    for index, attention in enumerate(maps):
        if attention.ndim != 2 or attention.shape[0] != attention.shape[1] or attention.shape[0] < 2:
            raise ValueError(f"map {index} has shape {tuple(attention.shape)}; expected a square (n, n) map with n >= 2")
    out = torch.empty(len(maps), CHANNELS, size, size)
    by_factor: dict[int, list[int]] = {}
    for index, attention in enumerate(maps):
        by_factor.setdefault(-(-attention.shape[0] // size), []).append(index)
    for indices in by_factor.values():
        longest = max(maps[i].shape[0] for i in indices)
        padded = torch.zeros(len(indices), longest, longest)
        for row, i in enumerate(indices):
            n = maps[i].shape[0]
            padded[row, :n, :n] = torch.as_tensor(np.asarray(maps[i], dtype=np.float32))
        lengths = torch.tensor([maps[i].shape[0] for i in indices])
        out[indices] = normalise_padded(padded, lengths, size)
    return out
