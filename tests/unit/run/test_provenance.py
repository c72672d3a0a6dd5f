"""A run's provenance names its code whether the harness was installed or run from a checkout."""

from __future__ import annotations

import tomllib

from harness.run.provenance import PACKAGE, SOURCE_ROOT, code_version, installed_version


def test_installed_version_is_the_projects_version() -> None:
    project = tomllib.loads((SOURCE_ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == PACKAGE
    assert installed_version() == project["version"]


def test_a_checkout_run_without_pip_says_not_installed_instead_of_stopping_the_run() -> None:
    assert installed_version("attention-shift-harness-never-installed") == "not installed"


def test_code_version_names_the_commit_of_this_checkout() -> None:
    commit = code_version()["harness.git_commit"]
    assert (SOURCE_ROOT / ".git").exists()
    assert len(commit.removesuffix("+dirty")) == 40
