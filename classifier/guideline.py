"""The labelling guideline's measurable lines between neighbouring classes (docs/classifier.md).

A labeller first sees which structure a map shows; where it could be either of two
neighbouring classes, the line decides: measurements of `classifier.features` against
thresholds. The labelled maps are kept on the right side of every line (a test checks it),
and ``python -m classifier guideline`` draws, for each line, the labelled maps nearest to it
on both sides.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from classifier.annotate import draw_sheet, separator_ticks
from classifier.data import CLASSES, LabelledMap
from classifier.features import MapFeatures, map_features

EXAMPLES_PER_SIDE = 5


@dataclass(frozen=True)
class Condition:
    """``measure`` (a field of `MapFeatures`) at or above ``threshold``, or at or below it when not ``at_least``."""

    measure: str
    threshold: float
    at_least: bool = True

    def margin(self, features: MapFeatures) -> float:
        """How far the map is inside the condition (> = 0: it holds), relative to the threshold;
        a measure the map does not have (within segments of a single-segment input) never holds."""
        value = getattr(features, self.measure)
        if value is None:
            return -1.0
        return (value - self.threshold if self.at_least else self.threshold - value) / self.threshold

    def __str__(self) -> str:
        return f"{self.measure} {'>=' if self.at_least else '<='} {self.threshold:g}"


@dataclass(frozen=True)
class Line:
    """Maps of class ``below`` or ``above`` go to ``above`` when every condition holds."""

    below: str
    above: str
    conditions: tuple[Condition, ...]
    rule: str  # the line in words, as the guideline states it

    def margin(self, features: MapFeatures) -> float:
        """Signed distance to the line: >= 0 on the ``above`` side (the smallest condition margin)."""
        return min(condition.margin(features) for condition in self.conditions)

    def side(self, features: MapFeatures) -> str:
        """The class the line gives the map: ``above`` when every condition holds, else ``below``."""
        return self.above if self.margin(features) >= 0 else self.below

    @property
    def name(self) -> str:
        """``below_vs_above``, each ``+`` written ``_`` (it names the line's example sheet)."""
        return f"{self.below}_vs_{self.above}".replace("+", "_")

    def __str__(self) -> str:
        return " and ".join(map(str, self.conditions))


# In the order a labeller applies them (a map moved by one line is checked by the next).
LINES = (
    Line(
        "diagonal",
        "vertical+diagonal",
        (Condition("columns", 0.25),),
        "a map with a diagonal band is vertical+diagonal when a quarter or more of each row's attention "
        "(on average) goes to its three most attended columns off the band, else diagonal",
    ),
    # 2: where the lift agrees best with the eye's diagonal / heterogeneous labels of maps without columns (0.96,
    # 2.0 to 2.4; the band share alone 0.89 at best: a wide, fuzzy diagonal over 70 tokens keeps 0.11 of a row).
    # Rest peak 0.25: above every labelled diagonal (0.23 at most), so that rows pointing at random tokens, a few
    # of which fall in the band by chance, are not a band
    Line(
        "heterogeneous",
        "diagonal",
        (
            Condition("band_lift", 2.0),
            Condition("columns", 0.25, at_least=False),
            Condition("rest_peak", 0.25, at_least=False),
        ),
        "a map without columns (a quarter or less of each row's attention on its three most attended columns off "
        "the band) has a diagonal band, and is diagonal, when the band (the token and its two neighbours) gets "
        "twice or more the attention uniform rows would give it (about 3 / n of each row) and the rows do not "
        "point elsewhere (the strongest other token of a row gets a quarter or less on average), else heterogeneous",
    ),
    Line(
        "heterogeneous",
        "vertical",
        (Condition("columns", 0.25), Condition("rest_peak", 0.12, at_least=False)),
        "a map without a band or blocks is vertical when a quarter or more of each row's attention goes to its three "
        "most attended columns and no row points at one other token (the strongest other token of a row gets "
        "12% or less on average), else heterogeneous",
    ),
    # 0.64: where the size-fair measure agrees best with the first 625 labels given by eye (0.93; the plain
    # within-segment share agrees for 0.87 at its best, 0.66)
    Line(
        "heterogeneous",
        "block",
        (Condition("within_segments", 0.64), Condition("rest_peak", 0.15, at_least=False)),
        "a two-segment map is block when its spread attention (off the band and the columns) prefers the row's own "
        "segment, per token, by 0.64 or more (uniform attention 0.5, a pure block 1, whatever the sentences' "
        "lengths) and is spread, not pointed (the strongest other token of a row gets 15% or less on average), "
        "else heterogeneous",
    ),
)


def settled(label: str, features: MapFeatures) -> str:
    """The class the lines give a map labelled ``label``: moved by the first line it is on the
    wrong side of, again until no line moves it (a map moved by one line may cross the next;
    the lines form no cycle, so this ends within a move per class)."""
    for _ in CLASSES:
        sides = [line.side(features) for line in LINES if label in (line.below, line.above)]
        wrong = [side for side in sides if side != label]
        if not wrong:
            return label
        label = wrong[0]
    raise RuntimeError(f"the guideline's lines move a map in a cycle through {label}")


def misplaced(rows: list[LabelledMap], maps: dict[str, np.ndarray]) -> list[tuple[LabelledMap, str]]:
    """Labelled maps on the wrong side of a line, with the class the lines give (`settled`)."""
    found = []
    for row in rows:
        side = settled(row.label, map_features(maps[row.id], row.second_segment))
        if side != row.label:
            found.append((row, side))
    return found


def relabel(rows: list[LabelledMap], maps: dict[str, np.ndarray]) -> tuple[list[LabelledMap], int]:
    """The rows with every label moved to the class the lines give; and how many labels changed."""
    moves = dict((row.id, side) for row, side in misplaced(rows, maps))
    return [replace(row, label=moves.get(row.id, row.label)) for row in rows], len(moves)


def draw_examples(line: Line, rows: list[LabelledMap], maps: dict[str, np.ndarray], path: Path) -> Path:
    """The `EXAMPLES_PER_SIDE` labelled maps of each class nearest to the line, below then above."""
    measured = [
        (line.margin(map_features(maps[row.id], row.second_segment)), row)
        for row in rows
        if row.label in (line.below, line.above)
    ]
    below = sorted((item for item in measured if item[0] < 0), key=lambda item: -item[0])
    above = sorted((item for item in measured if item[0] >= 0), key=lambda item: item[0])
    chosen = [row for _, row in below[:EXAMPLES_PER_SIDE] + above[:EXAMPLES_PER_SIDE]]
    separators = {row.id: separator_ticks(row) for row in chosen}
    title = f"the labelled maps nearest the line: top row {line.below} (not {line}),\nbottom row {line.above} ({line})"
    return draw_sheet(chosen, maps, separators, path, title)
