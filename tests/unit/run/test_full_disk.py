"""A full disk at any write is one line naming the folder (exit 2, no traceback), and the
same command after space is freed finishes with nothing lost.

Each case mounts a small tmpfs (root, or CAP_SYS_ADMIN, is needed: skipped otherwise with the
reason), runs the real CLI on the tiny model with one folder on it, then remounts it bigger
and runs again.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import uuid
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import replace
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from harness.cli import main
from harness.run.tracking import CHECKPOINT_TAG, EXPERIMENT, HARNESS_RUNS
from tasks.corpora import LITBANK, CorpusFile
from tasks.download import download_corpus
from tasks.files import DiskFull
from tests.fixtures import PNG_ONLY, store_uri, tiny_run_arguments
from tests.integration.warm_harness import completed

pytestmark = pytest.mark.slow
Mounter = Callable[[str], Path]


def mount(folder: Path, size: str) -> None:
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], check=True, capture_output=True, text=True
    )


def remount(folder: Path, size: str) -> None:
    """Free space: the same file system, bigger (its files stay)."""
    subprocess.run(["mount", "-o", f"remount,size={size}", str(folder)], check=True, capture_output=True)


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Mounter]:
    """``tmpfs(size)``: a new folder with a tmpfs of ``size`` mounted on it, unmounted afterwards."""
    mounted: list[Path] = []

    def make(size: str) -> Path:
        folder = tmp_path / f"tmpfs-{uuid.uuid4().hex[:6]}"
        folder.mkdir()
        try:
            mount(folder, size)
        except (subprocess.CalledProcessError, FileNotFoundError) as error:
            pytest.skip(
                f"cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN): {getattr(error, 'stderr', None) or error}"
            )
        mounted.append(folder)
        return folder

    yield make
    for folder in mounted:
        subprocess.run(["umount", "--lazy", str(folder)], check=False)  # MLflow keeps its SQLite file open


def error_line(capsys: pytest.CaptureFixture) -> str:
    """The one line the CLI printed on stderr (progress bars aside: they redraw with carriage returns)."""
    lines = [line.split("\r")[-1] for line in capsys.readouterr().err.splitlines()]
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1, lines
    assert not any("Traceback" in line for line in lines), lines
    return errors[0]


def temporary_files(folder: Path) -> list[Path]:
    """Half-written files that atomic writes would leave if they did not clean up."""
    return [path for path in folder.rglob("*") if ".tmp" in path.name]


def test_cache_dir_too_small_for_the_checkpoint(tiny_model_dir, tiny_data, tmp_path, tmpfs, capsys):
    cache = tmpfs("64k")
    arguments = tiny_run_arguments(tiny_model_dir, tiny_data, tmp_path, "--no-figures")
    arguments[arguments.index("--cache-dir") + 1] = str(cache)
    assert main(arguments) == 2
    line = error_line(capsys)
    assert str(cache) in line and "no space left on the device" in line and "needed" in line
    assert "run the same command again" in line
    assert not temporary_files(cache)
    remount(cache, "64m")
    assert main(arguments) == 0
    assert json.loads(next((tmp_path / "out").rglob("summary.json")).read_text())["analyses"]


def with_folder(arguments: list[str], flag: str, folder: Path) -> list[str]:
    arguments = list(arguments)
    arguments[arguments.index(flag) + 1] = str(folder)
    return arguments


def test_output_dir_filling_while_results_and_figures_are_written(tiny_model_dir, tiny_data, tmp_path, tmpfs, capsys):
    out = tmpfs("1m")  # the store (about 250 kB) fits, the figures (about 4.5 MB) do not
    arguments = with_folder(tiny_run_arguments(tiny_model_dir, tiny_data, tmp_path, *PNG_ONLY), "--output-dir", out)
    assert main(arguments) == 2
    line = error_line(capsys)
    assert line.startswith(f"error: {out}/") and "no space left on the device while writing" in line
    assert not temporary_files(out)
    remount(out, "64m")
    assert main(arguments) == 0
    resumed = json.loads(next(out.rglob("summary.json")).read_text())
    never_failed = tmp_path / "never-failed"
    assert (
        main(
            with_folder(
                with_folder(arguments, "--output-dir", never_failed),
                "--tracking-uri",
                store_uri(tmp_path / "never-failed-store"),
            )
            + ["--no-figures"]  # its summary is compared
        )
        == 0
    )
    assert resumed == json.loads(next(never_failed.rglob("summary.json")).read_text())
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path}/mlflow.db")
    runs = client.search_runs([client.get_experiment_by_name(EXPERIMENT).experiment_id], HARNESS_RUNS)
    assert [run.info.status for run in runs] == ["FINISHED"]  # the failed attempt's run, reopened and finished


def test_mlflow_store_filling(tiny_model_dir, tiny_data, tmp_path, tmpfs, capsys):
    store = tmpfs("256k")  # a new store's tables alone are about 1 MB
    arguments = with_folder(
        tiny_run_arguments(tiny_model_dir, tiny_data, tmp_path, "--no-figures"),
        "--tracking-uri",
        f"sqlite:///{store}/mlflow.db",
    )
    assert main(arguments) == 2
    line = error_line(capsys)
    assert line.startswith(f"error: {store}: no space left on the device while writing the MLflow")
    remount(store, "64m")
    # A new process, as a user's rerun is: MLflow keeps each store's SQLAlchemy engine for the process's life
    # (started warm: its server imported MLflow and opened no store).
    rerun = completed(arguments)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    with closing(sqlite3.connect(store / "mlflow.db")) as database:  # not MLflow: its engine here is the old one
        statuses = database.execute(
            f"SELECT status FROM runs WHERE run_uuid NOT IN (SELECT run_uuid FROM tags WHERE key = '{CHECKPOINT_TAG}')"
        ).fetchall()
    assert statuses == [("FINISHED",)]  # one run (its checkpoints' child runs aside), reopened and finished


def test_download_cache_filling(mirror, tmpfs, monkeypatch):
    _, root, host = mirror
    body = b"the cat sat on the mat .\n" * 4000  # 100 kB
    target = root / "owner/full/0123abc/coref/conll/a.conll"
    target.parent.mkdir(parents=True)
    target.write_bytes(body)
    corpus = replace(
        LITBANK,
        name="full",
        version="0123abc",
        url="owner/full/0123abc/coref/",
        files=(CorpusFile("conll/a.conll", hashlib.sha256(body).hexdigest(), len(body)),),
    )
    cache = tmpfs("32k")
    monkeypatch.setenv("HARNESS_DATA", str(cache))
    with pytest.raises(DiskFull) as error:
        download_corpus(corpus, host=host)
    message = str(error.value)
    assert "\n" not in message and message.startswith(
        f"{cache}/full-0123abc: no space left on the device while writing LitBank coreference 0123abc (1 files) ("
    )
    assert "about 100.0 kB needed" in message
    assert [path for path in cache.rglob("*") if path.is_file()] == []
    remount(cache, "1m")
    folder = download_corpus(corpus, host=host)
    assert (folder / "conll/a.conll").read_bytes() == body
