"""Results tables in the README and docs are generated from stored runs and studies, never typed."""

from __future__ import annotations

import json

import pytest

from harness.cli import main
from harness.present.doc_tables import documents, rebuild, render, stored_results, sweep_table, take_run, take_study
from harness.present.study_figures import draw_study
from harness.results.store import write_json
from harness.results.summary import seal
from tasks.errors import InputError
from tests.fixtures import tiny_run_arguments
from tests.unit.study.test_study import study_of

TABLES = (
    "overview",
    "evaluation_table",
    "coreference_table",
    "syntax_table1",
    "probes_table3",
    "surface_label_changes",
)


def test_outside_a_checkout_docs_is_one_line(tmp_path):
    with pytest.raises(InputError, match="no README.md; `harness docs` rebuilds the tables of a checkout"):
        documents(tmp_path)


def test_every_table_in_the_readme_and_docs_is_what_its_stored_results_give(capsys):
    assert rebuild(documents(), check=True) == []
    assert main(["docs", "--check"]) == 0 and "every table agrees" in capsys.readouterr().out


@pytest.fixture(scope="module")
def stored(tiny_model_dir, tiny_data, tmp_path_factory):
    root = tmp_path_factory.mktemp("doctables")
    assert main(tiny_run_arguments(tiny_model_dir, tiny_data, root, "--no-figures")) == 0  # tables read the store
    (run_folder,) = (root / "out").glob("*/summary.json")
    path = take_run("tiny", run_folder.parent, root / "results")
    return root, path


@pytest.mark.slow  # a whole tiny run (the module's `stored`)
def test_a_runs_stored_results_give_every_table_and_leave_out_what_no_table_reads(stored):
    root, path = stored
    results = stored_results("tiny", root / "results")
    assert "js_divergence" not in results["analyses"]["clustering"]["result"]
    assert "gradients" not in results["analyses"]  # read by no table
    for name in TABLES:
        assert "|---" in render(name, results), name
    with pytest.raises(InputError, match="table 'nope'"):
        render("nope", results)


@pytest.mark.slow  # a whole tiny run (the module's `stored`)
def test_a_hand_edited_table_is_found_and_rebuilt_and_an_unknown_run_is_a_clear_error(stored):
    root, _ = stored
    doc = root / "doc.md"
    doc.write_text("# Doc\n\n<!-- table:probes_table3 run:tiny -->\ntyped by hand\n<!-- /table -->\nafter\n")
    assert rebuild([doc], check=True, results_dir=root / "results") == ["doc.md: probes_table3 run:tiny"]
    assert "typed by hand" in doc.read_text()  # --check rewrites nothing
    rebuild([doc], results_dir=root / "results")
    text = doc.read_text()
    assert "typed by hand" not in text and text.endswith("<!-- /table -->\nafter\n")
    assert rebuild([doc], check=True, results_dir=root / "results") == []
    doc.write_text("<!-- table:overview run:elsewhere -->\n<!-- /table -->\n")
    with pytest.raises(InputError, match="elsewhere.json: no stored results of run 'elsewhere'"):
        rebuild([doc], results_dir=root / "results")


@pytest.mark.slow  # a whole tiny run (the module's `stored`)
def test_the_stored_results_name_the_run_they_came_from(stored):
    _, path = stored
    source = json.loads(path.read_text())["source"]
    assert source["run_folder"].startswith("rte-tiny_model") and len(source["summary_key"]) == 64


def test_a_sweep_table_gives_each_settings_mean_spread_and_seeds_that_learned():
    def point(seed: int, score: float, learned: bool, rate: float = 5e-5, **reinit: int) -> dict:
        return {
            "task": "rte",
            "learning_rate": rate,
            "epochs": 6.0,
            "seed": seed,
            "max_train_examples": None,
            "train_examples": 2490,
            "metric": "dev/accuracy",
            "score": score,
            "majority": 0.527,
            "learned": learned,
            "train_seconds": 400.0,
            **reinit,
        }

    lines = sweep_table(
        {
            "points": [
                point(42, 0.58, False),
                point(1, 0.60, True),
                point(2, 0.62, True),
                point(42, 0.55, False, 2e-5),
                point(42, 0.65, True, reinit_layers=1),
            ]
        }
    ).splitlines()
    # points stored before --reinit-layers existed read as none re-initialised
    assert lines[2] == "| rte | 2e-05 | 6 | 0 | 2490 | dev/accuracy | 1 | 55.0 | 52.7 | 0 | 400 |"
    assert lines[3] == "| rte | 5e-05 | 6 | 0 | 2490 | dev/accuracy | 3 | 60.0 ± 2.0 | 52.7 | 2 | 400 |"
    assert lines[4] == "| rte | 5e-05 | 6 | 1 | 2490 | dev/accuracy | 1 | 65.0 | 52.7 | 1 | 400 |"


def test_a_stored_study_gives_its_tables_and_keeps_its_figures_beside_them(tmp_path):
    folder = tmp_path / "studies" / "glue"
    study = study_of(["rte", "mrpc"]) | {"kept_out_of_findings": {"wnli": "not learned"}}
    write_json(folder / "study.json", study)
    seal(folder, study)
    draw_study(study, folder / "figures")
    (folder / "figures" / "stale.txt").write_text("not a figure")
    path = take_study("glue", folder, tmp_path / "results")
    assert json.loads(path.read_text()) == study
    kept = {p.name for p in (tmp_path / "results" / "glue" / "figures").iterdir()}
    assert {"cosine_per_layer_by_task.png", "findings.md", "dev_scores_by_task.md"} <= kept
    assert not any(name.endswith((".pdf", ".txt")) for name in kept)  # PNGs and tables only
    results = stored_results("glue", tmp_path / "results")
    assert render("dev_scores_by_task", results).startswith("| task | metric |")
    assert "Not in the findings: wnli: not learned." in render("findings", results)
    with pytest.raises(
        InputError, match="table 'overview': the stored study gives no such table; its tables: findings"
    ):
        render("overview", results)
    with pytest.raises(InputError, match="study.json: damaged"):
        take_study("bad", tmp_path, tmp_path / "results")
