"""The suite's hooks: each worker's share of the cores, the tests over 5 s that lack the slow mark,
the tests pytest-xdist keeps on one worker, and the shared fixtures (`tests.fixtures`) loaded in
the processes that run tests. Under pytest-xdist the controller runs none, so it does not import
torch, transformers and the harness (about 12 s before the workers start)."""

from __future__ import annotations

import gc
import os
import sys

import pytest

from tasks.collector import collect_less_often

# The suite keeps what it compiles (__pycache__, ignored by git) where PYTHONDONTWRITEBYTECODE is set, as
# on this bench: else every run has each worker rewrite every test module's assertions again (about 6 s a
# worker) and every harness process a test starts compile the package's modules (0.7 s each); those
# processes keep the variable, and read what the workers wrote.
sys.dont_write_bytecode = False

# A worker holds a million long-lived objects (torch, transformers, the models and fixtures), and every
# collection of the oldest generation scans them all: with Python's default thresholds the collector
# took 7-9 s of each worker's ~110 s in tests/unit/run, collecting as the `harness` executable does
# 3-3.5 s (that folder 6-8 s sooner, alternating runs).
collect_less_often()

FIXTURES = "tests.fixtures"
# Its assertions rewritten as a conftest's are, whichever imports it first (a folder's conftest
# named on the command line loads before the hooks below run).
pytest.register_assert_rewrite(FIXTURES)


# Under pytest-xdist each worker's torch, and the harness processes its tests start, take their
# share of the cores (two workers spinning two threads each on two cores run slower): set before
# anything loads torch.
WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if WORKERS > 1:
    os.environ["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // WORKERS))


def pytest_configure(config: pytest.Config) -> None:
    """The fixtures load where tests run."""
    if runs_tests(config):
        config.pluginmanager.import_plugin(FIXTURES)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Where slow tests run, the fork server imports the harness for the warm processes of the
    fault and study tests (`tests.integration.warm_harness`), whichever test starts it first; the
    fast tier's figure pools keep a server of the drawing layer alone (1 s to start, not 10)."""
    if runs_tests(session.config) and any(item.get_closest_marker("slow") for item in session.items):
        from tests.integration.warm_harness import preload

        preload()


def pytest_unconfigure(config: pytest.Config) -> None:
    """What the session made (a worker's torch, transformers, models and fixtures: millions of
    objects) is left out of the collections the interpreter makes on its way out (`gc.freeze`), as the
    `harness` executable leaves its own (`tasks.collector.exit_uncollected`): the workers' and the
    controller's exits took 2-3 s at the end of every run of the suite."""
    gc.freeze()


def runs_tests(config: pytest.Config) -> bool:
    """Whether this process runs tests: a pytest-xdist worker, or pytest without workers (the
    controller of workers only hands tests out)."""
    return hasattr(config, "workerinput") or not config.getoption("numprocesses", default=None)


SLOW_SECONDS = 5.0  # a test taking longer (set-up and call) belongs to the slow tier
_unmarked_seconds: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Add up each test's set-up and call time (under pytest-xdist the workers' reports reach the
    controller here too) where the test is not marked slow."""
    if report.when in ("setup", "call") and "slow" not in report.keywords:
        _unmarked_seconds[report.nodeid] = _unmarked_seconds.get(report.nodeid, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """List the tests over `SLOW_SECONDS` that lack the slow mark: the fast tier stays fast because
    this list stays empty (a list to act on, not a timed assertion: a loaded machine lengthens it)."""
    offenders = sorted(
        ((seconds, test) for test, seconds in _unmarked_seconds.items() if seconds > SLOW_SECONDS), reverse=True
    )
    if offenders:
        terminalreporter.section(f"over {SLOW_SECONDS:g} s without the slow mark (mark them slow)")
        for seconds, test in offenders:
            terminalreporter.write_line(f"{seconds:6.1f} s  {test}")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``--dist loadgroup``), the tests of a module that share a
    module-scoped fixture run on one worker, so the fixture is made once; the module's other
    tests spread over every worker."""
    for item in items:
        definitions = getattr(item, "_fixtureinfo", None)
        shared = definitions and any(
            fixtures[-1].scope == "module" for fixtures in definitions.name2fixturedefs.values()
        )
        if shared and not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(item.path.relative_to(config.rootpath).as_posix()))
