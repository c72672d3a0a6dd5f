"""How results look, read from what analyses stored and never recomputed: each analysis's view
(one module per analysis, `base.View`: its metrics, figures, tables, overview rows, printed
lines, series over seeds and claims), what a whole summary says (`summary`), statistics over
seeds (`seeds`), the house style of every figure (`style`) and its font (`font`). Importing
this package registers every view in `VIEWS`, in the order below: the order in which the
README's overview table shows their rows. Nothing here imports torch, so the commands
that only draw or report start in a fraction of the time a run does.
"""

from pathlib import Path

from harness.views import evaluation  # isort: skip (first: the overview opens with the dev scores)
from harness.views import cosine, cosine_padded, clustering, patterns, surface, surface_text, sinks, vig  # isort: skip
from harness.views import dependency, coreference, probes, features, features_task, gradients  # isort: skip
from harness.views import ablation, examples  # isort: skip
from harness.views.base import VIEWS, View

VIEWS_FOLDER = Path(__file__).parent  # the code that draws: its files' hash decides when figures are redrawn

__all__ = ["VIEWS", "VIEWS_FOLDER", "View", "ablation", "clustering", "coreference", "cosine", "cosine_padded",
           "dependency", "evaluation", "examples", "features", "features_task", "gradients", "patterns", "probes",
           "sinks", "surface", "surface_text", "vig"]
