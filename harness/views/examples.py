"""The attention maps of a few dev examples, every layer and head, per checkpoint: what the
report's per-example view shows (`harness.present.report`), from stored results like every figure.

Nothing is drawn, tabled or logged from it here: the report embeds the stored maps as they are
(each weight in thousandths as two base-64 digits: `encode_maps`, read back as arrays by
`decode_maps`) with each example's most changed head, and its script draws them in the browser.
"""

from __future__ import annotations

from typing import TypedDict

import numpy as np

from harness.results.entries import Entry, PerCheckpoint
from harness.views.base import View, register_view

SCALE = 1000  # weights stored in thousandths
DIGITS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"  # base64url's alphabet
ENCODING = (
    "weights in thousandths, two base-64 digits each (A-Z a-z 0-9 - _, most significant first), "
    "layer-major, then head, row (attending token), column (attended token)"
)
CODES = np.frombuffer(DIGITS.encode(), dtype=np.uint8)
VALUES = np.zeros(256, dtype=np.int64)
VALUES[CODES] = np.arange(len(DIGITS))


def encode_maps(maps: np.ndarray) -> str:
    """(..., n, n) attention weights as `ENCODING`'s text (in float32, rounded half to even)."""
    values = np.rint(np.clip(np.asarray(maps, dtype=np.float32), 0, 1) * np.float32(SCALE)).astype(np.int64).ravel()
    return np.stack([CODES[values >> 6], CODES[values & 63]], axis=-1).tobytes().decode("ascii")


def decode_maps(text: str, layers: int, heads: int) -> np.ndarray:
    """`encode_maps`'s text back to (layers, heads, n, n) weights (to three decimals)."""
    digits = VALUES[np.frombuffer(text.encode("ascii"), dtype=np.uint8)].reshape(-1, 2)
    values = (digits[:, 0] << 6) + digits[:, 1]
    n = int(round((len(values) / (layers * heads)) ** 0.5))
    return values.reshape(layers, heads, n, n) / SCALE


def head_cosines(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """(layers, heads) cosine of two checkpoints' (layers, heads, n, n) maps, flattened per head."""
    a, b = first.reshape(*first.shape[:2], -1), second.reshape(*second.shape[:2], -1)
    norms = np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)
    return (a * b).sum(axis=-1) / np.maximum(norms, 1e-12)


class ExampleMaps(TypedDict):
    """One kept dev example: its identity, texts and label, its tokens, and its maps (encoded)."""

    guid: str
    split: str
    text_a: str
    text_b: str | None
    label: str | float
    tokens: list[str]
    maps: str


class ExamplesResult(TypedDict):
    """A checkpoint's stored examples: the model's shape, the token limit, how many candidates
    there were, and the examples kept."""

    num_layers: int
    num_heads: int
    max_tokens: int
    candidates: int
    examples: list[ExampleMaps]


class MostChangedHead(TypedDict):
    """The head (1-indexed) whose two maps of an example are least alike, and their cosine."""

    layer: int
    head: int
    cosine: float


class ExampleChange(TypedDict):
    """One example of a pair: each head's cosine between its two maps, and the most changed head."""

    guid: str
    cosine_per_head: list[list[float]]
    most_changed: MostChangedHead


class ExamplesComparison(TypedDict):
    """A pair's examples."""

    examples: list[ExampleChange]


ExamplesEntry = Entry[PerCheckpoint[ExamplesResult, ExamplesComparison]]


@register_view
class ExamplesView(View[PerCheckpoint[ExamplesResult, ExamplesComparison]]):
    name = "examples"
    order = 170
    along_by_default = True  # the report's slider shows each kept step's maps
    version = 2  # 2: GLUE from the hub names its examples by their TSV line, as the TSV loader does
    stored = ExamplesResult
    compared = ExamplesComparison
    per_head_keys = {"cosine_per_head": "cosine"}
