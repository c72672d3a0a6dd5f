"""Fault injection: real processes, real signals, torn and edited files, concurrent runs, hostile
input. One slow file a contributor runs to see the README's guarantees ("Interruptions,
concurrent runs, bad input") hold:

- kills: every case runs ``harness run`` in a process of its own (started warm: `warm_harness`) on
  the tiny BERT (two epochs, so a kill in the second resumes from the first epoch's checkpoint),
  stops it with SIGKILL, SIGTERM or SIGINT at a chosen call inside one phase (`fault_injector`),
  checks how it ended, runs the same command again and checks that the rerun's summary and
  fine-tuned weights equal an uninterrupted run's, that MLflow holds exactly one FINISHED run for
  the key with each metric logged exactly as often as in the uninterrupted run (the seconds of the
  sources streamed before the kill too), and that no lock file or temporary file stays; a kill
  while figures are saved leaves a temporary file that the next drawing removes;
- concurrency: identical and different runs started together;
- damaged stores: torn files are recomputed, an edited stored result is one line naming it;
- hostile input, in real ``python -m harness`` processes: specs of nested YAML aliases, deep
  nesting or other bytes than UTF-8, names that leave their folder, numbers past any range, each
  one line, exit 2, in a few MB.

Elsewhere, each in its own tier: every bad input's exact line, in process (tests/unit/run/
test_bad_inputs.py), full disks (tests/unit/run/test_full_disk.py), a damaged MLflow store
(tests/unit/run/test_tracking.py), an edited summary and the command that rebuilds it on a copied
run folder (tests/unit/run/test_pipeline.py), hostile texts in the report and maps pages
(tests/integration/test_report_browser.py).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from harness.results.store import read_json
from harness.run.tracking import CHECKPOINT_TAG
from tests.fixtures import MAIN_REPORTING_IMPORTS, STORE, TINY_RECIPE, harness_arguments, made_once, tiny_run_arguments
from tests.integration.warm_harness import REPOSITORY, HarnessProcess, completed

SIGNALS = ("SIGKILL", "SIGTERM", "SIGINT")
# phase -> the call of its hooked function that is interrupted (see fault_injector.HOOKS)
PHASES = {
    "training": 5,  # the 5th optimisation step: epoch 2 of 2 (3 steps per epoch), after checkpoint-3
    "checkpoint": 1,  # writing checkpoint-3: weights on disk, optimizer and scheduler not
    "analyses": 4,  # the 4th batch streamed through the checkpoints, some sources done
    "results": 3,  # half-way through writing a stored result (write 1 is the fine-tune's result.json)
    "mlflow": 2,  # the second log_batch: params logged, metrics not
}
RESUME_HINT = "interrupted: re-run the same command to resume (finished work is kept)"

pytestmark = pytest.mark.slow


def harness(argv: list[str], injector: tuple[str, str, int] | None = None) -> subprocess.CompletedProcess:
    """``harness <argv>`` in a process of its own, started warm (`warm_harness`), under the
    fault injector's ``(phase, signal, call)`` when given; waits for it."""
    return completed(argv, injector)


def start(argv: list[str]) -> HarnessProcess:
    """``harness <argv>`` started in a process of its own (`subprocess.Popen`'s interface)."""
    return HarnessProcess(argv)


def the_summary(root: Path) -> dict:
    (path,) = (root / "out").glob("*/summary.json")
    return read_json(path)


def the_weights(root: Path) -> bytes:
    (path,) = (root / "cache").glob("*/final/model.safetensors")
    return path.read_bytes()


def run_states(root: Path) -> list[tuple[str, str | None]]:
    """(status, run key tag) of every MLflow run, read straight from the SQLite store (the runs,
    not their checkpoints' child runs)."""
    with sqlite3.connect(root / "mlflow.db") as database:
        return database.execute(
            "SELECT r.status, t.value FROM runs r LEFT JOIN tags t "
            "ON t.run_uuid = r.run_uuid AND t.key = 'harness.run_key' "
            f"WHERE r.run_uuid NOT IN (SELECT run_uuid FROM tags WHERE key = '{CHECKPOINT_TAG}') "
            "ORDER BY r.start_time"
        ).fetchall()


def metric_counts(root: Path) -> Counter:
    """How many values each metric has, over every run (a duplicate would show as one more)."""
    with sqlite3.connect(root / "mlflow.db") as database:
        return Counter(dict(database.execute("SELECT key, COUNT(*) FROM metrics GROUP BY key").fetchall()))


def assert_logged_as_in(root: Path, reference: Path) -> None:
    """Every metric has as many values as in the uninterrupted run: none lost, none twice (the
    ``seconds_<source>`` of a source streamed before a kill are logged by the attempt that resumes)."""
    assert metric_counts(root) == metric_counts(reference)


def assert_nothing_left_over(root: Path) -> None:
    """No lock file, pid file or temporary file of an atomic write anywhere under ``root``."""
    assert not [path for path in root.rglob("*") if path.name.endswith((".lock", ".lock.pid")) or ".tmp" in path.name]


def run_argv(tiny_model_dir: Path, tiny_data: Path, root: Path, *extra: str) -> list[str]:
    """Two epochs; no figures (no phase draws: what the cases compare is stored and logged)."""
    return tiny_run_arguments(tiny_model_dir, tiny_data, root, "--epochs", "2", "--no-figures", *extra)


@pytest.fixture(scope="session")
def reference(tiny_model_dir, tiny_data, tmp_path_factory) -> Path:
    """An uninterrupted run: what every interrupted and resumed run must end as (one for the
    session, whichever pytest-xdist worker runs the cases)."""

    def finish(root: Path) -> None:
        finished = harness(run_argv(tiny_model_dir, tiny_data, root))
        assert finished.returncode == 0, finished.stderr[-3000:]

    return made_once(tmp_path_factory, "uninterrupted", finish)


@pytest.mark.parametrize("signal_name", SIGNALS)
@pytest.mark.parametrize("phase", PHASES)
def test_an_interrupted_run_resumes_to_the_uninterrupted_result(
    phase, signal_name, reference, tiny_model_dir, tiny_data, tmp_path
):
    argv = run_argv(tiny_model_dir, tiny_data, tmp_path)
    stopped = harness(argv, (phase, signal_name, PHASES[phase]))
    if signal_name == "SIGKILL":
        assert stopped.returncode == -signal.SIGKILL, stopped.stderr[-3000:]
        assert [status for status, _ in run_states(tmp_path)] == ["RUNNING"]
    else:
        assert stopped.returncode == 128 + signal.Signals[signal_name], stopped.stderr[-3000:]
        assert stopped.stderr.strip().splitlines()[-1] == RESUME_HINT
        assert [status for status, _ in run_states(tmp_path)] == ["KILLED"]
    if phase == "checkpoint":
        assert any((tmp_path / "cache").glob("*/checkpoint-3"))  # the torn checkpoint is there to trip on

    resumed = harness(argv)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert the_summary(tmp_path) == the_summary(reference)
    assert the_weights(tmp_path) == the_weights(reference)
    assert not list((tmp_path / "cache").glob("*/checkpoint-*"))  # final/ written: resuming state deleted
    ((status, key),) = run_states(tmp_path)
    assert status == "FINISHED" and key == the_summary(reference)["run"]["key"]
    assert_logged_as_in(tmp_path, reference)
    assert_nothing_left_over(tmp_path)
    if phase == "checkpoint":
        assert any((tmp_path / "cache").glob("*/incomplete-checkpoint-3-*"))
        assert "set aside the incomplete Trainer checkpoint" in resumed.stderr
    if phase == "training":  # both parts of the training are counted (resumed from checkpoint-3)
        (result,) = (tmp_path / "cache").glob("*/final/result.json")
        stored = read_json(result)
        assert stored["train_seconds"] > stored["log_history"][-1]["train_runtime"]


def test_torn_stored_files_are_recomputed_not_a_crash(reference, tiny_model_dir, tiny_data, tmp_path):
    argv = run_argv(tiny_model_dir, tiny_data, tmp_path)
    assert harness(argv).returncode == 0
    (summary,) = (tmp_path / "out").glob("*/summary.json")
    (tuned,) = (tmp_path / "cache").glob("*/final/result.json")
    results = sorted((tmp_path / "out" / "store").glob("*/*.json"))
    for path in (summary, tuned, *results[::3]):
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    resumed = harness(argv)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert the_summary(tmp_path) == the_summary(reference)
    assert all(isinstance(read_json(path), dict) for path in (summary, tuned, *results))
    assert [status for status, _ in run_states(tmp_path)] == ["FINISHED"]
    assert_logged_as_in(tmp_path, reference)


def test_identical_runs_started_together_train_once_and_log_once(reference, tiny_model_dir, tiny_data, tmp_path):
    argv = run_argv(tiny_model_dir, tiny_data, tmp_path)
    processes = [start(argv), start(argv)]
    outputs = [process.communicate(timeout=900) for process in processes]
    assert [process.returncode for process in processes] == [0, 0], [err[-3000:] for _, err in outputs]
    assert sum("wall time: fine-tuning" in out for out, _ in outputs) == 1  # the other: "cached checkpoint"
    assert the_summary(tmp_path) == the_summary(reference)
    assert [status for status, _ in run_states(tmp_path)] == ["FINISHED"]
    assert_logged_as_in(tmp_path, reference)


def test_different_runs_started_together_on_a_fresh_store_both_finish(tiny_model_dir, tiny_data, tmp_path):
    argvs = [run_argv(tiny_model_dir, tiny_data, tmp_path, "--seed", seed, "--analyses", "cosine") for seed in "12"]
    (tmp_path / STORE).unlink()  # fresh: `output_arguments` starts a store as a copy of an empty one
    processes = [start(argv) for argv in argvs]
    outputs = [process.communicate(timeout=900) for process in processes]
    assert [process.returncode for process in processes] == [0, 0], [err[-3000:] for _, err in outputs]
    states = run_states(tmp_path)
    assert [status for status, _ in states] == ["FINISHED", "FINISHED"] and len({key for _, key in states}) == 2


def test_a_failed_retry_never_turns_a_finished_run_into_a_failed_one(reference, tiny_model_dir, tiny_data, tmp_path):
    argv = run_argv(tiny_model_dir, tiny_data, tmp_path)
    assert harness(argv).returncode == 0
    for path in (tmp_path / "out" / "store" / "cosine").glob("*.json"):
        path.unlink()  # the retry has work to do, and is stopped while doing it
    stopped = harness(argv, ("analyses", "SIGTERM", 1))
    assert stopped.returncode == 128 + signal.SIGTERM
    states = run_states(tmp_path)
    assert states[0] == ("FINISHED", the_summary(reference)["run"]["key"])
    assert [status for status, key in states[1:]] == ["KILLED"] and states[1][1] is None  # its own record
    assert harness(argv).returncode == 0
    assert [status for status, key in run_states(tmp_path) if key] == ["FINISHED"]
    assert_logged_as_in(tmp_path, reference)


def finetune_argv(tiny_model_dir: Path, tiny_data: Path, root: Path) -> list[str]:
    """``harness finetune`` of the fault cases' recipe (two epochs of three steps), keeping the model at
    steps 2 and 4 of 6 (a third and two thirds of the training)."""
    return harness_arguments(
        "finetune",
        tiny_model_dir,
        tiny_data / "glue",
        root,
        *TINY_RECIPE,
        "--epochs",
        "2",
        "--trajectory",
        "0.34",
        "0.67",
    )


def test_a_killed_fine_tuning_resumes_with_the_checkpoints_kept_on_the_way(tiny_model_dir, tiny_data, tmp_path):
    """Killed at step 5 (after step 4's checkpoint was kept, and after the epoch checkpoint at step 3):
    the rerun resumes from step 3, passes step 4 again, and ends with the same kept checkpoints and
    weights as a fine-tuning never interrupted."""
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    assert harness(finetune_argv(tiny_model_dir, tiny_data, whole)).returncode == 0
    stopped = harness(finetune_argv(tiny_model_dir, tiny_data, killed), ("training", "SIGKILL", PHASES["training"]))
    assert stopped.returncode == -signal.SIGKILL
    assert {path.name for path in killed.glob("cache/*/trajectory/step-*")} == {"step-2", "step-4"}
    assert harness(finetune_argv(tiny_model_dir, tiny_data, killed)).returncode == 0

    def kept(root: Path) -> dict[str, bytes]:
        return {
            path.parent.name: path.read_bytes() for path in root.glob("cache/*/trajectory/step-*/model.safetensors")
        }

    assert kept(killed) == kept(whole) and set(kept(whole)) == {"step-2", "step-4"}
    assert the_weights(killed) == the_weights(whole)
    (result,) = killed.glob("cache/*/final/result.json")
    assert [point["step"] for point in read_json(result)["trajectory"]] == [2, 4]


def test_a_kill_while_figures_are_saved_leaves_a_temporary_file_the_next_drawing_removes(reference, tmp_path):
    """SIGKILL after a figure's PDF is written and before its rename: the half-done drawing leaves
    its temporary file (nothing runs in a killed process); the next drawing removes it, and the
    figures are whole."""
    shutil.copytree(reference, tmp_path, dirs_exist_ok=True)
    (folder,) = (path.parent for path in (tmp_path / "out").glob("*/summary.json"))
    argv = ["figures", str(folder), "--analyses", "cosine", "--vector-formats", "pdf"]
    stopped = harness(argv, ("figures", "SIGKILL", 2))  # the 2nd file saved: the first figure's PDF
    assert stopped.returncode == -signal.SIGKILL
    (orphan,) = (folder / "figures").glob(".*.tmp.pdf")
    drawn = harness(argv)
    assert drawn.returncode == 0, drawn.stderr[-3000:]
    assert not orphan.exists() and not list((folder / "figures").glob(".*tmp*"))
    assert all(path.with_suffix(".pdf").is_file() for path in (folder / "figures").glob("cosine*.png"))


def test_a_stored_result_edited_by_hand_is_one_line_naming_it_and_nothing_is_built_from_it(
    reference, tiny_model_dir, tiny_data, tmp_path
):
    """A dev accuracy changed in the evaluation's stored result (still valid JSON, still its
    identity): the rerun that would rebuild the summary from it stops with one line naming the file;
    the summary and figures keep what was computed."""
    shutil.copytree(reference, tmp_path, dirs_exist_ok=True)
    (summary_path,) = (tmp_path / "out").glob("*/summary.json")
    summary_path.unlink()  # the rerun rebuilds the summary from the stored results
    for path in (tmp_path / "out" / "store" / "evaluation").glob("*.json"):
        stored = json.loads(path.read_text())
        stored["result"]["metrics"] = {key: 0.9508 for key in stored["result"]["metrics"]}
        path.write_text(json.dumps(stored))
    rerun = harness(run_argv(tiny_model_dir, tiny_data, tmp_path))
    assert rerun.returncode == 2, rerun.stderr[-3000:]
    (line,) = rerun.stderr.strip().splitlines()[-1:]
    assert line.startswith("error: " + str(tmp_path / "out" / "store" / "evaluation")) and line.endswith(
        ".json: not what the harness wrote (its content differs from the SHA-256 stored in it); delete it and "
        "run the same command again: it alone is recomputed"
    )
    assert not summary_path.exists()
    assert_nothing_left_over(tmp_path)


LAUGHS = "\n".join(
    ["name: laughs", "data_files: {train: train.csv, validation: dev.csv}", "text_fields: text", "labels:"]
    + [f"  - &a [{', '.join(['lol'] * 9)}]"]
    + [f"  - &{name} [{', '.join([f'*{below}'] * 9)}]" for below, name in zip("abcdefgh", "bcdefghi")]
)
LABELLED = "text,label\nthe cat sat,pos\nthe dog ran,neg\n"
HOSTILE = {  # spec file name -> (its bytes, what the one line says)
    "laughs.yaml": (LAUGHS.encode(), "laughs.yaml:5: YAML anchors and aliases (&name, *name) are not taken"),
    "deep.toml": (b"x = " + b"[" * 5000 + b"]" * 5000, "deep.toml: nested more than 8 tables or lists deep"),
    "latin.yaml": (b"text_fields: text\nname: caf\xe9\n", "latin.yaml:2: not UTF-8 text (byte b'\\xe9'"),
    "escape.yaml": (
        b"name: ../../../escaped/run\ndata_files: {train: train.csv, validation: dev.csv}\ntext_fields: text\n",
        "escape.yaml: name '../../../escaped/run' holds a path separator",
    ),
    "outside.yaml": (
        b"dataset: csv\ndata_files: {train: ../../../../../../etc/passwd}\ntext_fields: text\n",
        "outside.yaml: data file 'train' ",
    ),
    "unlabelled.yaml": (  # its data read through `datasets` before torch is imported
        b"data_files: {train: unlabelled.csv, validation: dev.csv}\ntext_fields: text\n",
        "split 'train', unlabelled.csv line 4 has no label (an empty cell, NaN or null)",
    ),
}


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_spec_is_one_line_before_any_model_library_loads_in_a_few_mb(
    name, tiny_model_dir, tiny_data, tmp_path
):
    """In a fresh process, as ``python -m harness run``: exit 2, one line, no traceback, nothing
    written, torch, transformers and MLflow never imported, its peak memory a small part of theirs."""
    content, says = HOSTILE[name]
    spec = tmp_path / "specs" / name
    spec.parent.mkdir()
    spec.write_bytes(content)
    for table, text in (("train.csv", LABELLED), ("dev.csv", LABELLED), ("unlabelled.csv", LABELLED + "he sat,\n")):
        (spec.parent / table).write_text(text)
    argv = tiny_run_arguments(tiny_model_dir, tiny_data, tmp_path / "run", "--task", str(spec))
    cache = {"HF_DATASETS_CACHE": str(tmp_path / "datasets")}  # `datasets`' cache, not the user's
    process = subprocess.run(
        [sys.executable, "-c", MAIN_REPORTING_IMPORTS, *argv],
        capture_output=True,
        text=True,
        cwd=REPOSITORY,
        env=os.environ | cache,
    )
    said, (imported, peak) = process.stderr, process.stdout.strip().split("|")
    assert process.returncode == 2 and len(said.strip().splitlines()) == 1, said[-3000:]
    assert says in said and len(said) < 600 and imported == ""
    assert int(peak) < (300_000 if name == "unlabelled.yaml" else 100_000)  # kB; a run's imports take 640 MB
    assert not (tmp_path / "run" / "out").exists() and not (tmp_path / "escaped").exists()
