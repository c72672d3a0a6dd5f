"""matplotlib and scipy as the views use them, imported where a figure is first drawn or a
statistic first computed, not with the views' modules: every command that analyses imports those
to build its flags (each analysis declares its own settings in its view's module,
`harness.config.analysis_settings`), and refuses a mistyped flag in a fraction of a second, not
after matplotlib's and scipy's 2 s and 150 MB. ``plt`` and ``mpl`` are pyplot and matplotlib set up
for the house's figures (`harness.views.canvas`), ``scipy_stats`` is scipy.stats; mypy reads each
as the module itself. The views' modules that need matplotlib as they load (`harness.views.DRAWING`)
are reached through a `Deferred` of their own.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

CANVAS = "harness.views.canvas"


class Deferred:
    """A module imported when first used: reading an attribute imports ``module`` (Python keeps it,
    so once) and reads the attribute from it, or from its ``attribute`` (a module it imported)."""

    def __init__(self, module: str, attribute: str | None = None) -> None:
        self.module, self.attribute = module, attribute

    def __getattr__(self, name: str) -> Any:  # Any: the module's attribute, of whatever it is
        imported = importlib.import_module(self.module)
        return getattr(imported if self.attribute is None else getattr(imported, self.attribute), name)


if TYPE_CHECKING:
    import matplotlib as mpl
    import matplotlib.pyplot as plt
    from scipy import stats as scipy_stats
else:
    plt = Deferred(CANVAS, "plt")
    mpl = Deferred(CANVAS, "matplotlib")
    scipy_stats = Deferred("scipy.stats")
