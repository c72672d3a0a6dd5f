"""A Hugging Face hub cache written as a download leaves it, and GLUE rows as the hub's copy holds them.

huggingface_hub's cache ("Understand caching" in its docs): ``<cache>/<repo_type>s--<org>--<name>/``
holds ``blobs/<etag>`` (the SHA-256 of an LFS file, git's SHA-1 of any other), ``snapshots/<commit>/
<path>`` (relative symlinks to the blobs) and ``refs/main`` (the commit). The folder name and the
hashes come from huggingface_hub's own functions; the tests prove the layout with its
``scan_cache_dir`` and by loading from it offline.
"""

from __future__ import annotations

import csv
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import datasets
from huggingface_hub.file_download import repo_folder_name
from huggingface_hub.utils.sha import git_hash

ROOT = Path(__file__).resolve().parents[2]
LFS_SUFFIXES = (".safetensors", ".bin", ".parquet")  # the files the hub stores in LFS (etag: their SHA-256)
# What decides where the hub, transformers and datasets look, or whether they go online: the tests set their own.
HUB_VARIABLES = (
    "HF_HOME",
    "HF_HUB_CACHE",
    "HUGGINGFACE_HUB_CACHE",
    "TRANSFORMERS_CACHE",
    "HF_DATASETS_CACHE",
    "HF_HUB_OFFLINE",
    "TRANSFORMERS_OFFLINE",
    "HF_DATASETS_OFFLINE",
    "HF_ENDPOINT",
    "GLUE_DIR",
    "HTTPS_PROXY",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
)
GLUE_RTE_FEATURES = datasets.Features(
    {
        "sentence1": datasets.Value("string"),
        "sentence2": datasets.Value("string"),
        "label": datasets.ClassLabel(names=["entailment", "not_entailment"]),
        "idx": datasets.Value("int32"),
    }
)
GLUE_COLA_FEATURES = datasets.Features(
    {
        "sentence": datasets.Value("string"),
        "label": datasets.ClassLabel(names=["unacceptable", "acceptable"]),
        "idx": datasets.Value("int32"),
    }
)
# The dataset card's configurations, as nyu-mll/glue's README.md declares them (two of its configurations).
GLUE_README = """---
configs:
- config_name: cola
  data_files:
  - split: train
    path: cola/train-*
  - split: validation
    path: cola/validation-*
- config_name: rte
  data_files:
  - split: train
    path: rte/train-*
  - split: validation
    path: rte/validation-*
---
# GLUE (two configurations, written by the harness's tests)
"""


def blob_name(path: str, data: bytes) -> str:
    """The blob a file is stored under: its etag on the hub."""
    return hashlib.sha256(data).hexdigest() if path.endswith(LFS_SUFFIXES) else git_hash(data)


def write_hub_snapshot(hub_cache: Path, repo_id: str, files: dict[str, bytes], repo_type: str = "model") -> str:
    """``files`` (``{path in the repository: content}``) laid out in the hub cache ``hub_cache`` as
    downloading ``repo_id`` at one commit leaves them; returns the commit (a hash of the files, as
    a git commit is)."""
    repo = hub_cache / repo_folder_name(repo_id=repo_id, repo_type=repo_type)
    blobs = {path: blob_name(path, data) for path, data in files.items()}
    commit = hashlib.sha1("".join(f"{path}\0{blob}\n" for path, blob in sorted(blobs.items())).encode()).hexdigest()
    (repo / "blobs").mkdir(parents=True, exist_ok=True)
    for path, data in files.items():
        blob = repo / "blobs" / blobs[path]
        blob.write_bytes(data)
        link = repo / "snapshots" / commit / path
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(commit)
    return commit


def folder_files(folder: Path) -> dict[str, bytes]:
    """Every file of a folder (a model saved by save_pretrained), by its path inside it."""
    return {
        path.relative_to(folder).as_posix(): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()
    }


def hub_environment(home: Path, **variables: str) -> dict[str, str]:
    """This process's environment for a harness subprocess reading the hub cache under ``home``
    (``HF_HOME``) only: every variable of `HUB_VARIABLES` replaced, plus ``variables``."""
    kept = {name: value for name, value in os.environ.items() if name not in HUB_VARIABLES}
    return {**kept, "HF_HOME": str(home), "HF_HUB_DISABLE_TELEMETRY": "1", **variables}


def python_in(home: Path, script: str, *arguments: str, **variables: str) -> subprocess.CompletedProcess:
    """``python -c script arguments`` in the repository with the hub cache under ``home`` alone
    (`hub_environment`, plus ``variables``): huggingface_hub and datasets read it when imported."""
    return subprocess.run(
        [sys.executable, "-c", script, *arguments],
        check=False,
        env=hub_environment(home, **variables),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def parquet(rows: list[dict], features: datasets.Features, folder: Path) -> bytes:
    """``rows`` as the hub's parquet conversion stores them (the features in the schema's metadata)."""
    path = folder / f"{hashlib.sha256(repr(rows).encode()).hexdigest()[:16]}.parquet"
    datasets.Dataset.from_list(rows, features=features).to_parquet(path)
    return path.read_bytes()


def hub_glue_rows(tsv: Path, config: str) -> list[dict]:
    """The rows of a GLUE TSV file as the hub's copy has them, read as its GLUE script read the
    files (tab-separated, no quoting; ``idx`` the row's number): RTE by its header, CoLA by position."""
    with tsv.open(encoding="utf-8", newline="") as handle:
        if config == "cola":
            return [
                {"sentence": row[3], "label": int(row[1]), "idx": index}
                for index, row in enumerate(csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
            ]
        reader = csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        names = GLUE_RTE_FEATURES["label"].names
        return [
            {
                "sentence1": row["sentence1"],
                "sentence2": row["sentence2"],
                "label": names.index(row["label"]),
                "idx": index,
            }
            for index, row in enumerate(reader)
        ]


def glue_hub_files(glue_dir: Path, folder: Path, configs: tuple[str, ...] = ("rte",)) -> dict[str, bytes]:
    """nyu-mll/glue's files for ``configs`` (its README and each split's parquet file) from a GLUE TSV
    folder: the hub's validation split is the TSV's dev; ``folder`` holds the parquet files as they are written."""
    features = {"rte": GLUE_RTE_FEATURES, "cola": GLUE_COLA_FEATURES}
    tsv_folders = {"rte": "RTE", "cola": "CoLA"}
    files = {"README.md": GLUE_README.encode()}
    for config in configs:
        for split, tsv in (("train", "train"), ("validation", "dev")):
            rows = hub_glue_rows(glue_dir / tsv_folders[config] / f"{tsv}.tsv", config)
            files[f"{config}/{split}-00000-of-00001.parquet"] = parquet(rows, features[config], folder)
    return files
