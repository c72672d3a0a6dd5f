"""The figures' colours: Okabe & Ito's colour-blind-safe palette (the colour cycle of the house's
figures, `harness.views.canvas`), the safe colour maps, each checkpoint's colour, and what counts
as a safe colour (a palette colour, a colour of a safe map, or a grey) for the figure checks
(`harness.views.figure_checks`).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING, cast

import numpy as np

from harness.views.lazy import mpl

if TYPE_CHECKING:
    from matplotlib.colors import Colormap
    from matplotlib.typing import ColorType

# Okabe & Ito's palette: told apart with every common colour-vision deficiency and in greyscale
# print by lightness. Lines and bars take these (and greys); images take the colour maps below.
OKABE_ITO = {
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "green": "#009E73",
    "orange": "#E69F00",
    "purple": "#CC79A7",
    "sky": "#56B4E9",
    "yellow": "#F0E442",
    "black": "#000000",
}
GREY = "#999999"
# Perceptually uniform (viridis, magma, cividis) or colour-blind-safe diverging (ColorBrewer RdBu, PuOr).
SAFE_COLOUR_MAPS = {"viridis", "magma", "cividis", "RdBu", "RdBu_r", "PuOr", "PuOr_r"}
DIFFERENCE_MAP = "RdBu_r"  # fine-tuned minus pre-trained: red where attention grew, blue where it fell
# A checkpoint has one colour in every figure: pre-trained blue, fine-tuned vermillion.
CHECKPOINT_COLOURS = {"pretrained": OKABE_ITO["blue"], "finetuned": OKABE_ITO["vermillion"]}


def checkpoint_colour(name: str, index: int) -> str:
    """The colour of a checkpoint (``index``: its place among the run's checkpoints, for names
    beyond the two usual ones)."""
    others = [colour for colour in OKABE_ITO.values() if colour not in CHECKPOINT_COLOURS.values()]
    return CHECKPOINT_COLOURS.get(name, others[index % len(others)])


@cache
def safe_colours() -> np.ndarray:
    """(colours, 3) RGB: the palette and 256 steps of every safe colour map (a line may take its
    colour from a map, as the layers of the MDS figure do)."""
    steps = np.linspace(0, 1, 256)
    return np.concatenate(
        [
            np.array([mpl.colors.to_rgb(c) for c in OKABE_ITO.values()]),
            *(mpl.colormaps[name](steps)[:, :3] for name in sorted(SAFE_COLOUR_MAPS)),
        ]
    )


def safe_colour(rgb: tuple[float, float, float]) -> bool:
    """A palette colour, a colour of a safe colour map or a grey (black and white included)."""
    return max(rgb) - min(rgb) < 0.02 or bool((np.abs(safe_colours() - np.asarray(rgb)).max(axis=1) < 0.02).any())


def safe_colour_map(colour_map: Colormap) -> bool:
    """A named safe map, or a listed map of palette colours (the pattern classes)."""
    if isinstance(colour_map, mpl.colors.ListedColormap) and colour_map.name not in SAFE_COLOUR_MAPS:
        # matplotlib types a listed map's colours as any array-like; a listed map holds a sequence of colours
        return all(safe_colour(mpl.colors.to_rgb(colour)) for colour in cast("Sequence[ColorType]", colour_map.colors))
    return colour_map.name in SAFE_COLOUR_MAPS
