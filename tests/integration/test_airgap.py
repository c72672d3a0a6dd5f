"""An air-gapped machine: `harness pack` here, the parts unpacked into a fresh folder by the
unpack.py beside them, and a study run from that folder with no package index.

The wheels come from a local wheel folder through real pip (its configuration files and indexes
shut out: `local_wheels_only`): the harness's own wheel, built by `pack` from this checkout, and a
toy extension whose requirements pack follows (a helper under a version bound, torch excluded, a
Windows-only package left out by its marker). The target is this environment's interpreter, which
has torch and the harness's dependencies, as a cluster's image has torch: the pack leaves them all
out with ``--exclude``, so what runs there is the unpacked wheel of the harness, which the test
asserts (its files, its metadata, and the run's MLflow record: version 0.1.0, no git commit,
where a run of the checkout records its commit). The model is a tiny BERT from a config, in a
Hugging Face cache written as a download leaves it, so ``--model tiny-org/tiny-bert`` is resolved
by the real huggingface_hub from the cache the bundle carries; GLUE RTE is the real one.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from huggingface_hub import scan_cache_dir
from packaging.requirements import Requirement
from transformers import AutoConfig

from harness.cli import main
from harness.commands.bundle import PACKAGE, write_wheel
from tasks.corpora import LITBANK, missing_files
from tests.fixtures import GLUE_DIR, SHARED_DATA
from tests.unit.hub_cache_helpers import HUB_VARIABLES, folder_files, write_hub_snapshot
from tests.unit.wheel_helpers import local_wheels_only

CHECKOUT = Path(__file__).resolve().parents[2]
MODEL_ID = "tiny-org/tiny-bert"
PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
# What the target (this interpreter's environment) already has: every dependency the wheel built from
# the checkout declares (pyproject.toml's: the editable install's metadata is as old as its install).
INSTALLED = [
    Requirement(text).name
    for text in tomllib.loads((CHECKOUT / "pyproject.toml").read_text())["project"]["dependencies"]
]
TARGET = ["--python", PYTHON, "--platform", "manylinux2014_x86_64", "--exclude", *INSTALLED]
TINY_STUDY = (
    "--tasks rte --seeds 1 --max-train-examples 16 --epochs 1 --batch-size 8 --learning-rate 1e-3 --quick "
    "--max-dev-examples 16 --max-eval-examples 8 --max-length 64 --analyses cosine --no-figures "
    "--output-dir out --cache-dir cache --tracking-uri sqlite:///mlflow.db"
)
# Nothing of this machine's set-up reaches the target's commands: env.sh says where everything is.
UNSET = {*HUB_VARIABLES, "PYTHONPATH", "HARNESS_DATA", "HARNESS_DATA_MIRROR", "MLFLOW_TRACKING_URI", "VIRTUAL_ENV"}
RECORDED = ("harness.version", "harness.git_commit", "model.id", "model.revision")  # the run's MLflow tags
LOCATE = (
    "import importlib.metadata, json, sys, harness, tasks, classifier; print(json.dumps({"
    "'modules': [harness.__file__, tasks.__file__, classifier.__file__], 'path': sys.path, "
    f"'metadata': str(importlib.metadata.distribution('{PACKAGE}').locate_file('harness/cli.py'))}}))"
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not (GLUE_DIR / "RTE").is_dir(), reason=f"real GLUE RTE not found at {GLUE_DIR}"),
]


def wheel_folder(folder: Path) -> Path:
    """A toy extension (needing toy-helper below 2, torch, and on Windows toy-windows) and its helper."""
    write_wheel(folder, "toy-helper", "1.0")
    write_wheel(folder, "toy-helper", "2.0")
    write_wheel(
        folder, "toy-extension", "0.3", requires=("toy-helper<2", "torch>=2", 'toy-windows; sys_platform == "win32"')
    )
    return folder


def target_env(**variables: str) -> dict[str, str]:
    """The target's environment: no index for pip, none of this machine's hub, data or path settings."""
    kept = {name: value for name, value in os.environ.items() if name not in UNSET}
    return {**kept, "PIP_NO_INDEX": "1", "PIP_CONFIG_FILE": os.devnull, **variables}


def run(command: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, f"{command}: exit {done.returncode}\n{done.stdout}\n{done.stderr[-3000:]}"
    return done


def test_packed_here_unpacked_there_a_study_runs_from_the_unpacked_wheel(tiny_model_dir, tmp_path):
    home = tmp_path / "home"  # this machine's Hugging Face cache, holding the model as a download leaves it
    revision = write_hub_snapshot(home / "hub", MODEL_ID, folder_files(tiny_model_dir))
    out = tmp_path / "parts"
    pack_env = {
        **target_env(HF_HOME=str(home), HF_HUB_OFFLINE="1"),
        **local_wheels_only(wheel_folder(tmp_path / "links")),
    }
    pack = [sys.executable, "-m", "harness", "pack", str(out), *TARGET, "--model", MODEL_ID, "--tasks", "rte"]
    pack += ["--data-dir", str(GLUE_DIR), "--corpora", "none", "--with", "toy-extension", "--part-size", "2M"]
    said = run(pack, tmp_path, pack_env).stdout
    assert said.splitlines()[-1] == f"copy {out} to the machine, then there: python3 {out / 'unpack.py'} --into DIR"

    manifest = json.loads((out / "manifest.json").read_text())
    sizes = [part["size"] for part in manifest["parts"]]
    assert len(sizes) >= 3 and max(sizes) <= 2 << 20 and sum(sizes) == manifest["size"]
    assert manifest["contents"]["wheels"] == [
        "attention_shift_harness-0.1.0-py3-none-any.whl",
        "toy_extension-0.3-py3-none-any.whl",
        "toy_helper-1.0-py3-none-any.whl",
    ]
    assert manifest["contents"]["model"] == {"argument": MODEL_ID, "kind": "hub", "revision": revision}

    # There: a fresh folder, the script beside the parts, no harness installed for it to import.
    there = tmp_path / "there"
    there.mkdir()
    into = there / "harness"
    unpacked = run([sys.executable, "-I", str(out / "unpack.py"), "--into", str(into)], there, target_env()).stdout
    command = f"source {into / 'env.sh'} && python3 -m harness run --task rte --model {MODEL_ID}"
    assert unpacked.splitlines()[-1] == f"  {command}"
    (cached,) = scan_cache_dir(into / "hf-cache").repos
    assert cached.repo_id == MODEL_ID and [r.commit_hash for r in cached.revisions] == [revision]
    for split in ("train", "dev"):
        assert (into / "glue" / "RTE" / f"{split}.tsv").read_bytes() == (GLUE_DIR / "RTE" / f"{split}.tsv").read_bytes()

    def from_there(script: str) -> str:
        return run(["bash", "-c", f"source {into / 'env.sh'} && {script}"], there, target_env()).stdout

    found = json.loads(from_there(f"{sys.executable} -c {json.dumps(LOCATE)}"))
    site = into / "site"
    assert all(Path(module).is_relative_to(site) for module in [*found["modules"], found["metadata"]]), found
    assert not any(entry and Path(entry).resolve() == CHECKOUT for entry in found["path"])

    from_there(f"{sys.executable} -m harness study --model {MODEL_ID} {TINY_STUDY}")
    assert list((there / "out" / "studies").glob("*/study.json"))
    (config,) = (there / "out").glob("rte-*/config.json")
    assert json.loads(config.read_text())["data_dir"] == str(into / "glue")
    with sqlite3.connect(there / "mlflow.db") as database:
        tags = set(database.execute(f"SELECT DISTINCT key, value FROM tags WHERE key IN {RECORDED}").fetchall())
    # the unpacked wheel's version and no commit (a run of the checkout records its commit); the hub
    # model by its id and the revision of the snapshot the bundle carried
    assert tags == {
        ("harness.version", "0.1.0"),
        ("harness.git_commit", "unknown"),
        ("model.id", MODEL_ID),
        ("model.revision", revision),
    }


@pytest.mark.skipif(not (SHARED_DATA / LITBANK.shared).is_dir(), reason="needs LitBank in ../shared/data")
def test_a_model_folder_and_a_corpus_unpack_where_runs_find_them(tiny_model_dir, tmp_path, capsys, monkeypatch):
    for name, value in local_wheels_only(wheel_folder(tmp_path / "links")).items():
        monkeypatch.setenv(name, value)
    out, into = tmp_path / "parts", tmp_path / "there" / "harness"
    assert main(["pack", str(out), *TARGET, "--model", str(tiny_model_dir), "--corpora", "litbank"]) == 0
    assert main(["unpack", str(out), "--into", str(into)]) == 0
    said = capsys.readouterr().out.splitlines()
    model = into / "models" / tiny_model_dir.name
    assert said[-1] == f"  source {into / 'env.sh'} && python3 -m harness run --task TASK --model {model}"
    assert folder_files(model) == folder_files(tiny_model_dir)
    assert AutoConfig.from_pretrained(model).num_hidden_layers == 2
    assert missing_files(LITBANK, into / "data" / LITBANK.folder_name) == []  # $HARNESS_DATA, as env.sh sets it
    environment = (into / "env.sh").read_text()
    assert f"export HARNESS_DATA={into / 'data'}" in environment and "GLUE_DIR" not in environment
