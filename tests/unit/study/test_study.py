"""The study's configuration, its command line, how it judges findings over seeds, and its
cross-task figures (drawn from a study.json built here)."""

from __future__ import annotations

import copy
import json
import logging
import shutil
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from harness.cli import build_parser, configs_from, main
from harness.config import StudyConfig
from harness.present.frames import load_runs
from harness.present.study_figures import draw_study
from harness.results.summary import checked_study
from harness.study.aggregate import change_findings, support, task_aggregate, task_cell
from harness.study.executors import finetune_argv
from harness.study.runner import missing_data, plan_study
from harness.views.base import VIEWS, View
from harness.views.seeds import elementwise, spread
from harness.views.summary import summary_metrics
from tasks.errors import InputError
from tests.fixtures import LEARNS, PNG_ONLY, made_once, tiny_run_arguments


def parse(*argv: str):
    return configs_from(build_parser().parse_args(["study", *argv]))


def test_one_run_per_task_and_seed_each_with_its_tasks_recipe(tmp_path):
    study, configs = parse("--tasks", "rte,MRPC", "stsb", "--seeds", "2", "--seed", "7", "--model", "minilm")
    assert study.tasks == ["rte", "mrpc", "stsb"]
    assert [(c.task.task, c.finetune.seed) for c in configs] == [
        ("rte", 7),
        ("rte", 8),
        ("mrpc", 7),
        ("mrpc", 8),
        ("stsb", 7),
        ("stsb", 8),
    ]
    assert {c.task.task: c.finetune.epochs for c in configs} == {"rte": 6.0, "mrpc": 3.0, "stsb": 3.0}
    _, overridden = parse("--tasks", "rte", "mrpc", "--model", "minilm", "--epochs", "1")
    assert {c.finetune.epochs for c in overridden} == {1.0}


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--tasks", "rte,nope"], "unknown task 'nope'"),
        (["--seeds", "0"], "--seeds 0: must be at least 1"),
        (["--tasks", ","], "--tasks : names no task"),
        (["--name", "a/b"], "--name 'a/b': holds a path separator; a study's name is one plain name"),
    ],
)
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
    assert grids["mean"] == [[2.0, 2.0]] and grids["std"][0][0] == pytest.approx(2**0.5) and grids["std"][0][1] == 0


def cells(states: dict[str, list[str]]) -> dict:
    """Task cells of a claim's finding from each seed's state."""
    return {
        task: task_cell([{"seed": 42 + i, "state": state} for i, state in enumerate(seeds)], "holds")
        for task, seeds in states.items()
    }


def test_a_finding_says_on_how_many_seeds_of_how_many_tasks_it_is_clear():
    finding = support("the claim", cells({"rte": ["holds"] * 3, "mrpc": ["holds", "unclear", "holds"]}))
    assert {task: (c["holds"], c["seeds"]) for task, c in finding["per_task"].items()} == {
        "rte": (3, 3),
        "mrpc": (2, 3),
    }
    assert finding["text"] == (
        "the claim: clear of its sampling error on every seed of 1 of 2 tasks (seeds where it "
        "is: rte 3 of 3; mrpc 2 of 3 (1 unclear); effect: rte no size (a yes/no statement); "
        "mrpc no size (a yes/no statement))"
    )
    sized = support(
        "y", {"rte": task_cell([{"seed": s, "state": "holds", "value": v} for s, v in ((1, 0.1), (2, 0.3))], "holds")}
    )
    assert sized["per_task"]["rte"]["effect"]["value"] == pytest.approx(0.2)  # the mean of the seeds' values ...
    low, high = sized["per_task"]["rte"]["effect"]["interval"]  # ... with a t interval over them: 0.2 +- 12.71 * 0.1
    assert (low, high) == (pytest.approx(0.2 - 1.27062, abs=1e-4), pytest.approx(0.2 + 1.27062, abs=1e-4))
    assert "effect: rte +0.2 [-1.07, +1.47] (2 seeds)" in sized["text"]
    uneven = support("x", cells({"rte": ["holds", "holds"], "mrpc": ["holds"]}))
    assert uneven["text"].startswith("x: clear of its sampling error on every seed of 2 of 2 tasks")


def study_of(tasks: list[str], layers: int = 2, heads: int = 3) -> dict:
    """A study.json as `harness.study.runner.aggregate` writes it, for two seeds."""

    def values(mean: float) -> dict:
        return {"mean": mean, "std": 0.01, "min": mean - 0.01, "max": mean + 0.01, "n": 2, "values": [mean] * 2}

    shares = {"vertical": 0.4, "diagonal": 0.1, "vertical_diagonal": 0.2, "block": 0.2, "heterogeneous": 0.1}
    grid = {"mean": [[0.9] * heads] * layers, "std": [[0.01] * heads] * layers, "n": 2}
    tokens = {"mean": [0.3] * layers, "std": [0.01] * layers, "n": 2}
    metrics = {f"pattern_{c}_{k}": values(v) for c in ("pretrained", "finetuned") for k, v in shares.items()}
    metrics |= {
        "dev_accuracy_pretrained": values(0.5),
        "dev_accuracy_finetuned": values(0.7),
        "dev_accuracy_majority": values(0.52),
        "cosine_mean": values(0.9),
    }
    entry = {
        "seeds": [42, 43],
        "metrics": metrics,
        "headline": ["dev_accuracy_finetuned", "cosine_mean"],
        "main_metric": "dev_accuracy",
        "main_score": {"split": "dev", "metric": "accuracy"},
        "num_layers": layers,
        "num_heads": heads,
        "cosine": {"per_layer": {"mean": [0.95, 0.8], "std": [0.01, 0.02], "n": 2}, "per_head": grid},
        "between_seeds": {"per_layer": {"mean": [0.99, 0.97], "std": [0.0, 0.0], "n": 1}},
        "special_tokens": {c: {"cls": tokens, "sep": tokens} for c in ("pretrained", "finetuned")},
    }
    finding = support("the claim", cells({task: ["holds", "holds"] for task in tasks}))
    return {
        "model": "bert-base-uncased",
        "tasks": {task: entry for task in tasks},
        "findings": {"beats_majority": finding},
    }


def test_cross_task_figures_and_tables_are_drawn_from_the_study_alone(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="harness.views.saving"):
        files = draw_study(study_of(["rte", "mrpc", "stsb", "sst2"]), tmp_path, formats=("png", "pdf"))
    assert not caplog.records, [record.getMessage() for record in caplog.records]  # layout, colours, wording
    names = {path.name for path in files}
    assert {
        "cosine_per_head_by_task.png",
        "cosine_per_layer_by_task.pdf",
        "pattern_shares_by_task.png",
        "special_tokens_by_task.png",
        "findings.md",
        "headline_by_task.md",
    } <= names
    table = (tmp_path / "dev_scores_by_task.md").read_text()
    assert "| rte | accuracy | 0.500 ± 0.010 | 0.700 ± 0.010 | 0.520 ± 0.010 | 2/2 | 64.6 |" in table
    assert "Kovaleva et al. (fine-tuned)" in table  # the paper's numbers beside ours: same model
    cosine = (tmp_path / "cosine_per_layer_by_task.md").read_text()
    assert "| rte | pre-trained vs fine-tuned | 0.950 ± 0.010 | 0.800 ± 0.020 |" in cosine
    assert "| rte | between seeds (1 pairs) | 0.990 ± 0.000 | 0.970 ± 0.000 |" in cosine
    assert (
        "| mrpc | fine-tuned | 0.30 / 0.30 | 0.30 / 0.30 |"
        in (tmp_path / "special_tokens_per_layer_by_task.md").read_text()
    )


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
    _, configs = parse(
        "--tasks",
        "rte",
        "mrpc",
        "--seeds",
        "2",
        "--model",
        "minilm",
        "--max-train-examples",
        "64",
        "--output-dir",
        str(tmp_path / "out"),
        "--random-order",
    )
    for config in configs:
        (again,) = configs_from(build_parser().parse_args(["finetune", *finetune_argv(config)]))
        assert (again.task, again.finetune, again.environment) == (config.task, config.finetune, config.environment)


def test_a_signed_change_no_task_defines_is_said_to_be_undefined_not_an_error():
    """A cross-sentence share on single-sentence tasks only: the finding says it is not defined
    there (a misspelt declaration is caught by tests/unit/views/test_declared_metrics.py)."""

    class PairOnly(View):
        name = "pair-only"
        signed_changes = {"pair_only_change": "the other sentence's share"}

    by_task = {task: {42: {"analyses": {"pair-only": {"version": 1, "result": {}}}}} for task in ("sst2", "cola")}
    (finding,) = change_findings(PairOnly, by_task).values()  # no run gives its evidence
    assert finding["text"] == "the other sentence's share with fine-tuning: not defined on these tasks (sst2, cola)"
    assert finding["per_task"] == {} and finding["undefined_on"] == ["sst2", "cola"]
    assert change_findings(PairOnly, {"rte": {42: {"analyses": {}}}}) == {}  # the analysis did not run


def study_arguments(model: Path, data: Path, root: Path, tasks: str, *extra: str) -> list[str]:
    """A one-seed study of ``tasks`` with the tiny model that learns SST-2, every default analysis."""
    run_flags = tiny_run_arguments(model, data, root, *LEARNS)[3:]
    return ["study", "--tasks", tasks, "--seeds", "1", *run_flags, *extra]


@pytest.fixture(scope="session")
def mixed_study(tiny_learner_dir, tiny_data, tmp_path_factory) -> Path:
    """SST-2 (one sentence, learned) and RTE (two, not learned), every default analysis, once for the
    session: the study whose findings are judged on single-sentence tasks alone."""

    def make(root: Path) -> None:
        assert main(study_arguments(tiny_learner_dir, tiny_data, root, "sst2,rte", "--no-figures")) == 0

    return made_once(tmp_path_factory, "mixed_study", make)


def study_json(root: Path, name: str) -> dict:
    (folder,) = [path.parent for path in (root / "out" / "studies").glob("*/study.json") if name in path.parent.name]
    return checked_study(folder)


@pytest.mark.slow  # two tiny runs with every analysis, made once for the session
def test_a_study_judged_on_single_sentence_tasks_ends_with_its_study_json(mixed_study, capsys):
    """The study that crashed at its end (a cross-sentence Vig change no judged task defines)."""
    study = study_json(mixed_study, "study-")
    assert study["judged_tasks"] == ["sst2"] and set(study["kept_out_of_findings"]) == {"rte"}
    assert study["aggregation_failed"] == {}
    other_sentence = study["findings"]["vig_change_other_segment_identical_max"]
    assert other_sentence["undefined_on"] == ["sst2"] and other_sentence["text"].endswith(
        "not defined on these tasks (sst2); not judged on rte (not learned on every seed: see the learning check)"
    )
    shares = study["findings"]["pattern_change_vertical"]["per_task"]["sst2"]  # judged on the learned task alone
    assert shares["seeds"] == 1 and shares["per_seed"][0]["unit"] == "dev examples"


@pytest.mark.slow
@pytest.mark.parametrize("tasks, extra, judged", [("sst2", (), ["sst2"]), ("rte", ("--findings-from", "all"), ["rte"])])
def test_single_sentence_only_and_pair_only_studies_end_with_their_study_json(
    mixed_study, tiny_learner_dir, tiny_data, tmp_path, tasks, extra, judged
):
    root = tmp_path / "copy"
    shutil.copytree(mixed_study, root)  # the runs are reused: only the study is new
    name = f"only-{tasks}"
    assert main(study_arguments(tiny_learner_dir, tiny_data, root, tasks, "--name", name, "--no-figures", *extra)) == 0
    study = study_json(root, name)
    assert study["judged_tasks"] == judged and study["aggregation_failed"] == {}
    defined = "undefined_on" not in study["findings"]["vig_change_other_segment_identical_max"]
    assert defined == (tasks == "rte")


@pytest.mark.slow
def test_a_view_that_fails_costs_the_study_nothing_else(
    mixed_study, tiny_learner_dir, tiny_data, tmp_path, monkeypatch, capsys
):
    """A bug in one view's aggregation is named in study.json and printed; the other views' findings,
    figures and tables are there, and the command says it did not all go well."""

    class Broken(View):
        name = "cosine"
        version = VIEWS["cosine"].version

        @classmethod
        def across_seeds(cls, entries):
            raise ValueError("a bug in the cosine view")

    monkeypatch.setitem(VIEWS, "cosine", Broken)
    root = tmp_path / "copy"
    shutil.copytree(mixed_study, root)
    # drawn here: the patched view is this process's alone (a drawing worker would import the real one)
    argv = study_arguments(tiny_learner_dir, tiny_data, root, "sst2,rte", "--name", "broken", "--figure-processes", "1")
    assert main(argv) == 1
    study = study_json(root, "broken")
    assert study["aggregation_failed"] == {
        "cosine over the seeds of sst2": "ValueError: a bug in the cosine view",
        "cosine over the seeds of rte": "ValueError: a bug in the cosine view",
    }
    assert "vig_change_other_segment_identical_max" in study["findings"] and study["tasks"]["sst2"]["metrics"]
    assert (
        "not aggregated: cosine over the seeds of sst2: ValueError: a bug in the cosine view" in capsys.readouterr().out
    )


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


@pytest.mark.slow
def test_two_seeds_of_a_task_are_compared_with_each_other_beside_pre_training(
    mixed_study, tiny_learner_dir, tiny_data, tmp_path
):
    """The yardstick: the cosine between two seeds' fine-tuned maps (and the CKA of their hidden states),
    per layer, on the dev sample the runs compared, and whether the last layer moved further from
    pre-training than that."""
    root = tmp_path / "copy"
    shutil.copytree(mixed_study, root)  # seed 42 of SST-2 is reused; seed 43 is fine-tuned here
    argv = study_arguments(tiny_learner_dir, tiny_data, root, "sst2", "--seeds", "2", "--name", "two", "--no-figures")
    assert main(argv) == 0
    study = study_json(root, "two")
    (pair,) = study["tasks"]["sst2"]["between_seeds"]["pairs"]
    assert pair["seeds"] == [42, 43] and len(pair["per_layer"]) == 2 and all(-1 <= c <= 1 for c in pair["per_layer"])
    evidence = pair["against_pretraining"]
    assert evidence["n"] == 64 and evidence["unit"] == "dev examples" and len(evidence["interval"]) == 2
    finding = study["findings"]["last_layer_beyond_seed_noise"]
    (record,) = finding["per_task"]["sst2"]["per_seed"]
    assert record["seeds"] == [42, 43] and record["state"] in ("holds", "fails", "unclear")
    assert record["value"] == evidence["value"][-1]
    representations = pair["cka"]  # the same yardstick for the hidden states: linear CKA between the seeds
    assert len(representations["per_layer"]) == 2 and all(0 <= c <= 1 + 1e-6 for c in representations["per_layer"])
    assert representations["against_pretraining"]["n"] == 64
    assert study["tasks"]["sst2"]["between_seeds"]["cka"]["per_layer"]["n"] == 1


@pytest.mark.slow
def test_a_study_along_fine_tuning_says_when_attention_and_the_score_change(
    tiny_learner_dir, tiny_data, tmp_path, capsys
):
    """--trajectory: every analysis on the checkpoints kept at 5, 10 and 50% of the training, the
    task's series over the fraction of training, and the findings on when things change, judged on
    resamples of the dev examples (the tiny model learns SST-2, so they are judged)."""
    argv = study_arguments(
        tiny_learner_dir, tiny_data, tmp_path, "sst2", "--trajectory", "0.05", "0.1", "0.5", "--name", "way", *PNG_ONLY
    )
    assert main(argv) == 0
    study = study_json(tmp_path, "way")
    found = study["tasks"]["sst2"]["trajectory"]
    assert found["fractions"][0] == 0 and found["fractions"][-1] == 1 and len(found["fractions"]) == 5
    assert len(found["series"]["dev_score"]["mean"]) == 5 and found["series"]["last_layer_cosine"]["mean"][0] == 1
    for name in ("cosine_before_dev", "heterogeneous_early"):
        (record,) = study["findings"][name]["per_task"]["sst2"]["per_seed"]
        assert record["state"] in ("holds", "fails", "unclear") and 0 <= record["support"] <= 1
    (run,) = (tmp_path / "out").glob("sst2-*")
    assert {"trajectory_cosine_per_layer.png", "trajectory_table.md"} <= {
        path.name for path in (run / "figures").iterdir()
    }
    assert "trajectory_by_task.png" in {
        path.name for path in (tmp_path / "out" / "studies" / "way" / "figures").iterdir()
    }
    # MLflow charts each headline metric and the per-layer cosine over the training steps
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path}/mlflow.db")
    experiments = [experiment.experiment_id for experiment in client.search_experiments()]
    (parent,) = [run for run in client.search_runs(experiments) if "trajectory/cosine_mean" in run.data.metrics]
    history = client.get_metric_history(parent.info.run_id, "trajectory/cosine_layer_2")
    steps = [point.step for point in history]
    assert len(steps) == 4 and steps == sorted(steps) and steps[0] > 0  # three kept steps and the last
    assert history[-1].value == pytest.approx(parent.data.metrics["cosine_layer_2"])
    # load_runs: each kept step's metrics on the run's records, with the step
    runs = load_runs(run)
    along = runs[runs.step.notna()]
    assert sorted(set(along.step)) == steps[:-1]
    cosine = along[along.metric == "cosine_layer_2"]
    assert set(cosine.analysis) == {"cosine"} and set(cosine.layer) == {2} and len(cosine) == 3
    assert len(along[along.metric == "to_final.cosine_layer_2"]) == 3
    # the report: the run's trajectory section, its steps and figures
    page = tmp_path / "out" / "report" / "index.html"
    assert main(["report", "--output-dir", str(tmp_path / "out"), "--out", str(page)]) == 0
    html = page.read_text(encoding="utf-8")
    assert "steps kept" in html and "trajectory_cosine_per_layer.png" in html
