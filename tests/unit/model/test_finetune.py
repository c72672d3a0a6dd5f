import json
import os
import subprocess
import sys
from dataclasses import asdict, replace
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file
from transformers import TrainingArguments
from transformers.trainer_callback import TrainerControl, TrainerState

from harness.cli import build_parser, configs_from, main
from harness.config import EnvironmentConfig, FineTuneConfig, RunConfig, TaskConfig
from harness.model.dropout import FastDropout
from harness.model.finetune import (
    Layout,
    QuietProgress,
    cache_key,
    checkpoint_complete,
    last_checkpoint,
    training_model,
)
from harness.model.forward import IMPLEMENTATION
from harness.model.loading import load_finetuned
from harness.results.store import FileHashes, key_of
from harness.run.plan import load_task_data
from tasks.errors import InputError
from tasks.registry import get_task
from tests.fixtures import TINY_RECIPE, harness_arguments, snapshot


def test_cache_key_changes_with_every_hyperparameter_and_the_data(tiny_data, tmp_path):
    config = RunConfig(TaskConfig(task="rte", data_dir=tiny_data / "glue"))
    data = load_task_data(config, FileHashes())
    base = cache_key(config, data)
    assert base == cache_key(config, load_task_data(config, FileHashes()))
    for change in (
        dict(seed=1),
        dict(learning_rate=5e-5),
        dict(batch_size=16),
        dict(epochs=1.0),
        dict(random_order=True),
        dict(torch_dropout=True),
        dict(max_train_examples=10),
        dict(reinit_layers=1),
    ):
        assert cache_key(replace(config, finetune=FineTuneConfig(**change)), data) != base, change
    same_numbers = FineTuneConfig(recipe="minilm", learning_rate=2e-5, epochs=3.0)  # a name, not a weight
    assert cache_key(replace(config, finetune=same_numbers), data) == base
    assert cache_key(replace(config, task=replace(config.task, max_length=64)), data) != base
    copy = tmp_path / "glue"
    (copy / "RTE").mkdir(parents=True)
    for split in ("train", "dev"):
        text = (tiny_data / "glue" / "RTE" / f"{split}.tsv").read_text()
        (copy / "RTE" / f"{split}.tsv").write_text(text if split == "dev" else text + "99\ta\tb\tentailment\n")
    edited = replace(config, task=TaskConfig(task="rte", data_dir=copy))
    assert cache_key(edited, load_task_data(edited, FileHashes())) != base


def test_the_cache_key_of_a_run_without_re_initialised_layers_is_the_one_it_had_before_the_flag(tiny_data):
    """Checkpoints cached before --reinit-layers and --trajectory existed keep their key: the unset
    flags are not in it."""
    config = RunConfig(TaskConfig(task="rte", data_dir=tiny_data / "glue"))
    data = load_task_data(config, FileHashes())
    earlier = {
        name: value
        for name, value in asdict(config.finetune).items()
        if name not in ("baselines", "recipe", "reinit_layers", "trajectory")
    }
    assert cache_key(config, data) == key_of(
        {
            "model": config.task.model,
            "task": "rte",
            "max_length": 128,
            "data": data.identity,
            "precision": "auto",
            **earlier,
        }
    )


def test_re_initialised_top_layers_are_drawn_afresh_and_the_rest_kept(tiny_model_dir):
    """Mosbach et al.'s lever: the pooler and the top layer start from the model's own initialisation
    (seeded: the same draw for the same seed), every lower weight stays pre-trained."""
    task = TaskConfig(task="rte", model=str(tiny_model_dir))
    environment = EnvironmentConfig(device="cpu", precision="fp32")

    def weights(reinit: int, seed: int = 42) -> dict[str, torch.Tensor]:
        config = RunConfig(task, FineTuneConfig(reinit_layers=reinit, seed=seed), environment=environment)
        return {
            name: value.detach().clone() for name, value in training_model(config, get_task("rte")).named_parameters()
        }

    kept, fresh = weights(0), weights(1)
    changed = {name for name in kept if not torch.equal(kept[name], fresh[name])}
    assert any(name.startswith("bert.encoder.layer.1.") for name in changed) and "bert.pooler.dense.weight" in changed
    assert not any(name.startswith(("bert.encoder.layer.0.", "bert.embeddings.")) for name in changed)
    again = weights(1)
    assert all(torch.equal(fresh[name], again[name]) for name in changed)
    assert not torch.equal(weights(1, seed=7)["bert.pooler.dense.weight"], fresh["bert.pooler.dense.weight"])


def test_cpu_training_uses_the_fast_dropout_unless_torch_dropout_is_asked_for(tiny_model_dir):
    task = TaskConfig(task="rte", model=str(tiny_model_dir))
    for torch_dropout, attention, fast in ((False, IMPLEMENTATION, True), (True, "sdpa", False)):
        config = RunConfig(
            task,
            FineTuneConfig(torch_dropout=torch_dropout),
            environment=EnvironmentConfig(device="cpu", precision="fp32"),
        )
        model = training_model(config, get_task("rte"))
        assert model.config._attn_implementation == attention
        assert any(isinstance(module, FastDropout) for module in model.modules()) == fast


def test_layout_keeps_the_effective_batch_over_processes():
    assert Layout.of(FineTuneConfig(), 1) == Layout(world_size=1, per_device_batch=32)
    assert Layout.of(FineTuneConfig(), 2) == Layout(world_size=2, per_device_batch=16)
    with pytest.raises(InputError, match="--batch-size 30 cannot be split evenly over 4 processes"):
        Layout.of(FineTuneConfig(batch_size=30), 4)


@pytest.mark.slow  # two processes under accelerate, then a run
def test_two_processes_fine_tune_with_the_batch_the_user_set_and_run_reuses_it(tiny_model_dir, tiny_data, tmp_path):
    """`torchrun --nproc_per_node 2 -m harness finetune` on CPU (gloo); `harness run` then trains nothing."""
    finetune = harness_arguments("finetune", tiny_model_dir, tiny_data / "glue", tmp_path, *TINY_RECIPE)
    launched = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "-m", "harness", *finetune],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        cwd=Path(__file__).parents[3],
    )
    assert launched.returncode == 0, launched.stderr[-3000:]
    assert launched.stdout.count("fine-tuned checkpoint:") == 1  # rank 0 alone reports
    (final,) = (tmp_path / "cache").glob("*/final")
    stored = json.loads((final / "result.json").read_text())
    assert stored["layout"] == {"world_size": 2, "per_device_batch": 4}
    steps = [entry["step"] for entry in stored["log_history"] if "loss" in entry]
    assert steps[-1] == stored["train_examples"] // 8  # 24 examples, effective batch 8: 3 steps
    before = snapshot(final)
    assert main(["run", *finetune[1:], "--analyses", "cosine", "--eval-batch-size", "4"]) == 0
    assert snapshot(final) == before  # the checkpoint was picked up, not trained again


def fake_checkpoint(root: Path, step: int) -> Path:
    """A Trainer checkpoint folder with real file formats: state JSON, safetensors weights, torch archives."""
    folder = root / f"checkpoint-{step}"
    folder.mkdir(parents=True)
    (folder / "trainer_state.json").write_text(json.dumps({"global_step": step}))
    save_file({"weight": torch.arange(64.0).reshape(8, 8)}, str(folder / "model.safetensors"))
    for name in ("optimizer.pt", "scheduler.pt"):
        torch.save({"step": step, "state": torch.ones(16)}, folder / name)
    return folder


@pytest.mark.parametrize("tear", ["weights", "optimizer", "state", "missing"])
def test_a_torn_trainer_checkpoint_is_set_aside_and_the_last_complete_one_used(tmp_path, tear, caplog):
    complete = fake_checkpoint(tmp_path, 10)
    torn = fake_checkpoint(tmp_path, 20)
    assert checkpoint_complete(torn)
    target = {
        "weights": "model.safetensors",
        "optimizer": "optimizer.pt",
        "state": "trainer_state.json",
        "missing": "scheduler.pt",
    }[tear]
    if tear == "missing":
        (torn / target).unlink()
    else:
        data = (torn / target).read_bytes()
        (torn / target).write_bytes(data[: len(data) // 2])
    assert last_checkpoint(tmp_path) == str(complete)
    assert not torn.exists() and len(list(tmp_path.glob("incomplete-checkpoint-20-*"))) == 1
    assert "set aside the incomplete Trainer checkpoint" in caplog.text
    assert last_checkpoint(tmp_path) == str(complete)  # the next run does not trip on it either


def test_the_training_bar_counts_examples_and_shows_the_loss_not_log_dictionaries(tmp_path, capsys):
    """The bar `harness.model.finetune` puts on the Trainer, driven through the Trainer's callback events."""
    args = TrainingArguments(
        output_dir=str(tmp_path), per_device_train_batch_size=8, gradient_accumulation_steps=2, report_to=[]
    )
    state, control = TrainerState(max_steps=3), TrainerControl()
    progress = QuietProgress()
    progress.on_train_begin(args, state, control)
    for step in (1, 2, 3):
        state.global_step = step
        progress.on_step_end(args, state, control)
        progress.on_log(args, state, control, logs={"loss": 0.5 / step, "learning_rate": 1e-5, "epoch": step / 3})
    bar = progress.training_bar
    assert (bar.n, bar.total, bar.unit) == (48, 48, "ex") and bar.postfix == "loss=0.1667"
    progress.on_train_end(args, state, control)
    assert "learning_rate" not in capsys.readouterr().err


@pytest.mark.slow
def test_a_trajectory_keeps_the_model_at_fractions_of_the_training_steps(tiny_model_dir, tiny_data, tmp_path):
    """--trajectory 0.25 0.5: the model after steps 1 and 2 of 3 (the nearest to a quarter and a
    half), each loadable, each its own weights, recorded with the step and the examples seen; the
    fractions are part of the checkpoint's key."""
    argv = harness_arguments("finetune", tiny_model_dir, tiny_data / "glue", tmp_path, *TINY_RECIPE)
    assert main([*argv, "--trajectory", "0.25", "0.5"]) == 0
    (final,) = (tmp_path / "cache").glob("*/final")
    result = json.loads((final / "result.json").read_text())
    assert [
        (point["step"], point["fractions"], point["examples_seen"], point["of_steps"]) for point in result["trajectory"]
    ] == [(1, [0.25], 8, 3), (2, [0.5], 16, 3)]
    weights = [
        load_finetuned(final.parent / "trajectory" / point["folder"]).state_dict()["classifier.weight"]
        for point in result["trajectory"]
    ] + [load_finetuned(final).state_dict()["classifier.weight"]]
    assert not torch.equal(weights[0], weights[1]) and not torch.equal(weights[1], weights[2])
    assert main(argv) == 0  # without the flag: another checkpoint, none kept on the way
    assert len(list((tmp_path / "cache").glob("*/final"))) == 2


def test_the_trajectory_flag_alone_keeps_the_default_fractions_and_bad_ones_are_one_line(capsys):
    (config,) = configs_from(build_parser().parse_args(["finetune", "--task", "rte", "--trajectory"]))[:1]
    assert config.finetune.trajectory == [0.01, 0.05, 0.1, 0.25, 0.5]
    assert main(["run", "--task", "rte", "--trajectory", "0.5", "1"]) == 2
    assert "--trajectory 1: must be in (0, 1)" in capsys.readouterr().err
