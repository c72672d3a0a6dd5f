import random
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from harness.cli import main
from harness.config import RunConfig, TaskConfig
from harness.results.summary import flatten
from harness.run.tracking import EXPERIMENT, EXPERIMENT_KIND, Tracker, check_store, damage, training_curve
from tasks.errors import InputError
from tests.fixtures import store_uri, tiny_run_arguments


@pytest.mark.slow
def test_tracker_reopens_the_same_parent_run_and_logs_nothing_twice(tmp_path):
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    config = RunConfig(TaskConfig(task="rte"))
    first = Tracker(uri, "k1", "rte-minilm", {"task": "rte"})
    first.log_params(flatten("", config))
    first.log_metrics(training_curve([{"loss": 0.7, "step": 10}, {"loss": 0.5, "step": 20}, {"eval": 1}]))
    artifact = tmp_path / "a.json"
    artifact.write_text('{"a": 1}')
    first.log_artifact(artifact, "x")
    first.finish()
    again = Tracker(uri, "k1", "rte-minilm", {"task": "rte"})
    again.log_params(flatten("", config))  # params are immutable: logging again must not fail
    again.log_metrics([("train_loss", 0.1, 30)])  # already logged: skipped, one curve stays
    again.finish()
    other = Tracker(uri, "k2", "rte-minilm", {"task": "rte"})
    assert again.run_id == first.run_id != other.run_id
    client = MlflowClient(tracking_uri=uri)
    run = client.get_run(first.run_id)
    assert run.data.params["finetune.batch_size"] == "32" and run.data.params["task.task"] == "rte"
    assert [m.value for m in client.get_metric_history(first.run_id, "train_loss")] == [0.7, 0.5]
    assert run.data.tags["task"] == "rte" and run.info.status == "FINISHED"
    assert [item.path for item in client.list_artifacts(first.run_id, "x")] == ["x/a.json"]


@pytest.mark.slow
def test_the_experiment_opens_as_model_training_in_the_mlflow_ui(tmp_path):
    """MLflow 3's UI shows an experiment without the kind tag in its GenAI mode; a store made
    before the tag existed gets it when the harness next opens it."""
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    Tracker(uri, "k1", "rte-minilm", {}).finish()
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name(EXPERIMENT)
    assert experiment.tags[EXPERIMENT_KIND[0]] == "custom_model_development"
    client.delete_experiment_tag(experiment.experiment_id, EXPERIMENT_KIND[0])
    Tracker(uri, "k2", "rte-minilm", {}).finish()
    assert client.get_experiment_by_name(EXPERIMENT).tags[EXPERIMENT_KIND[0]] == "custom_model_development"


def damaged_store(tmp_path, runs: int = 20) -> Path:
    """A store with ``runs`` finished runs, then 8 KB of random bytes written into its middle."""
    uri = store_uri(tmp_path)
    for index in range(runs):
        tracker = Tracker(uri, f"k{index}", f"run {index}", {"task": "rte"})
        tracker.log_params(flatten("", RunConfig(TaskConfig(task="rte"))))
        tracker.log_metrics([(f"metric_{m}", 0.5, 0) for m in range(50)])
        tracker.finish()
    database = tmp_path / "mlflow.db"
    with database.open("r+b") as handle:
        handle.seek(database.stat().st_size // 2)
        handle.write(random.Random(0).randbytes(8192))
    return database


@pytest.mark.slow
def test_a_damaged_store_is_one_line_and_takes_no_run(tiny_model_dir, tiny_data, tmp_path, capsys):
    database = damaged_store(tmp_path)
    assert damage(database) is not None
    before = database.read_bytes()
    capsys.readouterr()  # MLflow's notices of making the store above
    assert main(tiny_run_arguments(tiny_model_dir, tiny_data, tmp_path)) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"error: the MLflow store {database} is damaged (SQLite: ") and "--tracking-uri" in line
    assert database.read_bytes() == before  # nothing logged into it
    assert not [path for path in (tmp_path / "cache").rglob("*") if path.is_file()]  # no fine-tuning, no lock


def test_a_store_whose_header_is_damaged_is_said_to_be_so(tmp_path):
    database = damaged_store(tmp_path, runs=1)
    with database.open("r+b") as handle:
        handle.write(b"not SQLite at all")
    with pytest.raises(InputError, match="is damaged \\(SQLite: file is not a database\\)"):
        check_store(f"sqlite:///{database}")


def test_a_whole_store_passes_its_check(tmp_path):
    Tracker(store_uri(tmp_path), "k1", "run", {}).finish()
    assert damage(tmp_path / "mlflow.db") is None
    check_store(f"sqlite:///{tmp_path}/absent.db")  # a store yet to be made is not damaged
