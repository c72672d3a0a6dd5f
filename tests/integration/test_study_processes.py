"""``harness study`` end to end on the tiny BERT: every (task, seed) a child of one parent
MLflow run, reuse, a failing task reported while the rest go on, a killed study resumed, two
identical studies at once. Real subprocesses, real signals, the real SQLite store."""

from __future__ import annotations

import shutil
import signal
import sqlite3
from pathlib import Path

import pytest

from harness.results.store import read_json
from harness.run.tracking import CHECKPOINT_TAG
from tests.fixtures import made_once, snapshot, tiny_run_arguments
from tests.integration.test_faults import harness, metric_counts, start

pytestmark = pytest.mark.slow
SEEDS = 2
# The studies that are failed, killed or run twice at once: what they compare is stored and logged
# (the finished study's test checks its figures).
NO_FIGURES = ("--no-figures",)
WITH_PDF = ("--vector-formats", "pdf")  # the finished study's figures, as a paper's are made


def study_argv(tiny_model_dir: Path, data: Path, root: Path, tasks: str = "rte,mrpc,qnli", *extra: str) -> list[str]:
    """A study of the tiny model over ``tasks`` (the tiny GLUE folder has no QNLI), two seeds."""
    analyses = ("--analyses", "cosine", "surface", "patterns")
    run_flags = tiny_run_arguments(tiny_model_dir, data, root, *analyses, *extra)[3:]
    return ["study", "--tasks", tasks, "--seeds", str(SEEDS), *run_flags]


def runs(root: Path) -> list[dict[str, str]]:
    """Every MLflow run of the store, its checkpoints' child runs aside: status and tags."""
    with sqlite3.connect(root / "mlflow.db") as database:
        rows = database.execute("SELECT run_uuid, status FROM runs ORDER BY start_time").fetchall()
        tags = database.execute("SELECT run_uuid, key, value FROM tags").fetchall()
    found = [
        {"id": run_id, "status": status, **{key: value for owner, key, value in tags if owner == run_id}}
        for run_id, status in rows
    ]
    return [run for run in found if CHECKPOINT_TAG not in run]


def parent_and_children(root: Path) -> tuple[dict[str, str], list[dict[str, str]]]:
    everything = runs(root)
    (parent,) = [run for run in everything if run.get("harness.kind") == "study"]
    return parent, [run for run in everything if run is not parent]


def the_study(root: Path) -> dict:
    (path,) = (root / "out" / "studies").glob("*/study.json")
    return read_json(path)


@pytest.fixture(scope="session")
def finished_study(tiny_model_dir, tiny_data, tmp_path_factory) -> Path:
    """A whole study, once for the session, whichever pytest-xdist worker runs the tests (they read it)."""

    def finish(root: Path) -> None:
        done = harness(study_argv(tiny_model_dir, tiny_data, root, "rte,mrpc,qnli", *WITH_PDF))
        assert done.returncode == 0, done.stderr[-3000:]
        assert "skipped qnli: no data" in done.stdout and "QNLI/train.tsv not found" in done.stdout

    return made_once(tmp_path_factory, "study", finish)


def test_every_task_and_seed_is_a_child_of_one_finished_parent(finished_study):
    parent, children = parent_and_children(finished_study)
    assert parent["status"] == "FINISHED" and parent["harness.run_key"].startswith("study-")
    assert sorted((child["task"], child["seed"]) for child in children) == [
        ("mrpc", "42"),
        ("mrpc", "43"),
        ("rte", "42"),
        ("rte", "43"),
    ]
    assert all(
        child["mlflow.parentRunId"] == parent["id"]
        and child["status"] == "FINISHED"
        and child["study"] == parent["study"]
        for child in children
    )
    study = the_study(finished_study)
    assert list(study["tasks"]) == ["rte", "mrpc"] and study["skipped"].keys() == {"qnli"}
    assert all(entry["seeds"] == [42, 43] for entry in study["tasks"].values())
    accuracy = study["tasks"]["rte"]["metrics"]["dev_accuracy_finetuned"]
    assert accuracy["n"] == SEEDS and min(accuracy["values"]) <= accuracy["mean"] <= max(accuracy["values"])
    # tiny models learn nothing: the study names both tasks and judges no finding on them
    assert study["judged_tasks"] == [] and set(study["kept_out_of_findings"]) == {"rte", "mrpc"}
    assert study["kept_out_of_findings"]["rte"].startswith(
        "its fine-tuned model is clearly above the majority class on 0 of 2 seeds"
    )
    assert list(study["findings"]) == ["beats_majority"]
    counts = metric_counts(finished_study)
    assert counts["rte/dev_accuracy_finetuned"] == 1 and counts["mrpc/cosine_mean_std"] == 1
    figures = {path.name for path in (finished_study / "out" / "studies").glob("*/figures/*")}
    assert {
        "cosine_per_head_by_task.png",
        "cosine_per_head_by_task.pdf",
        "pattern_shares_by_task.png",
        "special_tokens_by_task.pdf",
        "dev_scores_by_task.md",
        "findings.md",
    } <= figures


def test_the_same_study_again_reuses_every_run(finished_study, tiny_model_dir, tiny_data):
    run_folders = {path: snapshot(path) for path in (finished_study / "out").glob("*-seed*")}
    before, counts = runs(finished_study), metric_counts(finished_study)
    again = harness(study_argv(tiny_model_dir, tiny_data, finished_study, "rte,mrpc,qnli", *WITH_PDF))
    assert again.returncode == 0, again.stderr[-3000:]
    assert {path: snapshot(path) for path in run_folders} == run_folders  # nothing rewritten
    assert runs(finished_study) == before and metric_counts(finished_study) == counts


def test_a_failing_task_is_reported_and_the_rest_go_on(tiny_model_dir, tiny_data, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(tiny_data, data)
    train = data / "glue" / "MRPC" / "train.tsv"
    good = train.read_text()
    train.write_text(good + "not a row\n")
    failed = harness(study_argv(tiny_model_dir, data, tmp_path, "rte,mrpc", *NO_FIGURES))
    assert failed.returncode == 1
    assert "failed: mrpc seed 42" in failed.stdout and "MRPC/train.tsv" in failed.stdout
    parent, children = parent_and_children(tmp_path)
    assert parent["status"] == "FAILED" and sorted(c["task"] for c in children) == ["rte", "rte"]
    assert list(the_study(tmp_path)["tasks"]) == ["rte"]

    train.write_text(good)  # the fix; the same command retries only what failed
    fixed = harness(study_argv(tiny_model_dir, data, tmp_path, "rte,mrpc", *NO_FIGURES))
    assert fixed.returncode == 0, fixed.stderr[-3000:]
    again, children = parent_and_children(tmp_path)
    assert again["id"] == parent["id"] and again["status"] == "FINISHED" and len(children) == 4
    assert metric_counts(tmp_path)["mrpc/dev_accuracy_finetuned"] == 1


@pytest.mark.parametrize("signal_name", ["SIGKILL", "SIGTERM"])
def test_a_killed_study_resumes_to_the_same_study(signal_name, finished_study, tiny_model_dir, tiny_data, tmp_path):
    argv = study_argv(tiny_model_dir, tiny_data, tmp_path, "rte,mrpc,qnli", *NO_FIGURES)
    stopped = harness(argv, ("study", signal_name, 3))  # the third (task, seed): two runs done
    expected = -signal.SIGKILL if signal_name == "SIGKILL" else 128 + signal.SIGTERM
    assert stopped.returncode == expected, stopped.stderr[-3000:]
    parent, children = parent_and_children(tmp_path)
    assert parent["status"] == ("RUNNING" if signal_name == "SIGKILL" else "KILLED") and len(children) == 2
    resumed = harness(argv)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    again, children = parent_and_children(tmp_path)
    assert again["id"] == parent["id"] and again["status"] == "FINISHED"
    assert len(children) == 4 and all(child["status"] == "FINISHED" for child in children)
    assert metric_counts(tmp_path) == metric_counts(finished_study)  # nothing lost, nothing twice
    assert the_study(tmp_path)["tasks"] == the_study(finished_study)["tasks"]


def test_two_identical_studies_at_once_both_complete(finished_study, tiny_model_dir, tiny_data, tmp_path):
    argv = study_argv(tiny_model_dir, tiny_data, tmp_path, "rte,mrpc,qnli", *NO_FIGURES)
    processes = [start(argv), start(argv)]
    outputs = [process.communicate(timeout=900) for process in processes]
    assert [process.returncode for process in processes] == [0, 0], [err[-3000:] for _, err in outputs]
    parent, children = parent_and_children(tmp_path)
    assert parent["status"] == "FINISHED" and len(children) == 4
    assert metric_counts(tmp_path) == metric_counts(finished_study)
