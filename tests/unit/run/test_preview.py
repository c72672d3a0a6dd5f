"""``harness run --dry-run``: the run said before it is made (its data, key, folder and cost, with
--trajectory the steps it keeps and the passes they add), and nothing made: no folder, checkpoint,
lock or MLflow run."""

from __future__ import annotations

import datasets
import pytest

from harness.cli import build_parser, configs_from, main
from harness.run.plan import plan_run
from tests.fixtures import LEARNS, store_untouched, tiny_run_arguments
from tests.unit.tasks.test_task_specs import write_sentiment


@pytest.fixture(autouse=True)
def datasets_cache(tmp_path_factory, monkeypatch) -> None:
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path_factory.mktemp("hf-datasets")))


@pytest.mark.slow  # plans the run and streams counts of each source (tokenizer, treebank, coreference files)
def test_a_dry_run_says_the_data_key_and_cost_and_makes_nothing(tiny_learner_dir, tiny_data, tmp_path, capsys):
    spec = write_sentiment(tmp_path / "data")
    argv = tiny_run_arguments(tiny_learner_dir, tiny_data, tmp_path, "--task", str(spec), *LEARNS)
    argv += ["--trajectory", "0.25", "0.5"]
    plan = plan_run(configs_from(build_parser().parse_args(argv))[0])
    assert main([*argv, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "labels: 0 neg, 1 pos" in out and "train: neg 32, pos 32 (64 examples)" in out
    assert f"run key {plan.key}: {plan.run_dir}" in out
    assert "64 examples x 10 epochs in batches of 8: 80 optimiser steps" in out
    assert "analyses, one pass of each source through both checkpoints: task (64 inputs: evaluation, cosine" in out
    assert "syntax (" in out and "coreference (" in out
    assert "along fine-tuning (--trajectory): steps 20, 40 of 80 kept, each measured by evaluation, cosine" in out
    assert "nothing was run (--dry-run)" in out and "fine-tuning recipe" not in out
    assert not plan.run_dir.exists() and store_untouched(tmp_path)
    assert not (tmp_path / "cache").exists() and not plan.run_dir.parent.exists()  # no empty folder either


def test_trajectory_analyses_must_be_the_runs_and_all_stands_alone(tiny_model_dir, tiny_data, tmp_path, capsys):
    argv = tiny_run_arguments(tiny_model_dir, tiny_data, tmp_path, "--trajectory", "--analyses", "cosine")
    assert main([*argv, "--trajectory-analyses", "sinks"]) == 2
    assert (
        "--trajectory-analyses sinks: not an analysis this run measures its kept steps with" in capsys.readouterr().err
    )
    assert main([*argv, "--trajectory-analyses", "all", "cosine"]) == 2
    assert "all names every analysis: give it alone" in capsys.readouterr().err
