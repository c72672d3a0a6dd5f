"""The measurable quantities behind the labelling guideline (docs/classifier.md).

Each is a mean over the map's rows (every row is a distribution over the n real tokens), so
it reads as "the share of a row's attention that goes to ...", whatever the map's length:

- ``band``: the token itself and its two neighbours (offsets -1, 0, +1): diagonal patterns;
- ``band_lift``: ``band`` over the share uniform attention would give the band ((3n - 2) / n**2,
  about 3 / n): how many times more than chance the band gets, 1 for uniform rows, about n / 3
  for a pure diagonal. The guideline's "has a diagonal band" line is drawn on it because a
  share alone depends on the length: a band of 0.11 is a clear diagonal over 70 tokens (2.5
  times chance) and diffuse attention over 16 (0.6 times);
- ``columns``: the three columns that receive the most attention *outside* that band: vertical
  patterns ([CLS], [SEP], punctuation, or any token every row looks at). The band is left out
  so that a pure diagonal of a short input does not count as columns;
- ``rest``: what is left outside the band and the columns (the mass a block or a diffuse map
  spreads out);
- ``rest_peak``: the single token outside the band and the columns that the row attends to
  most, its weight: high when the rows point at particular other tokens (an alignment between
  the segments, a head that looks at the verb), low when the rest is spread thin;
- ``within_segments``: how much the rest prefers the row's own segment, per token (two-segment
  inputs only; [CLS] and the first [SEP] belong to the first segment): block patterns. Each
  row's attention per token inside its own segment, as a share of that and its attention per
  token in the other segment, averaged over rows weighted by their rest. Per token, so that
  the sizes of the segments do not count: uniform attention gives about half however unequal
  they are (a little under: the band and columns taken out lie mostly inside the row's own
  segment; 0.42 at 20 tokens, 0.47 at 60), and a pure block 1. For two equal segments this is
  the plain share of the rest inside the row's segment; a share alone would call an RTE
  premise of 110 tokens and a hypothesis of 12 a block at uniform attention (0.84).

Finer measurements, which the guideline does not draw lines on but the classifier's trees use
(their boundaries are learnt from the labels): the band split into ``own`` (the token itself),
``previous`` and ``following``; ``first_column`` (the share on [CLS]); ``entropy`` (of each row,
over log n, 1 for uniform rows); ``row_peak`` (each row's largest weight); ``peaks_in_band``
and ``peaks_on_columns`` (the share of rows whose most attended token is in the band, or is one
of the top columns); ``same_segment`` (as ``within_segments``, of all a row's attention, pairs only).

`measure_padded` computes them for padded batches on the maps' device (the pattern CNN takes
them beside the image, since the guideline's lines are drawn on them); `map_features` for one map.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import numpy as np
import torch

NO_SECOND_SEGMENT = -1
TOP_COLUMNS = 3
BAND_OFFSET = 1


@dataclass(frozen=True)
class MapFeatures:
    """The guideline's measurements of one map (each a share of a row's attention, 0..1, but ``band_lift``)."""

    band: float
    band_lift: float  # a ratio to uniform attention, not a share
    columns: float
    rest: float
    rest_peak: float
    within_segments: float | None  # None for a single-segment input
    own: float
    previous: float
    following: float
    first_column: float
    entropy: float
    row_peak: float
    peaks_in_band: float
    peaks_on_columns: float
    same_segment: float | None  # None for a single-segment input


MEASURES = len(fields(MapFeatures))


def in_second_segment(tokens: torch.Tensor, second_segments: torch.Tensor) -> torch.Tensor:
    """Whether each of (batch, k) (or broadcastable (1, k)) ``tokens`` is in its input's second
    segment, given (batch,) ``second_segments`` (`NO_SECOND_SEGMENT`: none) -> (batch, k) bool."""
    return (second_segments[:, None] != NO_SECOND_SEGMENT) & (tokens >= second_segments[:, None])


def measure_padded(
    attentions: torch.Tensor,
    lengths: torch.Tensor,
    second_segments: torch.Tensor,
    row_entropy: torch.Tensor | None = None,
) -> torch.Tensor:
    """The `MapFeatures` of padded maps as rows of numbers, in the field order.

    ``attentions``: (batch, ..., seq, seq); ``lengths``, ``second_segments``: (batch,)
    (`NO_SECOND_SEGMENT` for single-segment inputs, whose ``within_segments`` is 1: all
    their spread attention stays in their one segment, and ``same_segment`` 1). Returns
    (batch * prod(...), `MEASURES`) in the maps' dtype (pass float64 for exact single-map
    values). ``row_entropy``: (batch, ..., seq) each row's entropy where the caller has it
    already (the same values; padding rows are masked here). Two map-sized temporaries (the
    masked maps, their entropy terms unless ``row_entropy`` is given): the band and the
    column shares come from diagonals and column sums.
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
    peaks = maps.argmax(dim=-1)  # (batch, maps, seq); a padding row's peak is counted out below
    real_rows = real[:, None, :].to(maps.dtype)
    peaks_in_band = (((peaks - positions).abs() <= BAND_OFFSET) * real_rows).sum(dim=-1)
    peaks_on_columns = (on_columns.gather(-1, peaks) * real_rows).sum(dim=-1)
    row_peak = maps.amax(dim=-1).sum(dim=-1)
    n = lengths[:, None].to(maps.dtype)
    if row_entropy is None:
        rows_entropy = torch.special.entr(maps).sum(dim=-1)
    else:  # computed by the caller on the unmasked maps: padding rows out (where, not *: they may hold anything)
        rows_entropy = torch.where(real[:, None, :], row_entropy.reshape(batch, -1, seq).to(maps.dtype), 0)
    entropy = rows_entropy.sum(dim=-1) / n.clamp(min=2).log()
    first = ~in_second_segment(positions[None, :], second_segments)
    first_weights = first[:, None, :, None].to(maps.dtype)
    segments = _SegmentSizes(first, lengths, second_segments, maps.dtype)
    # one segment: all of it stays there (n / n = 1)
    same_segment = torch.where(segments.pair[:, None], segments.preference(maps, maps @ first_weights), n)
    finer = [
        on_diagonal.sum(dim=-1),
        below.sum(dim=-1),
        above.sum(dim=-1),
        maps[..., 0].sum(dim=-1),
        entropy,
        row_peak,
        peaks_in_band,
        peaks_on_columns,
        same_segment,
    ]
    rest = maps.masked_fill_(in_band | on_columns[:, :, None, :], 0)
    rest_per_row = rest.sum(dim=-1)  # (batch, maps, seq)
    spread = rest_per_row.sum(dim=-1)
    same = segments.preference(rest, rest @ first_weights)
    within = torch.where(segments.pair[:, None] & (spread > 0), same / spread.clamp(min=1e-30), 1)
    band_lift = band / (3 * n - 2) * n  # the mean band share over uniform's, (3n - 2) / n**2
    measures = torch.stack(
        [
            band / n,
            band_lift,
            columns / n,
            spread / n,
            rest.amax(dim=-1).sum(dim=-1) / n,
            within,
            *(value / n for value in finer),
        ],
        dim=-1,
    )
    return measures.reshape(-1, MEASURES)


class _SegmentSizes:
    """The two segments of each input of a batch, to weigh a row's attention per token of a segment."""

    def __init__(
        self, first: torch.Tensor, lengths: torch.Tensor, second_segments: torch.Tensor, dtype: torch.dtype
    ) -> None:
        """``first``: (batch, seq) whether a token is in the first segment; ``lengths``,
        ``second_segments``: (batch,)."""
        self.first = first
        self.pair = second_segments != NO_SECOND_SEGMENT
        first_size = torch.where(self.pair, second_segments, lengths).to(dtype)
        self.own_size = torch.where(first, first_size[:, None], (lengths - first_size)[:, None])[
            :, None
        ]  # (batch, 1, seq)
        self.other_size = lengths[:, None, None].to(dtype) - self.own_size

    def preference(self, maps: torch.Tensor, on_first: torch.Tensor) -> torch.Tensor:
        """Each row's preference for its own segment per token, weighted by the row's mass and
        summed over rows: ``maps`` (batch, maps, seq, seq), ``on_first`` (batch, maps, seq, 1)
        each row's mass on first-segment columns. -> (batch, maps); meaningless for one segment.

        A row with ``own`` of its mass on its own segment's tokens and ``other`` on the rest
        prefers its own by (own / own size) / (own / own size + other / other size)."""
        on_first, total = on_first[..., 0], maps.sum(dim=-1)
        own = torch.where(self.first[:, None], on_first, total - on_first)
        own_weighted = own * self.other_size
        weighted = own_weighted + (total - own) * self.own_size
        preference = torch.where(weighted > 0, own_weighted / weighted.clamp(min=1e-30), 0.5)
        return (total * preference).sum(dim=-1)


def map_features(attention: np.ndarray, second_segment: int = NO_SECOND_SEGMENT) -> MapFeatures:
    """The guideline's measurements of an (n, n) map whose second segment starts at token
    ``second_segment`` (`NO_SECOND_SEGMENT` for a single-segment input)."""
    weights = torch.as_tensor(np.asarray(attention, dtype=np.float64))
    values = measure_padded(weights[None], torch.tensor([len(weights)]), torch.tensor([second_segment]))[0]
    pair = second_segment != NO_SECOND_SEGMENT
    features = MapFeatures(*values.tolist())
    return features if pair else replace(features, within_segments=None, same_segment=None)
