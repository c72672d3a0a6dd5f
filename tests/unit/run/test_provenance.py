"""A run's provenance names its code whether the harness was installed or run from a checkout, and
the data files a task spec reads from outside its folder."""

from __future__ import annotations

import tomllib

import pytest

from harness.run.provenance import PACKAGE, SOURCE_ROOT, code_version, data_provenance, installed_version
from tasks.errors import InputError
from tasks.spec import read_spec


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


def test_data_a_spec_reads_from_outside_its_folder_is_read_when_it_says_so_and_named(tmp_path) -> None:
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "train.csv").write_text("text,label\nthe cat sat,pos\nthe dog ran,neg\n")
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "dev.csv").write_text("text,label\nhe sat,pos\n")
    spec = tmp_path / "specs" / "own.yaml"
    spec.write_text("data_files: {train: ../shared/train.csv, validation: dev.csv}\ntext_fields: text\n")
    with pytest.raises(InputError, match="data file 'train' .*/specs/../shared/train.csv lies outside the spec's"):
        read_spec(spec)
    spec.write_text(spec.read_text() + "data_outside: true\n")
    task = read_spec(spec)
    assert data_provenance(task) == {"data.outside_spec": f"train: {tmp_path / 'shared' / 'train.csv'}"}
    assert "data_outside" not in task.as_spec()  # where the files lie is not what the run is keyed on
