"""matplotlib set up for the house's figures, once, where the first figure is drawn (through
`harness.views.lazy`'s ``plt`` and ``mpl``; no module of the views imports it as it loads): headless,
TrueType fonts in a PDF and text as text in an SVG, the lean DejaVu Sans (`harness.views.font`) and
Okabe & Ito's palette as the colour cycle (`harness.views.palette`).
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # headless: figures go to files
import matplotlib.pyplot as plt
from cycler import cycler

from harness.views.font import use_lean_font
from harness.views.palette import OKABE_ITO

matplotlib.rcParams["pdf.fonttype"] = 42  # TrueType (Type 42) fonts, not Type 3: editable text, as journals ask
matplotlib.rcParams["svg.fonttype"] = "none"  # text as text, editable in a vector editor
matplotlib.rcParams["axes.prop_cycle"] = cycler(color=list(OKABE_ITO.values()))
use_lean_font()

__all__ = ["matplotlib", "plt"]
