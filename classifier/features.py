"""The measurable quantities behind the labelling guideline (docs/classifier.md).

Each is a mean over the map's rows (every row is a distribution over the n real tokens), so
it reads as "the share of a row's attention that goes to ...", whatever the map's length:

- ``band``: the token itself and its two neighbours (offsets -1, 0, +1): diagonal patterns;
- ``columns``: the three columns that receive the most attention *outside* that band: vertical
  patterns ([CLS], [SEP], punctuation, or any token every row looks at). The band is left out
  so that a pure diagonal of a short input does not count as columns;
- ``within_segments``: of the attention that is neither on the band nor on those columns, the
  share that stays inside the row's own segment (two-segment inputs only; [CLS] and the first
  [SEP] belong to the first segment): block patterns. Uniform attention over two equal
  segments gives a little under half (0.42 at 20 tokens, 0.47 at 60).
- ``rest``: what is left outside the band and the columns (the mass a block or a diffuse map
  spreads out).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

NO_SECOND_SEGMENT = -1
TOP_COLUMNS = 3
BAND_OFFSET = 1


@dataclass(frozen=True)
class MapFeatures:
    """The guideline's measurements of one map (each a share of a row's attention, 0..1)."""

    band: float
    columns: float
    rest: float
    within_segments: float | None  # None for a single-segment input


def segment_ids(length: int, second_segment: int) -> np.ndarray:
    """(length,) 0 for the first segment, 1 for the second (all 0 without one)."""
    ids = np.zeros(length, dtype=np.int64)
    if second_segment != NO_SECOND_SEGMENT:
        ids[second_segment:] = 1
    return ids


def map_features(attention: np.ndarray, second_segment: int = NO_SECOND_SEGMENT) -> MapFeatures:
    """The guideline's measurements of an (n, n) map whose second segment starts at token
    ``second_segment`` (`NO_SECOND_SEGMENT` for a single-segment input)."""
    attention = np.asarray(attention, dtype=np.float64)
    n = len(attention)
    positions = np.arange(n)
    in_band = np.abs(positions[:, None] - positions[None, :]) <= BAND_OFFSET
    off_band = np.where(in_band, 0.0, attention)
    top = np.argsort(off_band.sum(axis=0), kind="stable")[-TOP_COLUMNS:]
    on_columns = np.zeros(n, dtype=bool)
    on_columns[top] = True
    rest = np.where(on_columns[None, :], 0.0, off_band)
    within = None
    if second_segment != NO_SECOND_SEGMENT:
        segments = segment_ids(n, second_segment)
        same = segments[:, None] == segments[None, :]
        spread = rest.sum()
        within = float(rest[same].sum() / spread) if spread > 0 else 1.0
    return MapFeatures(band=float(attention[in_band].sum() / n), columns=float(off_band[:, on_columns].sum() / n),
                       rest=float(rest.sum() / n), within_segments=within)
