"""A model given by hub id resolves through the Hugging Face cache, offline, and the run records the
id and the revision it used. The cache is written as a download leaves it (`hub_cache_helpers`) and
read by the real huggingface_hub, transformers and datasets; no network, nothing mocked.

huggingface_hub reads ``HF_HOME`` and ``HF_HUB_OFFLINE`` when it is imported (as do transformers and
datasets), so the harness runs in a subprocess with its own environment.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from huggingface_hub import scan_cache_dir, try_to_load_from_cache
from huggingface_hub.file_download import repo_folder_name
from mlflow.tracking import MlflowClient
from transformers import AutoModel, AutoTokenizer

from harness.results.store import key_of, read_json
from harness.run.tracking import HARNESS_RUNS
from tasks.registry import HUB_DATASET
from tests.fixtures import MAIN_REPORTING_IMPORTS, TINY_VOCAB, snapshot, tiny_bert, tiny_run_arguments
from tests.unit.hub_cache_helpers import folder_files, glue_hub_files, hub_environment, python_in, write_hub_snapshot

MODEL_ID = "tiny-org/tiny-bert"
# The weights identity of each model named on the command line, as JSON.
IDENTITIES = """
import json, sys
from harness.model.loading import pretrained_identity
from harness.results.store import FileHashes
print(json.dumps([pretrained_identity(name, FileHashes())["weights_sha256"] for name in sys.argv[1:]]))
"""


@pytest.fixture(scope="module")
def hub_home(tmp_path_factory: pytest.TempPathFactory, tiny_model_dir: Path, tiny_data: Path) -> dict[str, object]:
    """An ``HF_HOME`` whose hub cache holds the tiny BERT as ``tiny-org/tiny-bert`` and the tiny
    RTE as nyu-mll/glue's parquet files: the folder and the model's commit."""
    home = tmp_path_factory.mktemp("hf_home")
    model = write_hub_snapshot(home / "hub", MODEL_ID, folder_files(tiny_model_dir))
    glue_files = glue_hub_files(tiny_data / "glue", tmp_path_factory.mktemp("parquet"))
    write_hub_snapshot(home / "hub", HUB_DATASET, glue_files, repo_type="dataset")
    return {"home": home, "model": model}


@pytest.fixture
def refused_endpoint() -> Iterator[str]:
    """An endpoint on this machine that refuses connections (a bound port nobody listens on)."""
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{bound.getsockname()[1]}"


def harness(arguments: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "harness", *arguments],
        check=False,
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )


def hub_run_arguments(tiny_data: Path, root: Path, *extra: str, data_dir: bool = True) -> list[str]:
    """The tiny run on ``tiny-org/tiny-bert``; GLUE from the hub (no ``--data-dir``) unless ``data_dir``."""
    arguments = tiny_run_arguments(Path("unused"), tiny_data, root, "--no-figures", *extra)
    arguments[arguments.index("--model") + 1] = MODEL_ID
    if not data_dir:
        position = arguments.index("--data-dir")
        del arguments[position : position + 2]
    return arguments


def mlflow_identity(root: Path) -> dict[str, str]:
    client = MlflowClient(tracking_uri=f"sqlite:///{root}/mlflow.db")
    (run,) = client.search_runs([client.get_experiment_by_name("attention-shift").experiment_id], HARNESS_RUNS)
    return run.data.tags  # what identifies the model and the data: tags, not params


def test_the_cache_is_laid_out_as_huggingface_hub_and_transformers_read_it(hub_home, tiny_model_dir):
    hub = hub_home["home"] / "hub"
    cache = scan_cache_dir(hub)
    assert not cache.warnings
    repos = {(repo.repo_type, repo.repo_id): repo for repo in cache.repos}
    assert set(repos) == {("model", MODEL_ID), ("dataset", HUB_DATASET)}
    (revision,) = repos["model", MODEL_ID].revisions
    assert (revision.commit_hash, revision.refs) == (hub_home["model"], frozenset({"main"}))
    assert {file.file_path.relative_to(revision.snapshot_path).as_posix() for file in revision.files} == set(
        folder_files(tiny_model_dir)
    )
    (glue,) = repos["dataset", HUB_DATASET].revisions
    assert {file.file_path.relative_to(glue.snapshot_path).as_posix() for file in glue.files} == {
        "README.md",
        "rte/train-00000-of-00001.parquet",
        "rte/validation-00000-of-00001.parquet",
    }
    snapshot_folder = hub / repo_folder_name(repo_id=MODEL_ID, repo_type="model") / "snapshots" / hub_home["model"]
    assert Path(try_to_load_from_cache(MODEL_ID, "config.json", cache_dir=hub)) == snapshot_folder / "config.json"
    loaded = AutoModel.from_pretrained(MODEL_ID, cache_dir=hub, local_files_only=True).state_dict()
    assert all(torch.equal(loaded[name], weights) for name, weights in tiny_bert(0).bert.state_dict().items())
    assert AutoTokenizer.from_pretrained(MODEL_ID, cache_dir=hub, local_files_only=True).vocab_size == len(TINY_VOCAB)


@pytest.mark.slow
def test_a_hub_id_runs_offline_from_the_cache_and_the_run_records_its_revision(hub_home, tiny_data, tmp_path):
    home, hub = hub_home["home"], hub_home["home"] / "hub"
    cached = snapshot(hub)
    done = harness(hub_run_arguments(tiny_data, tmp_path), hub_environment(home, HF_HUB_OFFLINE="1"), tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    params = mlflow_identity(tmp_path)
    assert (params["model.id"], params["model.revision"]) == (MODEL_ID, hub_home["model"])
    weights = (
        hub
        / repo_folder_name(repo_id=MODEL_ID, repo_type="model")
        / "snapshots"
        / hub_home["model"]
        / "model.safetensors"
    )
    # the blob's name is the file's SHA-256 (its LFS etag): the identity hashes the very file the cache holds
    assert params["model.weights_sha256"] == key_of([weights.resolve().name], 64)
    (run_dir,) = (tmp_path / "out").glob("rte-tiny-bert-seed42-*")
    described = read_json(run_dir / "summary.json")["run"]
    assert described["model"] == MODEL_ID
    assert described["provenance"] == {"model.id": MODEL_ID, "model.revision": hub_home["model"]}
    assert described["checkpoints"]["pretrained"]["weights_sha256"] == params["model.weights_sha256"]
    assert snapshot(hub) == cached  # read, not written


@pytest.mark.slow
def test_with_the_hub_unreachable_model_and_glue_come_from_the_cache(hub_home, tiny_data, tmp_path, refused_endpoint):
    """No HF_HUB_OFFLINE: the harness finds the hub unreachable itself, reads the model from the
    cache, and `datasets` GLUE from the hub cache's parquet snapshot (which it does not read offline
    by itself)."""
    env = hub_environment(hub_home["home"], HF_ENDPOINT=refused_endpoint)
    done = harness(hub_run_arguments(tiny_data, tmp_path, "--analyses", "cosine", data_dir=False), env, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    params = mlflow_identity(tmp_path)
    assert (params["model.id"], params["model.revision"]) == (MODEL_ID, hub_home["model"])
    assert (params["data.hub"], params["data.config"]) == (HUB_DATASET, "rte")
    assert (params["examples.trained"], params["examples.compared"]) == ("24", "8")  # the tiny RTE's splits


@pytest.mark.slow
def test_a_hub_id_missing_from_the_cache_offline_is_one_line_before_torch_loads(hub_home, tiny_data, tmp_path):
    """Said from the hub cache alone, before any model library loads: torch, transformers and
    MLflow are never imported (`MAIN_REPORTING_IMPORTS` prints which were)."""
    arguments = hub_run_arguments(tiny_data, tmp_path)
    arguments[arguments.index("--model") + 1] = "tiny-org/not-cached"
    done = python_in(hub_home["home"], MAIN_REPORTING_IMPORTS, *arguments, HF_HUB_OFFLINE="1")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr[-3000:]
    assert "could not load model id 'tiny-org/not-cached'" in done.stderr
    assert "not in the local cache" in done.stderr and "--model minilm" in done.stderr
    assert done.stdout.split("|")[0] == ""  # no model library imported


@pytest.mark.slow
def test_a_sharded_hub_model_is_identified_by_its_shards_as_a_local_folder_is(tmp_path):
    """Its weights hash is that of every shard (not its id: a new revision would leave stored
    results looking current), the same as the same files in a local folder get."""
    folder = tmp_path / "sharded"
    tiny_bert(0).save_pretrained(folder, max_shard_size="20KB")
    assert len(list(folder.glob("model-*-of-*.safetensors"))) > 1
    write_hub_snapshot(tmp_path / "home" / "hub", "tiny-org/sharded-bert", folder_files(folder))
    done = subprocess.run(
        [sys.executable, "-c", IDENTITIES, "tiny-org/sharded-bert", str(folder)],
        check=False,
        env=hub_environment(tmp_path / "home", HF_HUB_OFFLINE="1"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    from_hub, from_folder = json.loads(done.stdout)
    assert from_hub == from_folder and len(from_hub) == 64
