import json

from mlflow.tracking import MlflowClient

from harness.config import FineTuneConfig, RunConfig
from harness.finetune import sample
from harness.tracking import Tracker, flatten, training_curve


def test_cache_key_changes_with_every_hyperparameter():
    base = FineTuneConfig().cache_key("minilm", "rte")
    assert base == FineTuneConfig().cache_key("minilm", "rte")
    assert base != FineTuneConfig(seed=1).cache_key("minilm", "rte")
    assert base != FineTuneConfig(learning_rate=5e-5).cache_key("minilm", "rte")
    assert base != FineTuneConfig().cache_key("minilm", "mrpc")
    assert base != FineTuneConfig().cache_key("bert-base-uncased", "rte")
    assert base == FineTuneConfig().cache_key("minilm", "rte", "fp32")
    assert base == "70b2cf304d65b722"  # keys of existing caches must not change
    assert base != FineTuneConfig(group_by_length=True).cache_key("minilm", "rte")
    assert len({base, FineTuneConfig().cache_key("minilm", "rte", "bf16"),
                FineTuneConfig().cache_key("minilm", "rte", "fp16")}) == 3


def test_sample_is_seeded_and_bounded():
    items = list(range(100))
    assert sample(items, 10, 42) == sample(items, 10, 42) != sample(items, 10, 1)
    assert len(set(sample(items, 10, 42))) == 10
    assert sample(items, None, 42) is items and sample(items, 500, 0) is items


def test_tracker_reopens_the_same_parent_run(tmp_path):
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    config = RunConfig(task="rte", model="minilm", tracking_uri=uri)
    first = Tracker(config, run_key="k1")
    first.log_params(flatten("", config))
    first.log_metrics(training_curve([{"loss": 0.7, "step": 10}, {"loss": 0.5, "step": 20}, {"eval": 1}]))
    first.log_json({"a": 1}, "x/a.json")
    first.finish()
    again = Tracker(config, run_key="k1")
    again.log_params(flatten("", config))  # params are immutable: logging again must not fail
    again.finish()
    other = Tracker(config, run_key="k2")
    assert again.run_id == first.run_id != other.run_id
    client = MlflowClient(tracking_uri=uri)
    run = client.get_run(first.run_id)
    assert run.data.params["finetune.batch_size"] == "32" and run.data.params["task"] == "rte"
    assert [m.value for m in client.get_metric_history(first.run_id, "train_loss")] == [0.7, 0.5]
    assert run.data.tags["task"] == "rte" and run.info.status == "FINISHED"
    local = client.download_artifacts(first.run_id, "x/a.json", str(tmp_path))
    assert json.loads(open(local).read()) == {"a": 1}
