"""How results look, read from what analyses stored and never recomputed: each analysis's view
(one module per analysis, `base.View`: its metrics, figures, tables, overview rows, printed
lines, series over seeds and claims), what a whole summary says (`summary`), statistics over
seeds (`seeds`), the house style of every figure (`palette`, `titles`, `tokens`, `drawing`, `saving`
(which checks each by `figure_checks`), `markdown` for tables) and its font (`font`). Importing
this package imports every module of it but the `DRAWING` ones (and the modules of the extensions
named under the entry-point group ``harness.views``: `harness.registry.discover`), which registers
every view in `VIEWS`, sorted by the views' ``order``: the order in which the README's overview
table shows their rows. Nothing here imports torch, and nothing imported with the package imports
matplotlib or scipy (`lazy`): the commands that analyses import it to build their flags, which
declare the analyses' own settings, and the commands that only draw or report start in a fraction
of the time a run does.
"""

from pathlib import Path

from harness.registry import discover
from harness.views.base import VIEWS, View

VIEWS_FOLDER = Path(__file__).parent  # the code that draws: its files' hash decides when figures are redrawn
# The modules that import matplotlib as they load: what a figure's drawing needs (`lazy` imports them then).
DRAWING = ("canvas", "colour_bar", "figure_checks", "font", "head_grid", "text_layout")


def discover_views() -> None:
    """Register the views of this package and of the installed extensions, in their ``order``."""
    discover(__name__, VIEWS, order=lambda view: view.order, leave_out=DRAWING)


discover_views()

__all__ = ["DRAWING", "VIEWS", "VIEWS_FOLDER", "View", "discover_views"]
