"""End to end: real MiniLM fine-tuned on a small real RTE subset, compared, tracked, drawn."""

import json

import pytest
import torch
from mlflow.tracking import MlflowClient

from harness.analyses.base import AnalysisContext
from harness.analyses.cosine import CosineSimilarity
from harness.attention import stream_attention
from harness.cli import main
from harness.encoding import batched
from harness.models import load_sequence_classifier, load_tokenizer
from tasks import get_task, load_examples
from tests.conftest import GLUE_DIR

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not GLUE_DIR.is_dir(), reason=f"real GLUE data not found at {GLUE_DIR}")]


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("run")
    argv = ["run", "--task", "rte", "--model", "minilm", "--data-dir", str(GLUE_DIR),
            "--max-train-examples", "96", "--epochs", "1", "--learning-rate", "1e-4",
            "--max-eval-examples", "40", "--analyses", "cosine", "--output-dir", str(root / "out"),
            "--cache-dir", str(root / "cache"), "--tracking-uri", f"sqlite:///{root}/mlflow.db"]
    assert main(argv) == 0
    return root, argv


def test_summary_has_shapes_and_ranges(finished_run):
    root, _ = finished_run
    summary = json.loads((root / "out" / "rte-minilm-seed42" / "summary.json").read_text())
    assert (summary["task"], summary["model"], summary["seed"]) == ("rte", "minilm", 42)
    assert summary["num_eval_examples"] == summary["cosine_num_examples"] == 40
    per_head = torch.tensor(summary["cosine_per_head"])
    assert per_head.shape == (6, 12)
    assert ((per_head >= -1) & (per_head <= 1 + 1e-6)).all()
    assert (per_head < 0.99999).any()  # fine-tuning with lr 1e-4 moved some head
    assert len(summary["cosine_per_layer"]) == 6
    for checkpoint in ("pretrained", "finetuned"):
        assert 0.0 <= summary["dev_metrics"][checkpoint]["dev/accuracy"] <= 1.0


def test_mlflow_parent_run_holds_params_curves_metrics_and_artifacts(finished_run):
    root, _ = finished_run
    client = MlflowClient(tracking_uri=f"sqlite:///{root}/mlflow.db")
    experiment = client.get_experiment_by_name("attention-shift")
    (run,) = client.search_runs([experiment.experiment_id])
    assert run.info.run_name == "rte-minilm-seed42" and run.info.status == "FINISHED"
    assert run.data.params["finetune.max_train_examples"] == "96"
    assert "dev_finetuned_dev_accuracy" in run.data.metrics and "cosine_layer_6" in run.data.metrics
    assert len(client.get_metric_history(run.info.run_id, "train_loss")) >= 1
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"summary.json", "figures", "analyses"} <= artifacts
    assert {a.path for a in client.list_artifacts(run.info.run_id, "analyses")} == {"analyses/cosine.json"}
    figures = {a.path for a in client.list_artifacts(run.info.run_id, "figures")}
    assert {"figures/cosine_per_head.png", "figures/cosine_per_layer.png"} <= figures


def test_second_run_reuses_checkpoint_and_results(finished_run):
    root, argv = finished_run
    summary_path = root / "out" / "rte-minilm-seed42" / "summary.json"
    before = json.loads(summary_path.read_text())
    assert main(argv) == 0
    assert json.loads(summary_path.read_text()) == before
    client = MlflowClient(tracking_uri=f"sqlite:///{root}/mlflow.db")
    experiment = client.get_experiment_by_name("attention-shift")
    assert len(client.search_runs([experiment.experiment_id])) == 1


def test_figures_command_redraws_from_the_stored_summary(finished_run, capsys):
    root, _ = finished_run
    figure = root / "out" / "rte-minilm-seed42" / "figures" / "cosine_per_head.png"
    figure.unlink()
    assert main(["figures", "--task", "rte", "--model", "minilm", "--output-dir", str(root / "out")]) == 0
    assert figure.is_file() and figure.read_bytes()[:4] == b"\x89PNG"


def test_minilm_against_itself_is_one_everywhere():
    task = get_task("rte")
    tokenizer = load_tokenizer("minilm")
    model = load_sequence_classifier("minilm", task).eval()
    checkpoints = {"pretrained": model, "finetuned": model}
    context = AnalysisContext(6, 12, tokenizer, checkpoints, "rte")
    analysis = CosineSimilarity(context)
    examples = load_examples(task, "dev", GLUE_DIR)[:24]
    for batch in stream_attention(checkpoints, batched(tokenizer, examples, 8, 128)):
        analysis.update(batch)
    assert torch.allclose(torch.tensor(analysis.result()["cosine_per_head"]), torch.ones(6, 12), atol=1e-5)
