"""The attention maps of a few dev examples, every layer and head, per checkpoint: what the
report's per-example view shows (`harness.present.report`), from stored results like every figure.

Nothing is drawn, tabled or logged from it here: the report embeds the stored maps as they are
(each weight in thousandths as two base-64 digits) with each example's most changed head,
and its script draws them in the browser.
"""

from __future__ import annotations

from typing import TypedDict

from harness.views.base import View, register_view


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


@register_view
class ExamplesView(View):
    name = "examples"
    order = 170
    version = 2  # 2: GLUE from the hub names its examples by their TSV line, as the TSV loader does
    stored = ExamplesResult
    compared = ExamplesComparison
