"""The measurable quantities behind the labelling guideline (docs/classifier.md).

Each is a mean over the map's rows (every row is a distribution over the n real tokens), so
it reads as "the share of a row's attention that goes to ...", whatever the map's length:

- ``band``: the token itself and its two neighbours (offsets -1, 0, +1): diagonal patterns;
- ``columns``: the three columns that receive the most attention *outside* that band: vertical
  patterns ([CLS], [SEP], punctuation, or any token every row looks at). The band is left out
  so that a pure diagonal of a short input does not count as columns;
- ``rest``: what is left outside the band and the columns (the mass a block or a diffuse map
  spreads out);
- ``rest_peak``: the single token outside the band and the columns that the row attends to
  most, its weight: high when the rows point at particular other tokens (an alignment between
  the segments, a head that looks at the verb), low when the rest is spread thin;
- ``within_segments``: of the rest, the share that stays inside the row's own segment
  (two-segment inputs only; [CLS] and the first [SEP] belong to the first segment): block
  patterns. Uniform attention over two equal segments gives a little under half (0.42 at 20
  tokens, 0.47 at 60).

`measure_padded` computes them for padded batches on the maps' device (the pattern CNN takes
them beside the image, since the guideline's lines are drawn on them); `map_features` for one map.
"""

from __future__ import annotations

from dataclasses import astuple, dataclass

import numpy as np
import torch

NO_SECOND_SEGMENT = -1
TOP_COLUMNS = 3
BAND_OFFSET = 1


@dataclass(frozen=True)
class MapFeatures:
    """The guideline's measurements of one map (each a share of a row's attention, 0..1)."""

    band: float
    columns: float
    rest: float
    rest_peak: float
    within_segments: float | None  # None for a single-segment input


MEASURES = len(astuple(MapFeatures(0, 0, 0, 0, 0)))


def measure_padded(attentions: torch.Tensor, lengths: torch.Tensor, second_segments: torch.Tensor) -> torch.Tensor:
    """The `MapFeatures` of padded maps as rows of numbers, in the field order.

    ``attentions``: (batch, ..., seq, seq); ``lengths``, ``second_segments``: (batch,)
    (`NO_SECOND_SEGMENT` for single-segment inputs, whose ``within_segments`` is 1: all
    their spread attention stays in their one segment). Returns (batch * prod(...), 5) in
    the maps' dtype (pass float64 for exact single-map values). One map-sized temporary:
    the band and the column shares come from diagonals and column sums.
    """
    batch, seq = attentions.shape[0], attentions.shape[-1]
    positions = torch.arange(seq, device=attentions.device)
    lengths, second_segments = lengths.to(attentions.device), second_segments.to(attentions.device)
    real = positions[None, :] < lengths[:, None]  # (batch, seq)
    # padding rows hold whatever the model wrote there; padding columns get no attention
    maps = attentions.reshape(batch, -1, seq, seq) * real[:, None, :, None]
    on_diagonal, above, below = (maps.diagonal(offset, dim1=-2, dim2=-1) for offset in (0, 1, -1))
    zero = on_diagonal.new_zeros(on_diagonal.shape[:-1] + (1,))
    band_per_column = on_diagonal + torch.cat([zero, above], dim=-1) + torch.cat([below, zero], dim=-1)
    column_mass = (maps.sum(dim=-2) - band_per_column).masked_fill(~real[:, None], -1)  # padding is never a column
    top = column_mass.topk(min(TOP_COLUMNS, seq), dim=-1).indices
    on_columns = torch.zeros_like(column_mass, dtype=torch.bool).scatter(-1, top, True)
    band = band_per_column.sum(dim=-1)
    columns = column_mass.gather(-1, top).clamp(min=0).sum(dim=-1)
    in_band = (positions[:, None] - positions[None, :]).abs() <= BAND_OFFSET
    rest = maps.masked_fill_(in_band | on_columns[:, :, None, :], 0)
    rest_per_row = rest.sum(dim=-1)  # (batch, maps, seq)
    spread = rest_per_row.sum(dim=-1)
    first = ~((second_segments[:, None] != NO_SECOND_SEGMENT) & (positions[None, :] >= second_segments[:, None]))
    on_first = (rest @ first[:, None, :, None].to(rest.dtype))[..., 0]  # each row's rest on first-segment columns
    same = torch.where(first[:, None], on_first, rest_per_row - on_first).sum(dim=-1)
    within = torch.where(spread > 0, same / spread.clamp(min=1e-30), 1)
    n = lengths[:, None].to(maps.dtype)
    measures = torch.stack([band / n, columns / n, spread / n, rest.amax(dim=-1).sum(dim=-1) / n, within], dim=-1)
    return measures.reshape(-1, MEASURES)


def map_features(attention: np.ndarray, second_segment: int = NO_SECOND_SEGMENT) -> MapFeatures:
    """The guideline's measurements of an (n, n) map whose second segment starts at token
    ``second_segment`` (`NO_SECOND_SEGMENT` for a single-segment input)."""
    attention = torch.as_tensor(np.asarray(attention, dtype=np.float64))
    values = measure_padded(attention[None], torch.tensor([len(attention)]), torch.tensor([second_segment]))[0]
    band, columns, rest, rest_peak, within = values.tolist()
    return MapFeatures(band, columns, rest, rest_peak, within if second_segment != NO_SECOND_SEGMENT else None)
