"""Attention maps of any size (2..512 tokens) and the input's segments to the CNN's fixed input.

A map of n >= 32 tokens is index-resampled to m = 32 * ceil(n / 32) (nearest neighbour, so
every token keeps at least one pixel) and pooled by m / 32 to 32 x 32 with *max* pooling,
which keeps a one-token diagonal or a single attended column visible whatever the length,
and with *mean* pooling, which keeps how broad the attention is. A shorter map is not
stretched (stretching would turn a one-token diagonal into a thick band): it keeps one pixel
per token in the top-left corner, the rest left empty. Channels (the attention ones each
divided by their own maximum, so that long sequences with small weights look like short
ones): the max-pooled map, its square root (weak structure next to a dominant [CLS] column),
the square root of the mean-pooled map, and the input's structure: 1 where both tokens are in
the same segment, 0.5 where they are in different segments of a sentence pair, 0 outside the
input; so the CNN sees how long the input is, whether it is a pair and where the boundary is.

Beside the image, the CNN takes the measurements of the map (`classifier.features`), since the
guideline's lines between neighbouring classes are drawn on them; the shipped classifier, boosted
trees (`classifier.trees`), takes the measurements alone. A padded batch is resized and
measured in one vectorised call: each example's index map points into its own real tokens
only, so padding never enters.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from classifier.features import MEASURES, NO_SECOND_SEGMENT, in_second_segment, measure_padded

INPUT_SIZE = 32
CHANNELS = 4
MAX_TOKENS = 512
INPUT_MEASURES = MEASURES + 2  # the map's measurements, whether the input is a pair, its log length
CROSS_SEGMENT = 0.5  # the structure channel between tokens of different segments (same segment: 1)


@dataclass(frozen=True)
class MapInputs:
    """The CNN's input for ``count`` maps: ``images`` (count, `CHANNELS`, 32, 32) and the
    ``measures`` (count, `INPUT_MEASURES`): the guideline's measurements (`classifier.features`),
    whether the input is a pair and its log length (over log 512)."""

    images: torch.Tensor
    measures: torch.Tensor

    def __len__(self) -> int:
        return len(self.images)

    def take(self, index: torch.Tensor | np.ndarray | slice) -> MapInputs:
        """The inputs of the maps at ``index``."""
        return MapInputs(self.images[index], self.measures[index])

    @staticmethod
    def cat(parts: Sequence[MapInputs]) -> MapInputs:
        """The inputs of ``parts``, concatenated in order."""
        return MapInputs(torch.cat([part.images for part in parts]), torch.cat([part.measures for part in parts]))


def _scaled(pooled: torch.Tensor) -> torch.Tensor:
    """Each (size, size) map divided by its maximum; shape is kept (..., size, size)."""
    return pooled / pooled.amax(dim=(-2, -1), keepdim=True).clamp(min=1e-12)


def source_tokens(lengths: torch.Tensor, side: int, size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The token behind each of ``side`` resampled positions, per example, and whether it is real:
    (batch, side) int64 and bool. Inputs of ``size`` tokens or more are spread over all
    positions; shorter ones take ``side / size`` positions per token from the start."""
    spread = lengths.clamp(min=size)[:, None].double()
    tokens = (torch.arange(side, device=lengths.device)[None, :] * spread / side).long()
    real = tokens < lengths[:, None]
    return tokens.clamp(max=int(lengths.max()) - 1) * real, real


def structure_channel(
    tokens: torch.Tensor, real: torch.Tensor, second_segments: torch.Tensor, factor: int
) -> torch.Tensor:
    """(batch, 1, size, size): 1 same segment, `CROSS_SEGMENT` across the pair's boundary, 0 outside
    the input; from each pixel's first source token (``tokens``, ``real``: (batch, side))."""
    tokens, real = tokens[:, ::factor], real[:, ::factor]
    segment = in_second_segment(tokens, second_segments)
    same = segment[:, :, None] == segment[:, None, :]
    inside = real[:, :, None] & real[:, None, :]
    return (inside * torch.where(same, 1.0, CROSS_SEGMENT))[:, None].float()


def measured_inputs(
    attentions: torch.Tensor,
    lengths: torch.Tensor,
    second_segments: torch.Tensor,
    row_entropy: torch.Tensor | None = None,
) -> torch.Tensor:
    """The measurements of padded maps (`classifier.features`), whether each input is a pair and
    its log length (over log 512): arguments as `normalise_padded`; -> (count, `INPUT_MEASURES`)."""
    batch = attentions.shape[0]
    count = attentions[0, ..., 0, 0].numel()
    lengths, second_segments = lengths.to(attentions.device), second_segments.to(attentions.device)
    described = torch.stack(
        [(second_segments != NO_SECOND_SEGMENT).float(), lengths.float().log() / math.log(MAX_TOKENS)], dim=-1
    )  # (batch, 2)
    described = described[:, None].expand(batch, count, 2).reshape(batch * count, 2)
    return torch.cat([measure_padded(attentions.float(), lengths, second_segments, row_entropy), described], dim=1)


def normalise_padded(
    attentions: torch.Tensor,
    lengths: torch.Tensor,
    second_segments: torch.Tensor,
    size: int = INPUT_SIZE,
    images: bool = True,
    row_entropy: torch.Tensor | None = None,
) -> MapInputs:
    """Padded maps to the classifier's input, each cropped to its example's real tokens.

    ``attentions``: (batch, ..., seq, seq), e.g. (batch, layers, heads, seq, seq);
    ``lengths``: (batch,); ``second_segments``: (batch,) first token of the second segment,
    `NO_SECOND_SEGMENT` for single-segment inputs. Returns the inputs of batch * prod(...)
    maps, batch-major; without ``images`` (a classifier on the measurements alone) the images
    are (count, 0) placeholders and the maps are only measured; ``row_entropy``: as
    `classifier.features.measure_padded`.
    """
    measured = measured_inputs(attentions, lengths, second_segments, row_entropy)
    if not images:
        return MapInputs(measured.new_empty(len(measured), 0), measured)
    batch, seq = attentions.shape[0], attentions.shape[-1]
    maps = attentions.reshape(batch, -1, seq, seq).float()
    count = maps.shape[1]
    lengths, second_segments = lengths.to(maps.device), second_segments.to(maps.device)
    factor = -(-int(lengths.max()) // size)
    side = size * factor
    tokens, real = source_tokens(lengths, side, size)
    weight = real.float()
    # pool rows, then columns (max and mean are separable), never building the side x side map
    rows = torch.gather(maps, 2, tokens[:, None, :, None].expand(batch, count, side, seq)) * weight[:, None, :, None]
    rows = rows.view(batch, count, size, factor, seq)
    pooled = []
    for reduce_rows in (rows.amax(dim=3), rows.mean(dim=3)):
        columns = torch.gather(reduce_rows, 3, tokens[:, None, None, :].expand(batch, count, size, side))
        columns = columns * weight[:, None, None, :]
        pooled.append(columns.view(batch * count, 1, size, size, factor))
    peak = _scaled(pooled[0].amax(dim=-1))
    mean = _scaled(pooled[1].mean(dim=-1))
    structure = structure_channel(tokens, real, second_segments, factor)
    structure = structure[:, None].expand(batch, count, 1, size, size).reshape(batch * count, 1, size, size)
    return MapInputs(torch.cat([peak, peak.sqrt(), mean.sqrt(), structure], dim=1), measured)


def normalise_list(
    maps: Sequence[np.ndarray | torch.Tensor],
    second_segments: Sequence[int] | None = None,
    size: int = INPUT_SIZE,
    images: bool = True,
) -> MapInputs:
    """Square maps of mixed sizes to the classifier's input (``images`` as `normalise_padded`), in input order.

    ``second_segments``: where each map's second segment starts (`NO_SECOND_SEGMENT`, the
    default, for single-segment inputs). Maps of similar length are padded together and
    resized in one call.
    """
    for index, attention in enumerate(maps):
        if attention.ndim != 2 or attention.shape[0] != attention.shape[1] or attention.shape[0] < 2:
            raise ValueError(
                f"map {index} has shape {tuple(attention.shape)}; expected a square (n, n) map with n >= 2"
            )
    segments = torch.tensor(list(second_segments) if second_segments is not None else [NO_SECOND_SEGMENT] * len(maps))
    out = MapInputs(
        torch.empty(len(maps), CHANNELS if images else 0, *((size, size) if images else ())),
        torch.empty(len(maps), INPUT_MEASURES),
    )
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
        group = normalise_padded(padded, lengths, segments[indices], size, images)
        out.images[indices], out.measures[indices] = group.images, group.measures
    return out
