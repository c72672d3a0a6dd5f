"""Analyses of attention: importing this package registers all of them in `ANALYSES`.

Adding one: subclass `Analysis` (see `harness.analyses.base`), decorate it with
`register_analysis`, and import its module here.
"""

from harness.analyses import (
                              ablation,
                              clustering,
                              coreference,
                              cosine,
                              cosine_padded,
                              dependency,
                              evaluation,
                              examples,
                              features,
                              features_task,
                              gradients,
                              patterns,
                              probes,
                              sinks,
                              surface,
                              surface_text,
                              vig,
)
from harness.analyses.base import ANALYSES, Analysis, AnalysisContext, register_analysis

__all__ = ["ANALYSES", "ablation", "Analysis", "AnalysisContext", "clustering", "coreference", "cosine", "cosine_padded",
           "dependency", "evaluation", "examples", "features", "features_task", "gradients", "patterns",
           "probes", "register_analysis", "sinks", "surface", "surface_text", "vig"]
