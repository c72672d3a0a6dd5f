"""Analyses of attention: importing this package registers all of them in `ANALYSES`."""

from harness.analyses import cosine  # noqa: F401  (registers)
from harness.analyses import coreference  # noqa: F401  (registers)
from harness.analyses import dependency  # noqa: F401  (registers)
from harness.analyses import features  # noqa: F401  (registers)
from harness.analyses import probes  # noqa: F401  (registers)
from harness.analyses import gradients  # noqa: F401  (registers)
from harness.analyses import clustering  # noqa: F401  (registers)
from harness.analyses import surface  # noqa: F401  (registers)
from harness.analyses import patterns  # noqa: F401  (registers)
from harness.analyses.base import ANALYSES, Analysis, AnalysisContext, register_analysis

__all__ = ["ANALYSES", "Analysis", "AnalysisContext", "register_analysis"]
