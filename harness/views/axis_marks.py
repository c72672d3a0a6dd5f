"""Where matplotlib puts an axis's marks, in inches, for the figures drawn without its axes
(`harness.views.head_grid`, `harness.views.colour_bar`): its default tick marks, 3.5 pt long and
0.8 pt wide, tick labels 3.5 pt from them, axis labels 4 pt further, titles 6 pt above."""

from __future__ import annotations

POINT = 1 / 72  # inches
TICK = 3.5 * POINT  # a tick mark's length, outside the frame
TICK_PAD = 3.5 * POINT  # between a tick mark and its label
LABEL_PAD = 4 * POINT  # between the tick labels and the axis label
TITLE_PAD = 6 * POINT  # between the frame and its title's baseline
LABEL_SIZE = 10  # points: matplotlib's axis labels
FRAME_WIDTH = 0.8  # points, as matplotlib's spines and ticks
