"""GLUE through `datasets` from the local hub cache, offline: nyu-mll/glue's parquet files (made from
the shared GLUE TSVs as the hub's copy was) in huggingface_hub's cache layout yield the TSV loader's
examples, guids included. `datasets` reads a hub snapshot offline only through the harness's
fallback (`tasks.hub.hub_rows`); its own offline path reads the dataset cache an online load prepared.

huggingface_hub and datasets read ``HF_HOME`` and the offline switches when imported, so the loader
runs in a subprocess with its own environment.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from huggingface_hub import scan_cache_dir, try_to_load_from_cache

from tasks.examples import Example
from tasks.loading import load_examples
from tasks.registry import HUB_DATASET, get_task
from tests.fixtures import GLUE_DIR
from tests.unit.hub_cache_helpers import glue_hub_files, python_in, write_hub_snapshot

pytestmark = pytest.mark.skipif(
    not (GLUE_DIR / "RTE").is_dir() or not (GLUE_DIR / "CoLA").is_dir(),
    reason=f"GLUE RTE and CoLA TSVs not found at {GLUE_DIR}",
)

OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
# `load_examples` without a data folder (GLUE from the hub), its examples as JSON; an InputError its line, exit 2.
LOAD = """
import dataclasses, json, sys
from tasks.errors import InputError
from tasks.loading import load_examples
from tasks.registry import get_task
try:
    examples = {split: load_examples(get_task(sys.argv[1]), split) for split in sys.argv[2:]}
except InputError as error:
    print(error)
    sys.exit(2)
print(json.dumps({split: [dataclasses.asdict(example) for example in rows] for split, rows in examples.items()}))
"""


@pytest.fixture(scope="module")
def glue_home(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, dict[str, bytes]]:
    """An ``HF_HOME`` whose hub cache holds nyu-mll/glue's RTE and CoLA: the folder, the snapshot's
    commit, and its files."""
    home = tmp_path_factory.mktemp("hf_home")
    files = glue_hub_files(GLUE_DIR, tmp_path_factory.mktemp("parquet"), ("rte", "cola"))
    return home, write_hub_snapshot(home / "hub", HUB_DATASET, files, repo_type="dataset"), files


def load_in_subprocess(home: Path, task: str, *splits: str, **variables: str) -> subprocess.CompletedProcess:
    return python_in(home, LOAD, task, *splits, **variables)


def test_the_snapshot_is_laid_out_as_huggingface_hub_reads_it(glue_home):
    home, commit, files = glue_home
    (repo,) = scan_cache_dir(home / "hub").repos
    assert (repo.repo_type, repo.repo_id) == ("dataset", HUB_DATASET)
    (revision,) = repo.revisions
    assert (revision.commit_hash, revision.refs) == (commit, frozenset({"main"}))
    assert {file.file_path.relative_to(revision.snapshot_path).as_posix() for file in revision.files} == set(files)
    found = try_to_load_from_cache(
        HUB_DATASET, "rte/validation-00000-of-00001.parquet", cache_dir=home / "hub", repo_type="dataset"
    )
    assert Path(found).read_bytes() == files["rte/validation-00000-of-00001.parquet"]


@pytest.mark.parametrize("task", ["rte", "cola"])  # CoLA: a TSV without a header (its first row is line 1)
def test_glue_from_the_hub_cache_offline_is_what_the_tsv_loader_reads(glue_home, task):
    home, _, _ = glue_home
    done = load_in_subprocess(home, task, "train", "dev", **OFFLINE)
    assert done.returncode == 0, done.stderr[-3000:]
    from_hub = {
        split: [Example(**example | {"words": (), "tags": ()}) for example in rows]  # JSON keeps no tuples
        for split, rows in json.loads(done.stdout).items()
    }
    for split in ("train", "dev"):
        from_tsv = load_examples(get_task(task), split, GLUE_DIR)
        assert len(from_hub[split]) == len(from_tsv) > 0
        assert from_hub[split] == from_tsv
    assert from_hub["dev"][0].guid == f"{task}-{2 if task == 'rte' else 1}"


def test_without_glue_in_the_hub_cache_offline_the_error_says_what_to_do(tmp_path):
    done = load_in_subprocess(tmp_path, "rte", "dev", **OFFLINE)
    assert done.returncode == 2 and len(done.stdout.strip().splitlines()) == 1, done.stderr[-3000:]
    assert done.stdout.startswith(f"could not load {HUB_DATASET}/rte validation (ConnectionError: ")
    assert "nor is it in the hub cache; offline? point --data-dir or GLUE_DIR at a GLUE TSV folder" in done.stdout


def test_a_snapshot_without_the_split_says_which_files_it_lacks(glue_home, tmp_path):
    _, _, files = glue_home
    commit = write_hub_snapshot(
        tmp_path / "hub",
        HUB_DATASET,
        {path: data for path, data in files.items() if "validation" not in path},
        repo_type="dataset",
    )
    done = load_in_subprocess(tmp_path, "rte", "dev", **OFFLINE)
    assert done.returncode == 2, done.stderr[-3000:]
    assert f"nor has its hub cache snapshot {commit} rte/validation-*.parquet" in done.stdout
