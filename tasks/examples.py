"""The example type every task loader yields."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Example:
    """One GLUE example: one or two texts, a label (class index, or a float for STS-B) and the
    split it was read from ("dev", "dev_matched", ...; the dev metrics are per split)."""

    guid: str
    text_a: str
    text_b: str | None
    label: int | float
    split: str = ""
