"""Stored results as tidy tables (`harness.present.frames`) and ``harness export``: from a tiny
run with the per-head analyses and a tiny study, every value where the summary holds it."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from harness.cli import main
from harness.present.frames import (
    FINDING_COLUMNS,
    RUN_COLUMNS,
    STUDY_COLUMNS,
    load_findings,
    load_runs,
    load_study,
)
from harness.results.checkpoints import FINETUNED, MAIN_PAIR, PRETRAINED
from harness.results.store import read_json
from harness.results.summary import SUMMARY
from harness.views.summary import summary_metrics
from tests.fixtures import tiny_run_arguments

# Seed 7: its own folder (runs of one task, model and seed share theirs, adding analyses), not a study run.
PER_HEAD_RUN = ("--analyses", "cosine", "surface", "sinks", "patterns", "vig", "ablation", "--seed", "7")
SLOW = pytest.mark.slow  # the module's `stored`: a tiny run with the ablation and a tiny study (50 s)
KEY = ["run", "analysis", "checkpoint", "pair", "metric", "layer", "head"]  # what names one value


@pytest.fixture(scope="module")
def stored(tiny_model_dir, tiny_data, tmp_path_factory) -> Path:
    """An output folder with one RTE run of the per-head analyses and a study of RTE and MRPC over two seeds."""
    root = tmp_path_factory.mktemp("frames")
    assert main(tiny_run_arguments(tiny_model_dir, tiny_data, root, *PER_HEAD_RUN, "--no-figures")) == 0
    flags = tiny_run_arguments(tiny_model_dir, tiny_data, root, "--analyses", "cosine", "patterns", "--no-figures")[3:]
    # tiny models learn nothing: the findings are judged on every task all the same
    assert (
        main(["study", "--tasks", "rte,mrpc", "--seeds", "2", "--name", "tiny", "--findings-from", "all", *flags]) == 0
    )
    return root / "out"


@pytest.fixture(scope="module")
def run_folder(stored) -> Path:
    """The folder of the run with the per-head analyses (the study's runs have the cosine and the patterns only)."""
    (folder,) = [path.parent for path in stored.glob(f"*/{SUMMARY}") if "ablation" in read_json(path)["analyses"]]
    return folder


def rows(frame: pd.DataFrame, **where: object) -> pd.DataFrame:
    """The rows of ``frame`` whose columns hold the values given."""
    return frame[
        pd.concat([(frame[column] == value).fillna(False) for column, value in where.items()], axis=1).all(axis=1)
    ]


@SLOW
def test_the_table_has_its_columns_and_types_and_names_each_value_once(stored):
    runs = load_runs(stored)
    assert {column: str(kind) for column, kind in runs.dtypes.items()} == RUN_COLUMNS
    assert runs.groupby("run").ngroups == 5 and set(runs.task) == {"rte", "mrpc"}
    assert not runs.duplicated(KEY).any()
    assert runs.value.notna().all() and runs.dropna(subset=["head"]).layer.notna().all()
    assert (runs.checkpoint.isna() | runs.pair.isna()).all()


@SLOW
def test_per_head_and_per_layer_values_are_the_stored_ones_at_one_based_positions(run_folder):
    runs = load_runs(run_folder)
    result = {name: entry["result"] for name, entry in read_json(run_folder / SUMMARY)["analyses"].items()}
    finetuned = {
        name: stored["per_checkpoint"][FINETUNED] for name, stored in result.items() if "per_checkpoint" in stored
    }
    expected = {
        ("surface", "entropy", 2, 3): finetuned["surface"]["per_head"]["entropy"][1][2],
        ("sinks", "sink_share.cls", 2, None): finetuned["sinks"]["per_layer"]["sink_share"]["cls"][1],
        ("vig", "next", 1, 4): finetuned["vig"]["per_head"]["next"][0][3],
        ("ablation", "zero.delta", 2, 1): finetuned["ablation"]["heads"]["zero"]["delta"][1][0],
        ("ablation", "uniform.delta", 1, None): finetuned["ablation"]["layers"]["uniform"]["delta"][0],
        ("patterns", "counts.heterogeneous", 1, 2): finetuned["patterns"]["counts_per_head"][0][1][4],
    }
    for (analysis, metric, layer, head), value in expected.items():
        found = rows(runs, analysis=analysis, metric=metric, checkpoint=FINETUNED, layer=layer)
        found = found[found["head"].isna()] if head is None else rows(found, head=head)
        assert found.value.tolist() == [value], (analysis, metric)


@SLOW
def test_cosine_rows_carry_the_pair_and_no_checkpoint(run_folder):
    runs = load_runs(run_folder)
    cosine = runs[(runs.analysis == "cosine") & runs.layer.notna()]
    assert (cosine.pair == MAIN_PAIR).all() and cosine.checkpoint.isna().all()
    per_layer = cosine[(cosine.metric == "cosine") & cosine["head"].isna()]
    stored = read_json(run_folder / SUMMARY)["analyses"]["cosine"]["result"]["per_pair"][MAIN_PAIR]["per_layer"]
    assert per_layer.sort_values("layer").value.tolist() == stored


@SLOW
def test_a_per_checkpoint_statistic_has_one_row_per_layer_head_and_checkpoint(run_folder):
    runs = load_runs(run_folder)
    run = read_json(run_folder / SUMMARY)["run"]
    entropy = runs[(runs.metric == "entropy") & runs["head"].notna()]
    assert len(entropy) == run["num_layers"] * run["num_heads"] * 2
    assert set(zip(entropy.checkpoint, entropy.layer, entropy["head"])) == {
        (checkpoint, layer, head)
        for checkpoint in (PRETRAINED, FINETUNED)
        for layer in range(1, run["num_layers"] + 1)
        for head in range(1, run["num_heads"] + 1)
    }


@SLOW
def test_the_scalar_rows_are_the_runs_mlflow_metrics(run_folder):
    runs = load_runs(run_folder)
    logged = summary_metrics(read_json(run_folder / SUMMARY))
    scalars = runs[runs.metric.isin(logged) & runs["head"].isna()]  # a one-layer metric keeps its layer
    assert len(scalars) == len(logged) and dict(zip(scalars.metric, scalars.value)) == pytest.approx(logged)
    assert scalars[scalars.metric == "cosine_layer_2"].layer.tolist() == [2]
    assert set(scalars.analysis) >= {"evaluation", "cosine", "patterns", "sinks", "vig", "ablation"}
    placed = {
        row.metric: tuple(None if pd.isna(value) else value for value in (row.checkpoint, row.pair))
        for row in scalars.itertuples()
    }
    assert placed["pattern_finetuned_vertical"] == (FINETUNED, None)
    assert placed["dev_accuracy_change"] == (None, MAIN_PAIR)
    assert placed["dev_accuracy_majority"] == (None, None)  # the majority class is no checkpoint


@SLOW
def test_a_study_gives_its_spreads_over_seeds_and_its_findings(stored):
    study = load_study("tiny", stored)
    stored_study = read_json(stored / "studies" / "tiny" / "study.json")
    assert {column: str(kind) for column, kind in study.dtypes.items()} == STUDY_COLUMNS
    (row,) = rows(study, task="mrpc", metric="cosine_mean").itertuples()
    spread = stored_study["tasks"]["mrpc"]["metrics"]["cosine_mean"]
    assert (row.mean, row.std, row.n, row.analysis) == (spread["mean"], spread["std"], 2, "cosine")
    assert study.analysis.notna().all()
    pd.testing.assert_frame_equal(load_study(stored / "studies" / "tiny"), study)
    findings = load_findings("tiny", stored)
    assert {column: str(kind) for column, kind in findings.dtypes.items()} == FINDING_COLUMNS
    # one row per finding, task and seed
    assert len(findings) == sum(
        len(cell["per_seed"]) for finding in stored_study["findings"].values() for cell in finding["per_task"].values()
    )
    for task in ("rte", "mrpc"):  # the seconds each run logged to MLflow: fine-tuning, and the analyses
        assert {phase: spread["n"] for phase, spread in stored_study["seconds"][task].items()} == {
            "fine-tuning": 2,
            "analyses": 2,
        }
        assert stored_study["seconds"][task]["fine-tuning"]["min"] > 0
    cells = list(rows(findings, finding="pattern_change_vertical", task="rte").itertuples())
    stored_cell = stored_study["findings"]["pattern_change_vertical"]["per_task"]["rte"]
    assert [(cell.seed, cell.state, cell.value, cell.low, cell.high) for cell in cells] == [
        (record["seed"], record["state"], record["value"], *record["interval"]) for record in stored_cell["per_seed"]
    ]
    assert {(cell.holds, cell.seeds) for cell in cells} == {(stored_cell["holds"], stored_cell["seeds"])}


@SLOW
def test_export_writes_parquet_and_csv_that_read_back_as_the_tables(stored, tmp_path, capsys):
    out = tmp_path / "export"
    assert main(["export", "--output-dir", str(stored), "--out", str(out)]) == 0
    assert capsys.readouterr().out.split() == [str(out / "runs.parquet"), str(out / "runs.csv")]
    runs = load_runs(stored)
    pd.testing.assert_frame_equal(pd.read_parquet(out / "runs.parquet"), runs)
    pd.testing.assert_frame_equal(pd.read_csv(out / "runs.csv", dtype=RUN_COLUMNS), runs)


@SLOW
def test_export_of_a_study_writes_its_runs_spreads_and_findings(stored, tmp_path):
    out = tmp_path / "export"
    assert main(["export", "--output-dir", str(stored), "--study", "tiny", "--out", str(out)]) == 0
    assert sorted(path.name for path in out.iterdir()) == sorted(
        f"{stem}.{suffix}" for stem in ("runs", "study", "findings") for suffix in ("parquet", "csv")
    )
    assert pd.read_parquet(out / "runs.parquet").run.nunique() == 4  # the study's runs, not the other one
    study, findings = load_study("tiny", stored), load_findings("tiny", stored)
    pd.testing.assert_frame_equal(pd.read_parquet(out / "study.parquet"), study)
    pd.testing.assert_frame_equal(pd.read_csv(out / "study.csv", dtype=STUDY_COLUMNS), study)
    pd.testing.assert_frame_equal(pd.read_csv(out / "findings.csv", dtype=FINDING_COLUMNS), findings)


@SLOW
def test_export_of_named_runs_reads_those_runs_only(stored, run_folder, tmp_path):
    out = tmp_path / "export"
    assert main(["export", "--output-dir", str(stored), "--runs", run_folder.name, "--out", str(out)]) == 0
    pd.testing.assert_frame_equal(pd.read_parquet(out / "runs.parquet"), load_runs([run_folder]))
    assert load_runs([run_folder]).equals(load_runs(run_folder))


@SLOW
def test_bad_input_is_one_line(stored, tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    cases = {
        ("--output-dir", str(tmp_path / "absent")): "no such folder",
        ("--output-dir", str(tmp_path / "empty")): "nothing stored in",
        ("--output-dir", str(stored), "--study", "absent"): "study absent: no study.json there",
        ("--output-dir", str(stored), "--runs", "absent"): "--runs absent: no summary.json there",
    }
    for flags, said in cases.items():
        assert main(["export", *flags, "--out", str(tmp_path / "export")]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and said in err and err.count("\n") == 1, err
    assert not (tmp_path / "export").exists()


@SLOW
def test_the_readmes_notebook_example_runs_on_stored_results(stored, monkeypatch, capsys):
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    example = re.search(r"<!-- example:frames -->\n```python\n(.*?)```", readme, re.DOTALL).group(1)
    monkeypatch.chdir(stored.parent)  # where `outputs` would be: the tiny runs and the study "tiny"
    (stored.parent / "outputs").symlink_to(stored)
    exec(compile(example, "README.md", "exec"), {})
    printed = capsys.readouterr().out
    assert "task" in printed and "mrpc" in printed and "rte" in printed  # the per-layer cosine table
    assert "beats_majority" in printed  # a finding of the tiny study, seed by seed
