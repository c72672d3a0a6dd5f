"""The Python the project says it needs is the one its dependencies need: every installed
requirement (as resolved here, transitively) accepts the lowest Python of ``requires-python``,
and the README names that Python."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def lowest_python() -> Version:
    """The lower bound of ``requires-python`` (``>=3.11`` -> 3.11)."""
    (bound,) = [spec.version for spec in SpecifierSet(PROJECT["requires-python"]) if spec.operator == ">="]
    return Version(bound)


def installed_requirements() -> dict[str, str | None]:
    """Every distribution the project's dependencies pull in here (extras offline and dev
    included), transitively: ``{name: its Requires-Python}``."""
    wanted = [Requirement(text) for extra in ("offline", "dev") for text in PROJECT["optional-dependencies"][extra]]
    wanted += [Requirement(text) for text in PROJECT["dependencies"]]
    found: dict[str, str | None] = {}
    while wanted:
        requirement = wanted.pop()
        name = requirement.name.lower().replace("_", "-")
        if name in found or (requirement.marker and not requirement.marker.evaluate({"extra": ""})):
            continue
        try:
            distribution = importlib.metadata.distribution(requirement.name)
        except importlib.metadata.PackageNotFoundError:  # an optional dependency of a dependency
            continue
        found[name] = distribution.metadata.get("Requires-Python")
        wanted += [Requirement(text) for text in distribution.requires or []]
    return found


def test_every_resolved_dependency_runs_on_the_lowest_python_the_project_claims():
    lowest = lowest_python()
    requirements = installed_requirements()
    assert {"numpy", "transformers", "torch", "mlflow"} <= set(requirements)
    refusing = {name: needs for name, needs in requirements.items() if needs and lowest not in SpecifierSet(needs)}
    assert refusing == {}, f"these need more than Python {lowest}: raise requires-python and the README"


def test_the_readme_names_the_lowest_python():
    lowest = lowest_python()
    assert re.search(rf"Python {re.escape(str(lowest))}\+", (ROOT / "README.md").read_text())
