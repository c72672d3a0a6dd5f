"""The labelling guideline's measurable lines between neighbouring classes (docs/classifier.md).

A labeller first sees which structure a map shows; where it could be either of two
neighbouring classes, the line decides: a measurement of `classifier.features` against a
threshold. The labelled maps are kept on the right side of every line (a test checks it),
and ``python -m classifier guideline`` draws, for each line, the labelled maps nearest to it
on both sides.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from classifier.annotate import draw_sheet
from classifier.data import LabelledMap
from classifier.features import MapFeatures, map_features

EXAMPLES_PER_SIDE = 5


@dataclass(frozen=True)
class Line:
    """Maps of class ``below`` or ``above`` go to ``above`` when ``measure`` >= ``threshold``."""

    below: str
    above: str
    measure: str  # a field of `MapFeatures`
    threshold: float
    rule: str  # the line in words, as the guideline states it

    def side(self, features: MapFeatures) -> str:
        return self.above if getattr(features, self.measure) >= self.threshold else self.below

    @property
    def name(self) -> str:
        return f"{self.below}_vs_{self.above}".replace("+", "_")


LINES = (
    Line("diagonal", "vertical+diagonal", "columns", 0.25,
         "a map with a diagonal band is vertical+diagonal when a quarter or more of each row's attention "
         "(on average) goes to its three most attended columns off the band, else diagonal"),
)


def misplaced(rows: list[LabelledMap], maps: dict[str, np.ndarray]) -> list[tuple[LabelledMap, str]]:
    """Labelled maps of a line's two classes on the wrong side of it, with the class the line gives."""
    found = []
    for line in LINES:
        for row in rows:
            if row.label in (line.below, line.above):
                side = line.side(map_features(maps[row.id], row.second_segment))
                if side != row.label:
                    found.append((row, side))
    return found


def draw_examples(line: Line, rows: list[LabelledMap], maps: dict[str, np.ndarray], path: Path) -> Path:
    """The `EXAMPLES_PER_SIDE` labelled maps of each class nearest to the line, below then above."""
    measured = [(getattr(map_features(maps[row.id], row.second_segment), line.measure), row)
                for row in rows if row.label in (line.below, line.above)]
    below = sorted((item for item in measured if item[0] < line.threshold), key=lambda item: -item[0])
    above = sorted((item for item in measured if item[0] >= line.threshold), key=lambda item: item[0])
    chosen = [row for _, row in below[:EXAMPLES_PER_SIDE] + above[:EXAMPLES_PER_SIDE]]
    separators = {row.id: [row.second_segment - 1] if row.second_segment > 0 else [] for row in chosen}
    title = (f"{line.measure} < {line.threshold:g}: {line.below} (top row); "
             f">= {line.threshold:g}: {line.above} (bottom row); the labelled maps nearest the line")
    return draw_sheet(chosen, maps, separators, path, title)
