from mlflow.tracking import MlflowClient

from harness.config import RunConfig, TaskConfig
from harness.results.summary import flatten
from harness.run.tracking import EXPERIMENT, EXPERIMENT_KIND, Tracker, training_curve


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
