"""Kovaleva et al.'s Table 1 baselines (``--baselines``): the classifier head trained alone on
the frozen pre-trained encoder, and the whole model from random initialisation, each with
the run's recipe, cached like the fine-tune and scored on dev beside it."""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import load_file

from harness.analyses.evaluation import Evaluation
from harness.cli import main
from harness.config import EnvironmentConfig, FineTuneConfig, RunConfig, TaskConfig
from harness.model.finetune import cache_key, training_model
from harness.model.loading import load_sequence_classifier
from harness.results.checkpoints import FINETUNED, FROZEN_ENCODER, PRETRAINED, RANDOM_INIT
from harness.results.store import FileHashes, read_json
from harness.run.plan import load_task_data
from harness.views.evaluation import EvaluationView, learning_warning, table_1_markdown
from harness.views.metrics import values
from tasks.registry import get_task
from tests.fixtures import snapshot, tiny_run_arguments
from tests.unit.analyses.test_evaluation import stored

RTE = get_task("rte")


def config_of(tiny_model_dir, **finetune) -> RunConfig:
    return RunConfig(
        TaskConfig(task="rte", model=str(tiny_model_dir)),
        FineTuneConfig(**finetune),
        environment=EnvironmentConfig(device="cpu", precision="fp32"),
    )


def test_the_frozen_baseline_trains_the_head_alone_and_the_random_one_starts_from_seeded_weights(tiny_model_dir):
    config = config_of(tiny_model_dir)
    frozen = training_model(config, RTE, FROZEN_ENCODER)
    trainable = {name for name, parameter in frozen.named_parameters() if parameter.requires_grad}
    assert trainable == {"classifier.weight", "classifier.bias"}
    pretrained = load_sequence_classifier(str(tiny_model_dir), RTE, head_seed=42).state_dict()
    random = training_model(config, RTE, RANDOM_INIT).state_dict()
    name = "bert.encoder.layer.0.attention.self.query.weight"
    assert not torch.equal(random[name], pretrained[name])
    assert torch.equal(random[name], training_model(config, RTE, RANDOM_INIT).state_dict()[name])
    assert not torch.equal(
        random[name], training_model(config_of(tiny_model_dir, seed=1), RTE, RANDOM_INIT).state_dict()[name]
    )


def test_each_baseline_has_its_own_cache_key_and_asking_for_them_leaves_the_fine_tune_key_alone(
    tiny_model_dir, tiny_data
):
    config = config_of(tiny_model_dir)
    config.task.data_dir = tiny_data / "glue"
    data = load_task_data(config, FileHashes())
    keys = {variant: cache_key(config, data, variant) for variant in (FINETUNED, FROZEN_ENCODER, RANDOM_INIT)}
    assert len(set(keys.values())) == 3
    assert cache_key(config_of(tiny_model_dir, baselines=True), data) == keys[FINETUNED]


@pytest.fixture(scope="module")
def with_baselines(tiny_model_dir, tiny_data, tmp_path_factory):
    root = tmp_path_factory.mktemp("baselines")
    argv = tiny_run_arguments(tiny_model_dir, tiny_data, root, "--analyses", "cosine", "--baselines")
    assert main(argv) == 0
    (summary_path,) = (root / "out").glob("*/summary.json")
    return root, argv, read_json(summary_path), summary_path.parent


@pytest.mark.slow
def test_a_run_with_baselines_scores_all_four_checkpoints_and_compares_the_fine_tune_with_each(
    with_baselines, tiny_model_dir
):
    root, _, summary, _ = with_baselines
    evaluation = summary["analyses"][Evaluation.name]
    assert evaluation["checkpoints"] == [PRETRAINED, FINETUNED, FROZEN_ENCODER, RANDOM_INIT]
    assert evaluation["pairs"] == [[PRETRAINED, FINETUNED], [FROZEN_ENCODER, FINETUNED], [RANDOM_INIT, FINETUNED]]
    assert summary["analyses"]["cosine"]["checkpoints"] == [PRETRAINED, FINETUNED]  # baselines: dev scores only
    weights = {
        path.parent.name.split("-rte-")[0]: load_file(str(path / "model.safetensors"))
        for path in (root / "cache").glob("*/final")
    }
    tuned = next(value for name, value in weights.items() if name not in (FROZEN_ENCODER, RANDOM_INIT))
    original = load_file(str(tiny_model_dir / "model.safetensors"))
    encoder = [name for name in original if name.startswith("bert.")]
    assert all(torch.equal(weights[FROZEN_ENCODER][name], original[name]) for name in encoder)  # frozen: untouched
    assert not torch.equal(weights[FROZEN_ENCODER]["classifier.weight"], original["classifier.weight"])
    assert not any(
        torch.equal(weights[RANDOM_INIT][name], original[name])
        for name in encoder
        if "weight" in name and "LayerNorm" not in name
    )
    assert not all(torch.equal(tuned[name], original[name]) for name in encoder)
    scores = evaluation["result"]["per_checkpoint"]
    assert all("dev/accuracy" in scores[name]["metrics"] for name in (FROZEN_ENCODER, RANDOM_INIT))


@pytest.mark.slow
def test_the_run_draws_table_1_and_a_second_run_reuses_every_checkpoint_and_result(with_baselines, capsys):
    root, argv, _, run_dir = with_baselines
    table = (run_dir / "figures" / "evaluation_table.md").read_text()
    for column in ("majority class", "pre-trained, frozen encoder", "random init + FT", "pre-trained + FT"):
        assert column in table
    assert "(52.7)" not in table  # the paper's numbers only beside bert-base-uncased
    before = snapshot(root / "cache"), snapshot(root / "out" / "store")
    assert main(argv) == 0
    assert (snapshot(root / "cache"), snapshot(root / "out" / "store")) == before
    assert "cached checkpoint" in capsys.readouterr().out


@pytest.mark.slow
def test_table_1_puts_the_papers_numbers_beside_ours_for_bert_base(with_baselines):
    _, _, summary, _ = with_baselines
    table = table_1_markdown(summary["analyses"][Evaluation.name], {**summary["run"], "model": "bert-base-uncased"})
    row = table.splitlines()[6]
    assert row.startswith("| RTE |") and row.count("(52.7)") == 2 and "(64.6)" in row


def test_a_fine_tune_that_is_not_clearly_above_the_frozen_baseline_is_flagged():
    labels = [0] * 60 + [1] * 40
    good = stored(labels[:90] + [0] * 10, labels)  # 94% right
    per_checkpoint = {PRETRAINED: stored([0] * 100, labels), FINETUNED: good, FROZEN_ENCODER: stored(labels, labels)}
    pairs = [(PRETRAINED, FINETUNED), (FROZEN_ENCODER, FINETUNED)]
    comparisons = Evaluation.compare(per_checkpoint, pairs)
    assert comparisons["pretrained->finetuned"]["learned"]  # clearly above the majority class
    assert not comparisons["frozen-encoder->finetuned"]["learned"]  # but the frozen head alone does better
    entry = {"pairs": [list(pair) for pair in pairs], "result": {"per_pair": comparisons}}
    assert learning_warning(entry).startswith("warning: finetuned is not clearly above the frozen-encoder baseline")
    with_majority = {name: {**stats, "majority": {"dev/accuracy": 0.6}} for name, stats in per_checkpoint.items()}
    metrics = values(EvaluationView.metrics({**entry, "result": {**entry["result"], "per_checkpoint": with_majority}}))
    assert metrics["learned_finetuned"] == 0.0 and metrics["above_frozen-encoder_high_finetuned"] < 0
