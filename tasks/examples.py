"""The example type every task loader yields."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Example:
    """One example: one or two texts, a label (class index, or a float for STS-B) and the split it
    was read from ("dev", "dev_matched", ...; the dev metrics are per split). A tagging task's
    example is a sentence: its ``words`` (``text_a`` is them joined by spaces) and each word's
    tag as a class index (``tags``); its ``label`` is unused."""

    guid: str
    text_a: str
    text_b: str | None
    label: int | float
    split: str = ""
    words: tuple[str, ...] = ()
    tags: tuple[int, ...] = ()
