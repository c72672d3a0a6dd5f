"""The views import no matplotlib or scipy as they load (every command that analyses imports them to
build its flags); a figure's drawing finds matplotlib set up for the house (`harness.views.lazy`)."""

import importlib
import pkgutil
import subprocess
import sys

import harness.views
from harness.views import DRAWING, View
from harness.views.font import FAMILY, LEAN_FAMILY
from harness.views.lazy import mpl, plt, scipy_stats
from harness.views.palette import OKABE_ITO

HEAVY = ("matplotlib", "scipy", "torch", "pandas", "PIL", "fontTools")
LOADED = "import sys, harness.views; print(' '.join(sys.modules))"


def test_importing_the_views_imports_each_module_but_the_drawing_ones_and_no_heavy_library():
    process = subprocess.run([sys.executable, "-c", LOADED], capture_output=True, text=True, check=True)
    loaded = set(process.stdout.split())
    modules = {module.name for module in pkgutil.iter_modules(harness.views.__path__)}
    assert set(DRAWING) <= modules
    assert {f"harness.views.{name}" for name in modules - set(DRAWING)} <= loaded
    assert not {f"harness.views.{name}" for name in DRAWING} & loaded
    assert not {name.split(".")[0] for name in loaded} & set(HEAVY)


def test_the_drawing_modules_declare_no_view():
    for name in DRAWING:
        members = vars(importlib.import_module(f"harness.views.{name}")).values()
        assert not [member for member in members if isinstance(member, type) and issubclass(member, View)], name


def test_a_figure_is_drawn_with_matplotlib_set_up_for_the_house():
    plt.close(plt.figure())
    assert mpl.get_backend().lower() == "agg"
    assert mpl.rcParams["pdf.fonttype"] == 42 and mpl.rcParams["svg.fonttype"] == "none"
    assert mpl.rcParams["axes.prop_cycle"].by_key()["color"] == list(OKABE_ITO.values())
    assert mpl.rcParams["font.family"] == [LEAN_FAMILY, FAMILY]
    assert scipy_stats.norm.ppf(0.5) == 0.0 and "scipy.stats" in sys.modules
