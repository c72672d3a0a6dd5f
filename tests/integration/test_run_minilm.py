"""End to end: real MiniLM fine-tuned on a small real RTE subset, compared, tracked, drawn."""

import pytest
import torch
from mlflow.tracking import MlflowClient

from harness.analyses.cosine import CosineSimilarity
from harness.cli import main
from harness.inputs.encoding import encode_examples
from harness.inputs.sampling import sample
from harness.model.forward import forward
from harness.model.loading import load_finetuned, load_tokenizer, prepare
from harness.results.store import read_json
from harness.run.tracking import HARNESS_RUNS
from harness.views.evaluation import dev_metrics
from tasks.loading import load_examples
from tasks.registry import get_task
from tests.fixtures import GLUE_DIR, harness_arguments, snapshot
from tests.integration.conftest import CHANGED_LAYER, glue_batches, run_on

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not GLUE_DIR.is_dir(), reason=f"real GLUE data not found at {GLUE_DIR}"),
]


ABLATION_EXAMPLES = 2  # the fewest the flag takes: the sweep's cost grows with them; what is checked does not
MAX_LENGTH = 48  # tokens: every pass (training, evaluation, the ablation's sweep) costs as its inputs' length


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("run")
    argv = harness_arguments(
        "run",
        "minilm",
        GLUE_DIR,
        root,
        *("--max-train-examples", "96", "--epochs", "1", "--learning-rate", "1e-4"),
        *("--max-eval-examples", "40", "--analyses", "cosine", "--max-length", str(MAX_LENGTH)),
    )
    assert main(argv) == 0
    (run_dir,) = (root / "out").glob("rte-minilm-seed42-*")
    return root, argv, run_dir


def test_summary_has_shapes_and_ranges(finished_run):
    _, _, run_dir = finished_run
    summary = read_json(run_dir / "summary.json")
    run = summary["run"]
    assert (run["task"], run["model"], run["seed"], run["num_eval_examples"]) == ("rte", "minilm", 42, 40)
    assert run_dir.name.endswith(run["key"][:8])
    stats = summary["analyses"]["cosine"]["result"]["per_pair"]["pretrained->finetuned"]
    per_head = torch.tensor(stats["per_head"])
    assert stats["num_examples"] == 40 and per_head.shape == (6, 12) and len(stats["per_layer"]) == 6
    assert ((per_head >= -1) & (per_head <= 1 + 1e-6)).all()
    assert (per_head < 0.99999).any()  # fine-tuning with lr 1e-4 moved some head
    scores = dev_metrics(summary["analyses"]["evaluation"])
    for checkpoint in ("pretrained", "finetuned"):
        assert 0.0 <= scores[checkpoint]["dev/accuracy"] <= 1.0
    assert scores["majority"]["dev/accuracy"] == pytest.approx(146 / 277)  # RTE dev: 146 not_entailment


def test_mlflow_parent_run_holds_params_curves_metrics_and_artifacts(finished_run):
    root, _, run_dir = finished_run
    client = MlflowClient(tracking_uri=f"sqlite:///{root}/mlflow.db")
    experiment = client.get_experiment_by_name("attention-shift")
    (run,) = client.search_runs([experiment.experiment_id], HARNESS_RUNS)
    assert run.info.run_name == run_dir.name and run.info.status == "FINISHED"
    assert run.data.params["finetune.max_train_examples"] == "96"
    # the minilm preset named, its epochs and learning rate overridden by the flags
    assert (run.data.params["finetune.recipe"], run.data.params["finetune.epochs"]) == ("minilm", "1.0")
    assert run.data.params["finetune.learning_rate"] == "0.0001"
    assert "dev_accuracy_finetuned" in run.data.metrics and "cosine_layer_6" in run.data.metrics
    assert len(client.get_metric_history(run.info.run_id, "train_loss")) >= 1
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"summary.json", "figures"} <= artifacts
    figures = {a.path for a in client.list_artifacts(run.info.run_id, "figures")}
    assert {"figures/cosine_per_head.png", "figures/cosine_per_layer.png"} <= figures


def test_second_run_reuses_checkpoint_and_results_and_rewrites_nothing_stored(finished_run):
    root, argv, run_dir = finished_run
    stored = snapshot(root / "out" / "store"), snapshot(root / "cache")
    before = read_json(run_dir / "summary.json")
    assert main(argv) == 0
    assert (snapshot(root / "out" / "store"), snapshot(root / "cache")) == stored
    assert read_json(run_dir / "summary.json") == before
    client = MlflowClient(tracking_uri=f"sqlite:///{root}/mlflow.db")
    experiment = client.get_experiment_by_name("attention-shift")
    assert len(client.search_runs([experiment.experiment_id], HARNESS_RUNS)) == 1


def test_figures_command_redraws_from_the_stored_summary(finished_run):
    _, argv, run_dir = finished_run
    figure = run_dir / "figures" / "cosine_per_head.png"
    figure.unlink()
    assert main(["figures", *argv[1:]]) == 0
    assert figure.is_file() and figure.read_bytes()[:4] == b"\x89PNG"


def test_cosine_is_one_before_the_changed_layer_and_not_in_it(minilm):
    result = run_on(
        CosineSimilarity, minilm["models"], minilm["tokenizer"], glue_batches(minilm["tokenizer"], "rte", 24)
    )
    per_head = torch.tensor(result["per_pair"]["pretrained->finetuned"]["per_head"])
    assert torch.allclose(per_head[:CHANGED_LAYER], torch.ones(CHANGED_LAYER, 12), atol=1e-5)
    assert (per_head[CHANGED_LAYER] < 0.99).all()


def test_ablate_scores_the_stored_fine_tuned_minilm_on_a_dev_sample(finished_run):
    root, argv, _ = finished_run
    checkpoints = snapshot(root / "cache")
    assert main(["ablate", *argv[1:], "--ablation-examples", str(ABLATION_EXAMPLES)]) == 0
    assert snapshot(root / "cache") == checkpoints  # the stored checkpoint is used, not retrained
    (summary,) = [
        read_json(path) for path in (root / "out").glob("*/summary.json") if "ablation" in read_json(path)["analyses"]
    ]
    tuned = summary["analyses"]["ablation"]["result"]["per_checkpoint"]["finetuned"]
    assert tuned["examples"] == ABLATION_EXAMPLES and tuned["variants"] > 2 * 6 * 13
    examples = sample(load_examples(get_task("rte"), "dev", GLUE_DIR), ABLATION_EXAMPLES, 42, in_order=True)
    (folder,) = (root / "cache").glob("rte-minilm-*/final")
    model = prepare(load_finetuned(folder), torch.device("cpu"), torch.float32)
    encoded = encode_examples(load_tokenizer("minilm"), examples, max_length=MAX_LENGTH, pair=True)
    predictions = forward(model, encoded).logits.argmax(-1)
    labels = torch.tensor([example.label for example in examples])
    assert tuned["intact"] == pytest.approx(float((predictions == labels).float().mean()))
    for mode in ("uniform", "zero"):
        deltas, low, high = (torch.tensor(tuned["heads"][mode][key]) for key in ("delta", "low", "high"))
        assert deltas.shape == (6, 12) and (low <= deltas + 1e-9).all() and (deltas <= high + 1e-9).all()
    normalised = torch.tensor(tuned["importance"]["normalised"])
    assert (normalised >= 0).all() and torch.allclose(normalised.norm(dim=1), torch.ones(6), atol=1e-6)
