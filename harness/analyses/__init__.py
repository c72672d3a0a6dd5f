"""Analyses of attention: importing this package registers every one in `ANALYSES`, in their
views' ``order`` (the order in which a run lists them).

Adding one is one module here (or in a package of its own, named under the entry-point group
``harness.analyses``: `harness.registry.discover`): a subclass of `Analysis` (see
`harness.analyses.base`) decorated with `register_analysis`, and its view (`harness.views`).
"""

from harness.analyses.base import ANALYSES, Analysis, AnalysisContext, register_analysis
from harness.registry import discover


def discover_analyses() -> None:
    """Register the analyses of this package and of the installed extensions, in their views' order."""
    discover(__name__, ANALYSES, order=lambda analysis: analysis.view.order)


discover_analyses()

__all__ = ["ANALYSES", "Analysis", "AnalysisContext", "discover_analyses", "register_analysis"]
