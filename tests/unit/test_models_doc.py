"""docs/models.md lists every encoder family the tests build, and every test it names exists."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path
from types import ModuleType

from tests.unit.model.architectures import ARCHITECTURES
from tests.unit.run import test_encoder_runs

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "models.md"
NAMED_TEST = re.compile(r"`(tests/[\w/]+\.py)?::(\w+)`")  # `file::test`, or `::test` of the file named before it


def table_rows(text: str, header_start: str) -> list[list[str]]:
    """The cells of the Markdown table whose header row begins with ``header_start`` (header first)."""
    lines = text.splitlines()
    start = next(index for index, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        if not line.startswith("|---"):
            rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def named_tests(cell: str) -> list[tuple[ModuleType, str]]:
    """The (module, test name) of each test a cell of the column-to-test table names."""
    found, path = [], None
    for match in NAMED_TEST.finditer(cell):
        path = match[1] or path
        found.append((importlib.import_module(path.removesuffix(".py").replace("/", ".")), match[2]))
    return found


def test_the_support_table_has_every_family_and_every_column_on_each():
    header, *rows = table_rows(DOC.read_text(), "| model_type | capture |")
    assert header == ["model_type", "capture", "gate", "uniform", "every analysis", "report"]
    assert sorted(row[0] for row in rows) == sorted(f"`{name}`" for name in ARCHITECTURES)
    assert all(cell == "✓" for row in rows for cell in row[1:])


FAMILY_FIXTURES = {"architecture", "architecture_dir"}  # tests/unit/conftest.py: one per encoder family


def per_family(module: ModuleType, function: object) -> bool:
    """Whether ``function`` asks for a family's fixture, itself or through a fixture of its module."""
    for parameter in inspect.signature(function).parameters:  # type: ignore[arg-type]
        if parameter in FAMILY_FIXTURES:
            return True
        fixture = getattr(module, parameter, None)
        unwrap = getattr(fixture, "_get_wrapped_function", None)  # a pytest fixture's own function
        if fixture is not None and per_family(module, unwrap() if unwrap else fixture):
            return True
    return False


def test_each_column_names_tests_that_exist_on_every_familys_tiny_model():
    _, *rows = table_rows(DOC.read_text(), "| column | test |")
    tests = {column: named_tests(cell) for column, cell in rows}
    assert set(tests) == {"capture", "gate", "uniform", "every analysis", "report"}
    # a default run on each family's tiny model, which checks that it stored every default analysis
    assert (test_encoder_runs, "test_a_default_run_analyses_and_draws_every_architecture") in tests["every analysis"]
    for module, name in (test for named in tests.values() for test in named):
        test = getattr(module, name, None)
        assert callable(test), f"{module.__name__}::{name}"
        # on every family: the test asks for the fixture made per family (tests/unit/conftest.py)
        assert per_family(module, test), f"{module.__name__}::{name}"


def test_the_forward_table_has_every_family():
    _, *rows = table_rows(DOC.read_text(), "| model_type | family")
    assert sorted(row[0] for row in rows) == sorted(f"`{name}`" for name in ARCHITECTURES)
