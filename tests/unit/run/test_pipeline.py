"""``harness run`` end to end on a tiny BERT saved to disk: store, resume, reuse, run folders, MLflow."""

from __future__ import annotations

import json
import logging
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest
from mlflow.tracking import MlflowClient

import harness.present.redraw
from harness.analyses import ANALYSES
from harness.cli import main
from harness.present.redraw import DRAWN, drawn_files, redraw
from harness.results.checkpoints import FINETUNED
from harness.results.store import read_json, write_json
from harness.run.tracking import CHECKPOINT_TAG, HARNESS_RUNS, PARENT_TAG
from harness.views import VIEWS
from harness.views.summary import summary_metrics
from tests.fixtures import PNG_ONLY, snapshot, tiny_run_arguments

DEFAULT_ANALYSES = {name for name, analysis in ANALYSES.items() if analysis.on_by_default}
pytestmark = pytest.mark.slow  # each test is a whole tiny run or reruns one (20 s with its figures)
ENTRY_KEYS = {
    "analysis",
    "version",
    "joint",
    "checkpoints",
    "pairs",
    "pair_names",
    "keys",
    "source",
    "settings",
    "result",
    "reference",
}


def summaries(root: Path) -> dict[str, dict]:
    return {path.parent.name: read_json(path) for path in sorted((root / "out").glob("*/summary.json"))}


ONE_PROCESS = "drawn-in-one-process"  # the run folder as the run left it, before tests add to or redraw it


@pytest.fixture(scope="module")
def finished(tiny_model_dir, tiny_data, tmp_path_factory):
    """A tiny run of every default analysis; its figures drawn in one process (whatever the cores),
    its folder kept as the run left it in ``ONE_PROCESS`` for the test that draws them in two."""
    root = tmp_path_factory.mktemp("pipeline")
    argv = tiny_run_arguments(tiny_model_dir, tiny_data, root, "--log-checkpoint", "--figure-processes", "1", *PNG_ONLY)
    assert main(argv) == 0
    (run_dir,) = (root / "out").glob("*/summary.json")
    shutil.copytree(run_dir.parent, root / ONE_PROCESS)
    return root, argv


def test_every_analysis_has_an_entry_of_the_one_schema(finished):
    root, _ = finished
    (summary,) = summaries(root).values()
    assert set(summary["analyses"]) == DEFAULT_ANALYSES
    for name, entry in summary["analyses"].items():
        # what an entry says together with the others (`Analysis.relate`) is there exactly when it says something
        related = ANALYSES[name].relate({**entry}, summary["analyses"])
        assert set(entry) == ENTRY_KEYS | ({"related"} if related is not None else set()), name
        assert entry.get("related") == related, name
        assert entry["checkpoints"] == ["pretrained", "finetuned"] and entry["pairs"] == [["pretrained", "finetuned"]]
        assert entry["version"] == ANALYSES[name].version
        if not entry["joint"]:
            assert set(entry["result"]["per_checkpoint"]) == {"pretrained", "finetuned"}
            assert set(entry["keys"]) == {"pretrained", "finetuned"}
    run = summary["run"]
    assert (run["task"], run["seed"], run["num_layers"], run["num_heads"]) == ("rte", 42, 2, 4)
    evaluation = summary["analyses"]["evaluation"]["result"]["per_checkpoint"]
    assert set(evaluation["finetuned"]["metrics"]) == {"dev/accuracy", "dev/loss"}


def test_a_finished_fine_tune_keeps_its_model_and_no_trainer_checkpoint(finished):
    root, _ = finished
    (final,) = (root / "cache").glob("*/final")
    assert (final / "model.safetensors").is_file() and (final / "result.json").is_file()
    assert not list(final.parent.glob("checkpoint-*"))  # weights and optimizer state of the epochs: gone


def test_a_second_run_reuses_everything_and_rewrites_no_stored_file(finished, capsys):
    root, argv = finished
    stored = snapshot(root / "out" / "store")
    checkpoints = snapshot(root / "cache")
    before = summaries(root)
    assert main(argv) == 0
    assert snapshot(root / "out" / "store") == stored
    assert snapshot(root / "cache") == checkpoints
    assert summaries(root) == before
    printed = capsys.readouterr()
    assert "%" not in printed.err  # no progress bar: nothing was streamed
    assert printed.out.startswith("fine-tuning recipe: papers, lr 0.001, epochs 1, batch 8, seed 42")
    # the tiny model learns nothing in one epoch, and the run says so
    assert "warning: finetuned is not clearly above the majority class on dev/accuracy" in printed.out


def test_one_mlflow_run_per_key_and_no_metric_logged_twice(finished, capsys):
    root, argv = finished
    assert main(argv) == 0
    client = MlflowClient(tracking_uri=f"sqlite:///{root}/mlflow.db")
    experiment = client.get_experiment_by_name("attention-shift")
    (run,) = client.search_runs([experiment.experiment_id], HARNESS_RUNS)
    # the printed link opens this run in the UI's model-training view
    out = capsys.readouterr().out
    assert (
        f"MLflow: http://127.0.0.1:5000/#/experiments/{experiment.experiment_id}/runs/{run.info.run_id}"
        "?workflowType=machine_learning"
    ) in out
    assert run.info.status == "FINISHED" and run.info.run_name == next(iter(summaries(root)))
    assert len(client.get_metric_history(run.info.run_id, "cosine_layer_2")) == 1
    metrics = run.data.metrics
    assert {"dev_accuracy_finetuned", "dev_accuracy_pretrained", "dev_accuracy_majority"} <= set(metrics)
    assert metrics["dev_accuracy_change"] == pytest.approx(
        metrics["dev_accuracy_finetuned"] - metrics["dev_accuracy_pretrained"]
    )
    headline = {
        name.removeprefix("headline/"): value for name, value in metrics.items() if name.startswith("headline/")
    }
    # what learning the task did is measured against the majority class, not the untrained head's chance score
    assert set(headline) == {
        "dev_accuracy_finetuned",
        "dev_accuracy_majority",
        "dev_above_majority_finetuned",
        "dev_above_majority_low_finetuned",
        "cosine_mean",
        "cosine_last_two_layers",
        "coref_all_change",
        "probes_uas_change_attn",
        *(f"cka{text}_{rows}_mean" for text in ("", "_text") for rows in ("tokens", "cls")),
        *(f"pattern_change_{name}" for name in ("vertical", "diagonal", "vertical_diagonal", "block", "heterogeneous")),
        *(
            f"vig_{checkpoint}_other_segment_identical_{what}"
            for what in ("max", "heads")
            for checkpoint in ("pretrained", "finetuned", "change")
        ),
    }
    assert all(value == metrics[name] for name, value in headline.items())
    assert {a.path for a in client.list_artifacts(run.info.run_id)} >= {"summary.json", "figures", "checkpoint"}
    # with --log-checkpoint: the fine-tuned model, label names included
    config = json.loads(
        (Path(client.download_artifacts(run.info.run_id, "checkpoint/config.json", str(root)))).read_text()
    )
    assert config["id2label"] == {"0": "entailment", "1": "not_entailment"}
    # params: the few settings a researcher varies (MLflow's compare view plots them); the identity as tags
    params, tags = run.data.params, run.data.tags
    assert params["task.task"] == "rte" and params["finetune.learning_rate"] and params["environment.precision"]
    assert all(name.startswith(("task.", "finetune.")) or name.count(".") == 1 for name in params) and len(params) < 25
    (summary,) = summaries(root).values()
    assert tags["examples.compared"] == str(summary["run"]["num_eval_examples"])
    assert tags["harness.version"] and tags["harness.git_commit"] and tags["model.revision"] == "local folder"
    assert len(tags["model.weights_sha256"]) == 64 and "/" not in tags["model.id"]
    assert not {name for name in params if name.startswith(("data.", "model.", "harness.", "examples."))}


def test_each_checkpoint_has_a_child_run_with_the_same_metric_names_and_a_compare_link(finished, capsys):
    root, argv = finished
    assert main(argv) == 0  # a rerun logs nothing twice and makes no child run twice
    out = capsys.readouterr().out
    client = MlflowClient(tracking_uri=f"sqlite:///{root}/mlflow.db")
    experiment = client.get_experiment_by_name("attention-shift")
    (parent,) = client.search_runs([experiment.experiment_id], HARNESS_RUNS)
    children = {
        run.data.tags[CHECKPOINT_TAG]: run
        for run in client.search_runs([experiment.experiment_id], f"tags.`{PARENT_TAG}` = '{parent.info.run_id}'")
    }
    assert set(children) == {"pretrained", "finetuned"}
    before, after = children["pretrained"].data.metrics, children["finetuned"].data.metrics
    assert {"dev_accuracy", "dev_loss", "surface_previous_heads", "pattern_vertical"} <= set(before) & set(after)
    assert "headline/dev_accuracy" in after
    assert not {name for name in (*before, *after) if "change" in name or "cosine" in name}  # pairs': neither's
    for name, run in children.items():
        assert run.info.status == "FINISHED" and run.data.params["checkpoint"] == name
        assert not [param for param in run.data.params if param.startswith("identity.")]
        assert [tag for tag in run.data.tags if tag.startswith("identity.")]  # its identity: tags
        assert run.data.metrics["dev_accuracy"] == parent.data.metrics[f"dev_accuracy_{name}"]
        assert run.data.metrics["surface_previous_heads"] == parent.data.metrics[f"surface_{name}_previous_heads"]
    runs = quote(
        json.dumps([children["pretrained"].info.run_id, children["finetuned"].info.run_id], separators=(",", ":"))
    )
    assert (
        f"side by side: http://127.0.0.1:5000/#/compare-runs?runs={runs}&experiments="
        f"{quote(json.dumps([experiment.experiment_id]))}&workflowType=machine_learning"
    ) in out


def test_the_run_folder_holds_its_settings_and_they_rerun_the_same_run(finished):
    root, _ = finished
    (settings,) = (root / "out").glob("*/config.json")
    before = summaries(root)
    assert main(["run", "--config", str(settings)]) == 0
    assert summaries(root) == before  # the same key: the same folder, everything reused


def test_the_checkpoint_is_not_copied_to_mlflow_unless_asked(tiny_model_dir, tiny_data, tmp_path):
    assert main(tiny_run_arguments(tiny_model_dir, tiny_data, tmp_path, "--analyses", "cosine")) == 0
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path}/mlflow.db")
    experiment = client.get_experiment_by_name("attention-shift")
    (run,) = client.search_runs([experiment.experiment_id], HARNESS_RUNS)
    artifacts = {artifact.path for artifact in client.list_artifacts(run.info.run_id)}
    assert "summary.json" in artifacts and "checkpoint" not in artifacts


def test_a_lost_result_is_recomputed_and_nothing_else(finished):
    root, argv = finished
    store = root / "out" / "store"
    lost = next((store / "surface").glob("*.json"))
    lost.unlink()
    others = {
        name: state
        for name, state in snapshot(store).items()
        if not name.startswith("surface/") and not name.startswith("sources/")
    }
    assert main(argv) == 0
    assert lost.is_file()
    assert {name: state for name, state in snapshot(store).items() if name in others} == others


def test_a_damaged_result_is_recomputed_not_a_crash(finished):
    root, argv = finished
    damaged = next((root / "out" / "store" / "cosine").glob("*.json"))
    damaged.write_text('{"identity": {"analysis": "cos')
    assert main(argv) == 0
    assert json.loads(damaged.read_text())["identity"]["analysis"] == "cosine"


def test_a_result_of_an_older_analysis_version_is_not_reused(finished, monkeypatch):
    root, argv = finished
    monkeypatch.setattr(ANALYSES["cosine"], "version", ANALYSES["cosine"].version + 1)
    before = set((root / "out" / "store" / "cosine").glob("*.json"))
    assert main(argv) == 0
    assert len(set((root / "out" / "store" / "cosine").glob("*.json")) - before) == 1
    (summary,) = summaries(root).values()
    assert summary["analyses"]["cosine"]["version"] == ANALYSES["cosine"].version


def test_a_subset_run_keeps_the_earlier_entries_of_the_same_key(finished):
    root, argv = finished
    assert main([*argv, "--analyses", "cosine"]) == 0
    (summary,) = summaries(root).values()
    assert set(summary["analyses"]) == DEFAULT_ANALYSES


def test_other_settings_get_their_own_run_folder(tiny_model_dir, tiny_data, tmp_path):
    assert main(tiny_run_arguments(tiny_model_dir, tiny_data, tmp_path, "--analyses", "cosine")) == 0
    assert (
        main(tiny_run_arguments(tiny_model_dir, tiny_data, tmp_path, "--analyses", "cosine", "--learning-rate", "5e-4"))
        == 0
    )
    runs = summaries(tmp_path)
    assert len(runs) == 2 and all(name.startswith("rte-tiny_model") for name in runs)
    first, second = runs.values()
    assert first["run"]["finetune_key"] != second["run"]["finetune_key"]


def test_the_pretrained_model_on_the_treebank_is_measured_once_for_every_task_and_seed(
    tiny_model_dir, tiny_data, tmp_path
):
    for task, seed in (("rte", "1"), ("mrpc", "2")):
        assert (
            main(
                tiny_run_arguments(
                    tiny_model_dir, tiny_data, tmp_path, "--analyses", "syntax", "--seed", seed, task=task
                )
            )
            == 0
        )
    keys = [summary["analyses"]["syntax"]["keys"] for summary in summaries(tmp_path).values()]
    assert keys[0]["pretrained"] == keys[1]["pretrained"] and keys[0]["finetuned"] != keys[1]["finetuned"]
    assert len(list((tmp_path / "out" / "store" / "syntax").glob("*.json"))) == 3


def test_figures_redraws_the_run_asked_for(finished, capsys):
    root, argv = finished
    (name,) = summaries(root)
    figure = root / "out" / name / "figures" / "cosine_per_head.png"
    figure.unlink()
    assert main(["figures", *argv[1:], "--analyses", "cosine"]) == 0
    assert figure.is_file() and figure.read_bytes()[:4] == b"\x89PNG"
    assert main(["figures", *argv[1:], "--learning-rate", "0.1"]) == 2
    assert f"runs with other settings: {name}" in capsys.readouterr().err
    assert main(["figures", *argv[1:], "--analyses", "cosine", "ablation"]) == 2  # the run has no ablation
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"error: --analyses: {root / 'out' / name} has no figures of ablation; its analyses: ")


def test_figures_of_a_run_folder_are_redrawn_without_loading_a_model(finished):
    root, _ = finished
    (name,) = summaries(root)
    folder = root / "out" / name
    figure = folder / "figures" / "cosine_per_head.png"
    figure.unlink()
    script = (
        "import sys; from harness.cli import main; code = main(['figures', sys.argv[1], '--vector-formats', 'none']); "
        "print(code, [m for m in ('torch', 'transformers', 'mlflow') if m in sys.modules])"
    )
    printed = subprocess.run(
        [sys.executable, "-c", script, str(folder)], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert printed[-1] == "0 []" and figure.read_bytes()[:4] == b"\x89PNG"
    (said,) = printed[:-1]  # one line, not a path per file
    drawn = list((folder / "figures").glob("*.png"))
    assert said.startswith(f"redrew {len(drawn)} figures (PNG) and ") and said.endswith(str(folder / "figures"))


def test_no_figures_leaves_the_drawing_to_harness_figures(tiny_model_dir, tiny_data, tmp_path, capsys):
    """A run with --no-figures stores and logs everything but draws nothing, says which command
    draws the figures later, and that command draws them from the stored summary (with the PDFs
    of a paper where asked for)."""
    assert main(tiny_run_arguments(tiny_model_dir, tiny_data, tmp_path, "--analyses", "cosine", "--no-figures")) == 0
    (run_dir,) = (tmp_path / "out").glob("rte-*")
    assert not list(run_dir.glob("figures/*.png"))
    assert f"figures: not drawn (--no-figures); `harness figures {run_dir}` draws them" in capsys.readouterr().out
    assert main(["figures", str(run_dir), "--vector-formats", "pdf"]) == 0
    assert list(run_dir.glob("figures/cosine*.png")) and list(run_dir.glob("figures/cosine*.pdf"))


def test_vector_formats_choose_the_copies_beside_each_png_and_a_change_redraws(
    tiny_model_dir, tiny_data, tmp_path, capsys
):
    """``--vector-formats svg``: each figure as PNG and SVG (text kept as text), no PDF; the same
    run asking for PDF draws again, as the record of what was drawn keeps the formats, and so does
    the default, PNG alone."""
    argv = tiny_run_arguments(tiny_model_dir, tiny_data, tmp_path, "--analyses", "cosine")
    assert main([*argv, "--vector-formats", "svg"]) == 0
    (figures,) = (tmp_path / "out").glob("rte-*/figures")
    pngs = sorted(figures.glob("*.png"))
    assert pngs and sorted(figures.glob("*.svg")) == [png.with_suffix(".svg") for png in pngs]
    assert not list(figures.glob("*.pdf"))
    svg = pngs[0].with_suffix(".svg").read_text()
    assert svg.lstrip().startswith("<?xml") and "<text" in svg  # svg.fonttype none: editable text
    assert main([*argv, "--vector-formats", "pdf"]) == 0
    assert sorted(figures.glob("*.pdf")) == [png.with_suffix(".pdf") for png in pngs]
    recorded = read_json(figures / ".drawn.json")["analyses"]["cosine"]
    assert {Path(name).suffix for name in recorded} == {".png", ".pdf"}
    assert main(argv) == 0  # the default: no vector copy
    assert {Path(name).suffix for name in read_json(figures / ".drawn.json")["analyses"]["cosine"]} == {".png"}
    capsys.readouterr()
    assert main(["figures", str(figures.parent), *PNG_ONLY]) == 0
    assert "figures (PNG) and " in capsys.readouterr().out


def test_every_signed_change_a_view_declares_is_a_metric_of_the_run(finished):
    root, _ = finished
    (summary,) = summaries(root).values()
    metrics = summary_metrics(summary)
    declared = {name for view in VIEWS.values() if view.name in summary["analyses"] for name in view.signed_changes}
    assert declared and declared <= metrics.keys()  # a study says "not defined" of a missing one: misspelt, here
    assert {view.name for view in VIEWS.values() if view.signed_changes} <= summary["analyses"].keys() | {"ablation"}
    assert all(set(view.papers) <= set(view.claims) | set(view.signed_changes) for view in VIEWS.values())


def test_a_file_edited_in_place_recomputes_exactly_what_read_it(tiny_model_dir, tiny_data, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(tiny_data, data)
    argv = tiny_run_arguments(tiny_model_dir, data, tmp_path, "--analyses", "cosine", "syntax")
    assert main(argv) == 0
    store, cache = snapshot(tmp_path / "out" / "store"), snapshot(tmp_path / "cache")
    treebank = data / "tiny-dev.conllu"
    treebank.write_text(treebank.read_text().replace("\tdet\t", "\tamod\t"))  # same path, other relations
    assert main(argv) == 0
    changed = {name for name, state in snapshot(tmp_path / "out" / "store").items() if store.get(name) != state}
    assert any(name.startswith("syntax/") for name in changed)
    assert all(name.startswith(("syntax/", "sources/", "seals/")) for name in changed)  # and the new summary's seal
    assert snapshot(tmp_path / "cache") == cache  # the fine-tune did not read the treebank: not retrained

    dev = data / "glue" / "RTE" / "dev.tsv"
    labels = {"entailment": "not_entailment", "not_entailment": "entailment"}
    rows = [line.rsplit("\t", 1) for line in dev.read_text().splitlines()]
    header, *examples = rows
    dev.write_text("\n".join(["\t".join(header), *(f"{text}\t{labels[label]}" for text, label in examples)]) + "\n")
    assert main(argv) == 0
    finetune_keys = {summary["run"]["finetune_key"] for summary in summaries(tmp_path).values()}
    assert len(summaries(tmp_path)) == 3 and len(finetune_keys) == 2  # flipped labels: a new fine-tune and run
    assert len(list((tmp_path / "cache").glob("rte-*/final/result.json"))) == 2


def test_a_quick_look_bounds_every_source_records_the_sizes_and_has_every_analysis(tiny_model_dir, tiny_data, tmp_path):
    assert (
        main(
            tiny_run_arguments(
                tiny_model_dir,
                tiny_data,
                tmp_path,
                *("--quick", "--max-corpus-items", "3", "--max-dev-examples", "5", "--no-figures"),
            )
        )
        == 0
    )
    (summary,) = summaries(tmp_path).values()
    assert set(summary["analyses"]) == DEFAULT_ANALYSES
    entries = summary["analyses"]
    assert entries["syntax"]["source"]["notes"]["sentences"] == 3  # of 6 in the treebank
    assert entries["syntax"]["source"]["identity"]["max_sentences"] == 3
    assert entries["probes"]["source"]["notes"]["sentences"] == 3
    assert entries["probes"]["source"]["notes"]["train_sentences"] == 5  # --probe-train-sentences 5 < quick's 200
    assert entries["coreference"]["source"]["identity"]["max_documents"] == 3
    assert entries["syntax"]["settings"]["syntax_min_count"] == 1  # smaller than quick's cap: kept
    assert entries["evaluation"]["source"]["notes"]["examples"] == {"dev": 5}  # of 8 dev examples scored
    assert entries["evaluation"]["source"]["identity"]["sample"] == {"max_examples": 5, "seed": 42}


def test_a_rerun_keeps_the_figures_of_an_unchanged_summary_and_figures_redraws_them(finished):
    root, argv = finished
    assert main(argv) == 0  # the summary is final: nothing left to merge into it
    (figures,) = (root / "out").glob("*/figures")
    drawn = snapshot(figures)
    assert main(argv) == 0
    assert snapshot(figures) == drawn
    assert main(["figures", *argv[1:], "--analyses", "cosine", "sinks"]) == 0  # those alone, the rest kept
    redrawn = snapshot(figures)
    named = {path.name for name in ("cosine", "sinks") for path in drawn_files(figures)[name]} | {DRAWN}
    assert len(named) > 4 and redrawn.keys() == drawn.keys()
    assert {name for name in drawn if redrawn[name] != drawn[name]} == named


def test_a_rerun_redraws_figures_drawn_by_other_drawing_code(tiny_model_dir, tiny_data, tmp_path, monkeypatch):
    argv = tiny_run_arguments(tiny_model_dir, tiny_data, tmp_path, "--analyses", "cosine", *PNG_ONLY)
    assert main(argv) == 0
    (figures,) = (tmp_path / "out").glob("*/figures")
    drawn = snapshot(figures)
    # a new version of the harness draws differently: what drew the figures is part of their key
    monkeypatch.setattr(harness.present.redraw, "drawing_code_hash", lambda: "0" * 64)
    assert main(argv) == 0
    redrawn = snapshot(figures)
    assert all(redrawn[name][0] != drawn[name][0] for name in drawn if name.endswith(".png"))


def test_ablate_needs_a_stored_fine_tuned_checkpoint(tiny_model_dir, tiny_data, tmp_path, capsys):
    argv = tiny_run_arguments(tiny_model_dir, tiny_data, tmp_path, "--analyses", "cosine")
    assert main(["ablate", *argv[1:]]) == 2
    assert "no fine-tuned checkpoint for these flags" in capsys.readouterr().err
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").glob("rte-*"))


def test_ablate_adds_the_ablation_to_the_run_and_recomputes_nothing_else(
    tiny_model_dir, tiny_data, tmp_path, capsys, caplog
):
    argv = tiny_run_arguments(tiny_model_dir, tiny_data, tmp_path, "--analyses", "cosine")
    assert main(argv) == 0
    assert "ablation (head disabling, importance, pruning) is off on the CPU" in capsys.readouterr().out
    stored = snapshot(tmp_path / "out" / "store")
    (figures,) = (tmp_path / "out").glob("*/figures")
    drawn = snapshot(figures)
    with caplog.at_level(logging.WARNING, logger="harness.views.saving"):
        assert main(["ablate", *argv[1:]]) == 0
    assert [record.getMessage() for record in caplog.records if record.name == "harness.views.saving"] == []
    printed = capsys.readouterr().out
    assert "ablation (finetuned): intact dev accuracy" in printed and "pruning: heads pruned before" in printed
    after = snapshot(tmp_path / "out" / "store")
    kept = {name: state for name, state in stored.items() if not name.startswith("seals/")}  # the summary grew
    assert {name: state for name, state in after.items() if name in kept} == kept
    assert any(name.startswith("ablation/") for name in after)
    ((folder, summary),) = summaries(tmp_path).items()
    assert set(summary["analyses"]) == {"evaluation", "cosine", "ablation"}
    entry = summary["analyses"]["ablation"]
    assert "importance_vs_cosine" in entry["related"]["cosine"]["pretrained->finetuned"]
    figures = tmp_path / "out" / folder / "figures"
    redrawn = snapshot(figures)  # only the ablation's figures are drawn: the others' entries did not change
    assert {name: state for name, state in redrawn.items() if name in drawn and name != ".drawn.json"} == {
        name: state for name, state in drawn.items() if name != ".drawn.json"
    }
    assert {
        "ablation_heads_finetuned.png",
        "ablation_layers_finetuned.png",
        "ablation_pruning_finetuned.png",
        "ablation_importance.png",
        "ablation_table.md",
    } <= {path.name for path in figures.iterdir()}
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path}/mlflow.db")
    (run,) = client.search_runs([client.get_experiment_by_name("attention-shift").experiment_id], HARNESS_RUNS)
    assert {
        "ablation_intact_finetuned",
        "ablation_best_head_uniform_delta_finetuned",
        "ablation_worst_layer_zero_layer_finetuned",
    } <= set(run.data.metrics)


def test_every_figure_is_drawn_as_png_and_pdf_without_clipped_or_overlapping_text(finished, tmp_path, caplog):
    """Every figure of every analysis, redrawn from the stored summary: each PNG has a PDF with
    its fonts embedded, and the checks (`harness.views.figure_checks.figure_problems`: layout, colour-blind-safe
    colours, checkpoint wording) find nothing."""
    root, _ = finished
    (summary,) = summaries(root).values()
    with caplog.at_level(logging.WARNING, logger="harness.views.saving"):
        written = redraw(summary, tmp_path, force=True, formats=("png", "pdf"))
    pngs = [path for path in written if path.suffix == ".png"]
    assert len(pngs) > 20 and {path.with_suffix(".pdf") for path in pngs} <= set(written)
    for png in pngs:
        pdf = png.with_suffix(".pdf").read_bytes()
        assert pdf.startswith(b"%PDF") and (b"/FontFile2" in pdf or b"/Font" not in pdf), png.name
    assert [record.getMessage() for record in caplog.records] == []


def test_figures_drawn_in_two_processes_are_those_drawn_in_one(finished, tmp_path, caplog):
    """Each analysis's figures drawn in a process of its own (`harness.present.parallel`): the files
    the run drew in one process, byte for byte, in the order its record lists them, the same record
    of what drew them, and no warning of the figure checks (the one-process drawing's are checked
    by `test_every_figure_is_drawn_as_png_and_pdf_without_clipped_or_overlapping_text`)."""
    root, _ = finished
    summary, one = read_json(root / ONE_PROCESS / "summary.json"), root / ONE_PROCESS / "figures"
    with caplog.at_level(logging.WARNING, logger="harness.views.saving"):
        two = redraw(summary, tmp_path, force=True, processes=2)
    in_one = [path.relative_to(one) for paths in drawn_files(one).values() for path in paths]
    assert [path.relative_to(tmp_path) for path in two] == in_one
    assert len(two) > 20 and caplog.records == []
    assert (one / DRAWN).is_file() and (tmp_path / DRAWN).is_file()
    assert {path.name: path.read_bytes() for path in one.iterdir()} == {
        path.name: path.read_bytes() for path in tmp_path.iterdir()
    }


def test_an_edited_summary_is_drawn_and_reported_from_nowhere_until_rebuilt_by_the_command_it_names(
    finished, tmp_path, capsys, monkeypatch
):
    """A number changed by hand in summary.json (the store holds another) of a copied run folder:
    figures and the report stop with one line naming the run folder and the command that rebuilds
    it, and draw nothing; that command, run from another folder, rebuilds the copy's summary from
    the copy's store, recomputing nothing and leaving the original run as it was."""
    root = tmp_path / "copy"
    shutil.copytree(finished[0], root)
    (name,) = summaries(root)
    folder = root / "out" / name
    summary = read_json(folder / "summary.json")
    stored = summary["analyses"]["evaluation"]["result"]["per_checkpoint"][FINETUNED]["metrics"]
    stored["dev/accuracy"] = 0.987654
    write_json(folder / "summary.json", summary)
    figures = snapshot(folder / "figures")
    capsys.readouterr()
    for command in (["figures", str(folder), *PNG_ONLY], ["report", "--output-dir", str(root / "out")]):
        assert main(command) == 2
        (line,) = capsys.readouterr().err.strip().splitlines()
        assert line == (
            f"error: {folder / 'summary.json'}: it differs from what the harness wrote (analysis "
            f"evaluation); run `harness run --config {folder}/config.json --output-dir {root / 'out'}` to rebuild "
            "it from the stored results (nothing is recomputed)"
        )
    assert snapshot(folder / "figures") == figures and not (root / "out" / "report").exists()
    fix = shlex.split(line.split("run `", 1)[1].split("`", 1)[0])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # config.json's paths are whole: the command works from any folder
    original, cache, store = (
        snapshot(path) for path in (finished[0] / "out", finished[0] / "cache", root / "out" / "store")
    )
    # the copy's own MLflow store (a flag typed after --config wins), so the module's run keeps its record as it was
    assert main([*fix[1:], "--tracking-uri", f"sqlite:///{root / 'mlflow.db'}"]) == 0
    assert "wall time: cached checkpoint" in capsys.readouterr().out  # no fine-tuning
    assert snapshot(root / "out" / "store") == store  # every result read, none computed or written again
    assert snapshot(finished[0] / "cache") == cache and snapshot(finished[0] / "out") == original
    assert not any(elsewhere.iterdir())
    rebuilt = read_json(folder / "summary.json")["analyses"]["evaluation"]["result"]["per_checkpoint"][FINETUNED]
    assert rebuilt["metrics"]["dev/accuracy"] != 0.987654
    assert main(["figures", str(folder), "--analyses", "evaluation", *PNG_ONLY]) == 0
