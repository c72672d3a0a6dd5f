"""The study's configuration, its command line, how it judges findings over seeds, and its
cross-task figures (drawn from a study.json built here)."""

from __future__ import annotations

import copy
import json
import logging

import pytest

from harness.cli import build_parser, configs_from, main
from harness.config import StudyConfig
from harness.present.study_figures import draw_study
from harness.results.checkpoints import MAIN_PAIR
from harness.study.aggregate import change_findings, support, task_aggregate
from harness.study.executors import finetune_argv
from harness.study.runner import missing_data, plan_study
from harness.views.base import View
from harness.views.cosine import last_layers_change_most
from harness.views.seeds import elementwise, spread
from harness.views.summary import summary_metrics
from tasks.errors import InputError
from tests.conftest import tiny_run_arguments


def parse(*argv: str):
    return configs_from(build_parser().parse_args(["study", *argv]))


def test_one_run_per_task_and_seed_each_with_its_tasks_recipe(tmp_path):
    study, configs = parse("--tasks", "rte,MRPC", "stsb", "--seeds", "2", "--seed", "7", "--model", "minilm")
    assert study.tasks == ["rte", "mrpc", "stsb"]
    assert [(c.task.task, c.finetune.seed) for c in configs] == [
        ("rte", 7), ("rte", 8), ("mrpc", 7), ("mrpc", 8), ("stsb", 7), ("stsb", 8)]
    assert {c.task.task: c.finetune.epochs for c in configs} == {"rte": 6.0, "mrpc": 3.0, "stsb": 3.0}
    _, overridden = parse("--tasks", "rte", "mrpc", "--model", "minilm", "--epochs", "1")
    assert {c.finetune.epochs for c in overridden} == {1.0}


@pytest.mark.parametrize("argv, message", [
    (["--tasks", "rte,nope"], "unknown task 'nope'"),
    (["--seeds", "0"], "--seeds 0: must be at least 1"),
    (["--tasks", ","], "--tasks : names no task"),
    (["--name", "a/b"], "--name a/b: must be a non-empty name without '/'"),
])
def test_bad_study_flags_are_one_line(capsys, argv, message):
    assert main(["study", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_a_study_takes_task_as_its_tasks():
    """A study has no --task (every run sets its own): ``--task rte``, argparse's prefix of
    --tasks, is read as the study's one task rather than refused."""
    study, configs = parse("--task", "rte", "--seeds", "1")
    assert study.tasks == ["rte"] and [c.task.task for c in configs] == ["rte"]


def test_a_task_without_its_files_is_named_with_the_missing_file(tmp_path):
    (tmp_path / "RTE").mkdir()
    (tmp_path / "RTE" / "dev.tsv").write_text("index\tsentence1\tsentence2\tlabel\n")
    _, (config,) = parse("--tasks", "rte", "--seeds", "1", "--data-dir", str(tmp_path))
    assert missing_data(config) == f"{tmp_path / 'RTE' / 'train.tsv'} not found"
    (tmp_path / "RTE" / "train.tsv").write_text("index\tsentence1\tsentence2\tlabel\n")
    assert missing_data(config) is None


def test_spread_over_seeds():
    values = spread([0.5, 0.7, 0.6])
    assert values["mean"] == pytest.approx(0.6) and values["std"] == pytest.approx(0.1)
    assert (values["min"], values["max"], values["n"]) == (0.5, 0.7, 3)
    assert spread([0.4])["std"] == 0.0
    grids = elementwise([[[1.0, 2.0]], [[3.0, 2.0]]])
    assert grids["mean"] == [[2.0, 2.0]] and grids["std"][0][0] == pytest.approx(2 ** 0.5) and grids["std"][0][1] == 0


def cosine_summary(per_layer: list[float]) -> dict:
    return {"result": {"per_pair": {MAIN_PAIR: {"per_layer": per_layer}}}}


def test_last_two_layers_change_most_only_when_both_are_the_lowest():
    assert last_layers_change_most(cosine_summary([0.99, 0.97, 0.95, 0.9, 0.7, 0.6]))
    assert not last_layers_change_most(cosine_summary([0.99, 0.6, 0.95, 0.9, 0.7, 0.8]))
    assert not last_layers_change_most(cosine_summary([0.99, 0.97, 0.95, 0.9, 0.99, 0.6]))


def test_a_finding_says_on_how_many_seeds_of_how_many_tasks_it_holds():
    finding = support("the claim", {"rte": [True, True, True], "mrpc": [True, False, True]})
    assert finding["per_task"] == {"rte": {"holds": 3, "seeds": 3}, "mrpc": {"holds": 2, "seeds": 3}}
    assert finding["text"] == ("the claim: holds on every seed of 1 of 2 tasks (seeds where it holds: rte 3 of 3, "
                               "mrpc 2 of 3)")
    uneven = support("x", {"rte": [True, True], "mrpc": [True]})
    assert uneven["text"].startswith("x: holds on every seed of 2 of 2 tasks")


def study_of(tasks: list[str], layers: int = 2, heads: int = 3) -> dict:
    """A study.json as `harness.study.runner.aggregate` writes it, for two seeds."""
    def values(mean: float) -> dict:
        return {"mean": mean, "std": 0.01, "min": mean - 0.01, "max": mean + 0.01, "n": 2, "values": [mean] * 2}
    shares = {"vertical": 0.4, "diagonal": 0.1, "vertical_diagonal": 0.2, "block": 0.2, "heterogeneous": 0.1}
    grid = {"mean": [[0.9] * heads] * layers, "std": [[0.01] * heads] * layers, "n": 2}
    tokens = {"mean": [0.3] * layers, "std": [0.01] * layers, "n": 2}
    metrics = {f"pattern_{c}_{k}": values(v) for c in ("pretrained", "finetuned") for k, v in shares.items()}
    metrics |= {"dev_accuracy_pretrained": values(0.5), "dev_accuracy_finetuned": values(0.7),
                "dev_accuracy_majority": values(0.52), "cosine_mean": values(0.9)}
    entry = {"seeds": [42, 43], "metrics": metrics, "headline": ["dev_accuracy_finetuned", "cosine_mean"],
             "main_metric": "dev_accuracy", "num_layers": layers, "num_heads": heads,
             "cosine": {"per_layer": {"mean": [0.95, 0.8], "std": [0.01, 0.02], "n": 2}, "per_head": grid},
             "special_tokens": {c: {"cls": tokens, "sep": tokens} for c in ("pretrained", "finetuned")}}
    finding = support("the claim", {task: [True, True] for task in tasks})
    return {"model": "bert-base-uncased", "tasks": {task: entry for task in tasks},
            "findings": {"beats_majority": finding}}


def test_cross_task_figures_and_tables_are_drawn_from_the_study_alone(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="harness.views.style"):
        files = draw_study(study_of(["rte", "mrpc", "stsb", "sst2"]), tmp_path)
    assert not caplog.records, [record.getMessage() for record in caplog.records]  # layout, colours, wording
    names = {path.name for path in files}
    assert {"cosine_per_head_by_task.png", "cosine_per_layer_by_task.pdf", "pattern_shares_by_task.png",
            "special_tokens_by_task.png", "findings.md", "headline_by_task.md"} <= names
    table = (tmp_path / "dev_scores_by_task.md").read_text()
    assert "| rte | accuracy | 0.500 ± 0.010 | 0.700 ± 0.010 | 0.520 ± 0.010 | 2/2 | 64.6 |" in table
    assert "Kovaleva et al. (fine-tuned)" in table  # the paper's numbers beside ours: same model
    assert "| rte | 0.950 ± 0.010 | 0.800 ± 0.020 |" in (tmp_path / "cosine_per_layer_by_task.md").read_text()
    assert "| mrpc | fine-tuned | 0.30 / 0.30 | 0.30 / 0.30 |" in (
        tmp_path / "special_tokens_per_layer_by_task.md").read_text()


def test_a_study_of_another_model_has_no_paper_column(tmp_path):
    study = study_of(["rte"]) | {"model": "minilm"}
    draw_study(study, tmp_path)
    assert "Kovaleva" not in (tmp_path / "dev_scores_by_task.md").read_text()


def test_no_task_with_data_is_one_error(tmp_path):
    _, configs = parse("--tasks", "qnli", "--seeds", "1", "--data-dir", str(tmp_path))
    with pytest.raises(InputError, match="no \\(task, seed\\) of the study can run: qnli: .*QNLI/train.tsv not found"):
        plan_study(StudyConfig(tasks=["qnli"], seeds=1), configs)


def test_the_engine_flags_need_the_ray_engine(capsys):
    assert main(["study", "--workers", "2"]) == 2
    assert "--engine inline: runs one run at a time in one process" in capsys.readouterr().err
    study, _ = parse("--engine", "ray", "--workers", "2", "--processes-per-run", "2")
    assert (study.engine, study.workers, study.processes_per_run) == ("ray", 2, 2)


def test_a_jobs_fine_tuning_command_has_the_runs_flags(tmp_path):
    """What a multi-process job launches (`accelerate launch ... -m harness finetune`) is the
    run's own fine-tuning: the same task, recipe, seed and folders."""
    _, configs = parse("--tasks", "rte", "mrpc", "--seeds", "2", "--model", "minilm", "--max-train-examples", "64",
                       "--output-dir", str(tmp_path / "out"), "--random-order")
    for config in configs:
        (again,) = configs_from(build_parser().parse_args(["finetune", *finetune_argv(config)]))
        assert (again.task, again.finetune, again.environment) == (config.task, config.finetune, config.environment)


def test_a_signed_change_no_run_gives_is_an_error_not_a_skipped_finding():
    class Renamed(View):
        name = "renamed"
        signed_changes = {"renamed_change_old_name": "what it measured"}

    by_task = {"rte": {42: {"analyses": {"renamed": {"version": 1}}}}}
    tasks = {"rte": {"metrics": {"renamed_change_new_name": {"values": [0.1]}}}}
    with pytest.raises(KeyError, match="renamed_change_old_name"):
        change_findings(Renamed, by_task, tasks)
    assert change_findings(Renamed, {"rte": {42: {"analyses": {}}}}, tasks) == {}  # the analysis did not run


@pytest.mark.slow  # a tiny run
def test_an_analysis_on_some_seeds_only_is_aggregated_over_those_seeds(tiny_model_dir, tiny_data, tmp_path):
    """The ablation of a CPU study runs on one seed per task: its metrics are kept over the seeds that have
    them, each saying how many, beside the metrics every seed has."""
    assert main(tiny_run_arguments(tiny_model_dir, tiny_data, tmp_path, "--analyses", "cosine", "patterns")) == 0
    (path,) = (tmp_path / "out").glob("*/summary.json")
    full = json.loads(path.read_text())
    fewer = copy.deepcopy(full)
    del fewer["analyses"]["patterns"]
    entry = task_aggregate({42: full, 43: fewer})
    assert entry["metrics"]["cosine_mean"]["n"] == 2
    assert entry["metrics"]["pattern_change_vertical"]["n"] == 1
    assert entry["metrics"]["pattern_change_vertical"]["values"] == [summary_metrics(full)["pattern_change_vertical"]]
    assert "pattern_change_vertical" in entry["headline"] and set(entry["headline"]) <= set(entry["metrics"])
    assert len(entry["pattern_corrected"]["finetuned"]["vertical"]["interval"]) == 2  # the one seed with patterns
