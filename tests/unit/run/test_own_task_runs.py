"""A user's own task end to end on the tiny model: a local CSV classification spec (every default
analysis, figures, the learning check, report, export, MLflow) and a local JSONL pair task with a
score, defined by flags and by a spec, in a study."""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import datasets
import numpy as np
import pandas as pd
import pytest
import torch
from mlflow.tracking import MlflowClient
from transformers import AutoModelForTokenClassification, AutoTokenizer

from harness.analyses import ANALYSES
from harness.cli import main
from harness.results.checkpoints import FINETUNED, PRETRAINED
from harness.results.store import read_json
from harness.run.tracking import HARNESS_RUNS
from harness.views.evaluation import EvaluationView
from tests.fixtures import LEARNS, PNG_ONLY, SENTENCES, output_arguments, sentiment_sentences, tiny_run_arguments
from tests.unit.tasks.test_task_specs import write_sentiment

pytestmark = pytest.mark.slow  # whole tiny runs

DEFAULT_ANALYSES = {name for name, analysis in ANALYSES.items() if analysis.on_by_default}


@pytest.fixture(autouse=True)
def datasets_cache(tmp_path_factory, monkeypatch) -> None:
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path_factory.mktemp("hf-datasets")))


def only_summary(root: Path) -> dict:
    (path,) = (root / "out").glob("*/summary.json")
    return read_json(path)


def test_a_csv_task_of_ones_own_gets_everything_a_glue_task_gets(tiny_learner_dir, tiny_data, tmp_path, capsys):
    spec = write_sentiment(tmp_path / "data")
    argv = tiny_run_arguments(tiny_learner_dir, tiny_data, tmp_path, "--task", str(spec), *LEARNS, *PNG_ONLY)
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "dev finetuned: validation/accuracy 1.0000, validation/macro_f1 1.0000" in out
    assert "not clearly above the majority class" not in out
    summary = only_summary(tmp_path)
    assert summary["run"]["task"] == "sentiment" and summary["run"]["eval_split"] == "validation"
    assert set(summary["analyses"]) == DEFAULT_ANALYSES and summary["run"]["skipped"] == {}
    scores = summary["analyses"]["evaluation"]["result"]
    per_checkpoint, (comparison,) = scores["per_checkpoint"], scores["per_pair"].values()
    assert per_checkpoint[PRETRAINED]["task_spec"]["labels"] == ["neg", "pos"]
    assert per_checkpoint[FINETUNED]["majority"] == {
        "validation/accuracy": 0.5,
        "validation/macro_f1": pytest.approx(1 / 3),
    }
    assert comparison["learned"] and comparison["against_majority"]["interval"][0] > 0
    folder = next((tmp_path / "out").glob("sentiment-*"))
    table = (folder / "figures" / "evaluation_table.md").read_text()
    assert "| sentiment | 50.0 |" in table and "Dev scores (validation, accuracy, %)" in table
    assert len(list((folder / "figures").glob("*.png"))) > 10
    page = tmp_path / "report" / "index.html"
    assert main(["report", "--output-dir", str(tmp_path / "out"), "--out", str(page)]) == 0
    assert "sentiment" in page.read_text()
    assert main(["export", "--output-dir", str(tmp_path / "out"), "--out", str(tmp_path / "export")]) == 0
    rows = pd.read_parquet(tmp_path / "export" / "runs.parquet")
    assert set(rows["task"]) == {"sentiment"}
    tuned = rows[(rows["analysis"] == "evaluation") & (rows["checkpoint"] == FINETUNED)]
    assert dict(zip(tuned["metric"], tuned["value"]))["validation_macro_f1_finetuned"] == 1.0
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path}/mlflow.db")
    experiments = [experiment.experiment_id for experiment in client.search_experiments()]
    assert client.search_runs(experiments, "tags.task = 'sentiment'")


def similarity_rows() -> list[dict]:
    """Sentence pairs scored by the share of words they have in common (0 to 5)."""
    rows = []
    for first in SENTENCES:
        for second in SENTENCES:
            words, others = set(first.split()), set(second.split())
            rows.append(
                {"premise": first, "claim": second, "score": round(5 * len(words & others) / len(words | others), 2)}
            )
    return rows


def write_similarity(folder: Path) -> Path:
    """A JSONL pair task with a score (train.jsonl, dev.jsonl) and its TOML spec; the spec's path."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = similarity_rows()
    for split, part in (("train", rows[::2]), ("dev", rows[1::2])):
        (folder / f"{split}.jsonl").write_text("".join(json.dumps(row) + "\n" for row in part))
    spec = folder / "similarity.toml"
    spec.write_text(
        'name = "similarity"\ntext_fields = ["premise", "claim"]\nlabel_field = "score"\nlabel_kind = "score"\n'
        'eval_splits = ["dev"]\n[data_files]\ntrain = "train.jsonl"\ndev = "dev.jsonl"\n'
    )
    return spec


def test_a_jsonl_pair_task_with_a_score_runs_by_flags_and_in_a_study(tiny_model_dir, tiny_data, tmp_path, capsys):
    spec = write_similarity(tmp_path / "data")
    flags = ["--task", "overlap", "--dataset", str(tmp_path / "data"), "--text-fields", "premise", "claim"]
    flags += ["--label-field", "score", "--label-kind", "score"]
    argv = tiny_run_arguments(
        tiny_model_dir, tiny_data, tmp_path / "flags", *flags, "--analyses", "evaluation", "cosine"
    )
    assert main([*argv, "--no-figures"]) == 0
    printed = capsys.readouterr().out
    assert "dev mean score (the baseline): validation/pearson undefined, validation/spearman undefined" in printed
    assert "dev majority" not in printed  # a score has no majority class, and its mean no correlation
    scores = only_summary(tmp_path / "flags")["analyses"]["evaluation"]["result"]["per_checkpoint"]
    assert set(scores[FINETUNED]["metrics"]) == {"validation/pearson", "validation/spearman", "validation/loss"}
    # stored as 0, what the learning check compares against; said undefined, and logged as nothing
    assert scores[FINETUNED]["majority"] == {"validation/pearson": 0.0, "validation/spearman": 0.0}
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'flags'}/mlflow.db")
    experiments = [experiment.experiment_id for experiment in client.search_experiments()]
    (logged,) = client.search_runs(experiments, f"tags.task = 'overlap' and {HARNESS_RUNS}")
    assert (
        "validation_pearson_majority" not in logged.data.metrics
        and "validation_pearson_finetuned" in logged.data.metrics
    )
    assert scores[FINETUNED]["task_spec"]["label_kind"] == "score" and scores[FINETUNED]["task_spec"][
        "text_fields"
    ] == [
        "premise",
        "claim",
    ]
    capsys.readouterr()
    study = [
        "study",
        "--tasks",
        str(spec),
        "--seeds",
        "1",
        "--model",
        str(tiny_model_dir),
        "--analyses",
        "evaluation",
        "cosine",
        "--epochs",
        "1",
        "--batch-size",
        "8",
        "--no-figures",
        *output_arguments(tmp_path / "study"),
    ]
    assert main(study) == 0, capsys.readouterr().err
    (stored,) = (tmp_path / "study" / "out" / "studies").glob("*/study.json")
    assert read_json(stored)["tasks_asked"] == [str(spec)]
    (run,) = (tmp_path / "study" / "out").glob("similarity-*/summary.json")
    assert read_json(run)["run"]["eval_split"] == "dev"


def readme_spec() -> tuple[str, str]:
    """The README's example spec (the YAML block of "Your own task") and the file name it is given there."""
    section = (Path(__file__).resolve().parents[3] / "README.md").read_text().split("### Your own task", 1)[1]
    name = re.search(r"`(\w+\.yaml)`", section)
    block = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert name and block
    return block.group(1), name.group(1)


def test_the_readmes_example_spec_runs_as_written(tiny_learner_dir, tiny_data, tmp_path):
    text, name = readme_spec()
    assert f"python -m harness run --task {name} --model minilm" in " ".join(
        (Path(__file__).resolve().parents[3] / "README.md").read_text().split()
    )
    (tmp_path / name).write_text(text)
    (tmp_path / "reviews").mkdir()
    rows = sentiment_sentences()
    dev = [row for index, row in enumerate(rows) if (index // 2) % 2 == 0]  # both labels of every other subject
    for split, part in (("train", [row for row in rows if row not in dev]), ("dev", dev)):
        with (tmp_path / "reviews" / f"{split}.csv").open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["text", "label"])
            writer.writerows((sentence, ["negative", "positive"][label]) for sentence, label in part)
    argv = tiny_run_arguments(tiny_learner_dir, tiny_data, tmp_path, "--task", str(tmp_path / name), *LEARNS)
    assert main([*argv, "--analyses", "evaluation", "--no-figures"]) == 0
    summary = only_summary(tmp_path)
    (scores,) = summary["analyses"]["evaluation"]["result"]["per_pair"].values()
    assert summary["run"]["task"] == "reviews" and scores["learned"]


def test_a_tagging_task_fine_tunes_a_token_head_and_scores_each_word_at_its_first_sub_token(
    tiny_learner_dir, tiny_data, tmp_path, capsys
):
    spec = tmp_path / "tags.toml"
    for name in ("tiny-train.conllu", "tiny-dev.conllu"):  # beside the spec, as a user's files are
        shutil.copy(tiny_data / name, tmp_path / name)
    spec.write_text(
        'name = "tiny-upos"\ntext_fields = ["form"]\nlabel_field = "upos"\nlabel_kind = "tags"\n'
        'eval_splits = ["dev"]\n[data_files]\ntrain = "tiny-train.conllu"\ndev = "tiny-dev.conllu"\n'
    )
    argv = tiny_run_arguments(tiny_learner_dir, tiny_data, tmp_path, "--task", str(spec), *LEARNS, "--no-figures")
    at = argv.index("--corpus")  # without a corpus, the gradients read the dev sentences: the per-word task loss
    assert main(argv[:at] + argv[at + 2 :]) == 0
    out = capsys.readouterr().out
    assert "harness ablate" not in out  # a tagging task has no per-input predictions to ablate
    assert "scored over 42 words of 6 sentences (dev), each word at its first sub-token: accuracy is the share" in out
    assert "learned: fine-tuned above the majority class on dev/accuracy by +" in out and "over 42 dev words)" in out
    summary = only_summary(tmp_path)
    tags = EvaluationView.tables(summary["analyses"]["evaluation"], summary["run"])["evaluation_tags_table"]
    assert "42 words of dev" in tags and "| DET (most frequent) | 12 |" in tags and "| VERB | 6 |" in tags
    assert set(summary["analyses"]) == DEFAULT_ANALYSES and summary["run"]["skipped"] == {}
    assert summary["analyses"]["gradients"]["result"]["per_checkpoint"][FINETUNED]["loss"] == "task, per word"
    scores = summary["analyses"]["evaluation"]["result"]
    tuned = scores["per_checkpoint"][FINETUNED]
    assert tuned["examples"] == {"dev": 6 * 7}  # six sentences of seven words, each scored once
    assert tuned["majority"]["dev/accuracy"] == pytest.approx(2 / 7)  # DET and NOUN are two words of seven
    (comparison,) = scores["per_pair"].values()
    assert comparison["learned"] and tuned["metrics"]["dev/accuracy"] > 0.5
    # an independent recomputation: transformers' token classifier, words aligned by its own word ids
    (checkpoint,) = (tmp_path / "cache").glob("tiny-upos-*/final")
    model = AutoModelForTokenClassification.from_pretrained(checkpoint).eval()
    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    words, tags = ["the", "cat", "sat", "on", "the", "mat", "."], ["DET", "NOUN", "VERB", "ADP", "DET", "NOUN", "PUNCT"]
    encoded = tokenizer(words, is_split_into_words=True, return_tensors="pt")
    with torch.no_grad():
        predicted = model(**encoded).logits[0].argmax(-1).tolist()
    firsts = {word: position for position, word in reversed(list(enumerate(encoded.word_ids()))) if word is not None}
    independent = [model.config.id2label[predicted[firsts[index]]] for index in range(len(words))]
    assert tuned["predictions"]["dev"] == [sorted(set(tags)).index(tag) for tag in independent] * 6
    assert tuned["metrics"]["dev/accuracy"] == pytest.approx(np.mean([a == b for a, b in zip(independent, tags)]))


def test_an_own_task_along_its_fine_tuning_is_named_planned_and_logged_in_its_own_words(
    tiny_learner_dir, tiny_data, tmp_path, capsys
):
    """--trajectory on a CSV task whose split is "validation": the plan is printed before the work,
    the kept steps get the cheap analyses the findings need (not every analysis), every line and
    table names the score as "validation accuracy", the figures are the two-panel one and one per
    step, MLflow charts the dev score itself per step and holds a chart of all layers per step, and
    the report says whether the task was learned in words."""
    spec = write_sentiment(tmp_path / "data")
    argv = tiny_run_arguments(tiny_learner_dir, tiny_data, tmp_path, "--task", str(spec), *LEARNS, *PNG_ONLY)
    assert main([*argv, "--trajectory", "0.25", "0.5"]) == 0
    out = capsys.readouterr().out
    plan, done = out.index("along fine-tuning (--trajectory): steps 20, 40 of 80 kept"), out.index("done:")
    assert plan < done and "measured by evaluation, cosine, patterns, examples" in out[plan:done]
    assert "trajectory step 20 (25%): validation accuracy " in out and "dation" not in out.replace("validation", "")
    assert "learned: fine-tuned above the majority class on validation/accuracy by +" in out
    summary = only_summary(tmp_path)
    (point, _) = summary["trajectory"]["points"]
    assert "validation_accuracy_finetuned" in point["metrics"] and "cosine_layer_2" in point["metrics"]
    assert not any(name.startswith(("surface", "sinks", "probe")) for name in point["metrics"])
    folder = next((tmp_path / "out").glob("sentiment-*"))
    table = (folder / "figures" / "trajectory_table.md").read_text()
    assert "| validation accuracy |" in table
    drawn = {path.name for path in (folder / "figures").iterdir()}
    assert {"trajectory_cosine_per_layer.png", "trajectory_cosine_by_step.png"} <= drawn
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path}/mlflow.db")
    experiments = [experiment.experiment_id for experiment in client.search_experiments()]
    (parent,) = [run for run in client.search_runs(experiments) if "trajectory/cosine_mean" in run.data.metrics]
    history = client.get_metric_history(parent.info.run_id, "trajectory/validation_accuracy_finetuned")
    assert [point.step for point in history] == [20, 40, 80]
    images = [info.path for info in client.list_artifacts(parent.info.run_id, "images")]
    assert {path.split("+")[2] for path in images if path.endswith(".png")} == {"20", "40", "80"}
    assert main(argv + ["--trajectory", "0.25", "0.5"]) == 0  # the same run again logs no image twice
    assert len(client.list_artifacts(parent.info.run_id, "images")) == len(images)
    page = tmp_path / "report" / "index.html"
    assert main(["report", "--output-dir", str(tmp_path / "out"), "--out", str(page)]) == 0
    assert "learned the task" in page.read_text() and "yes: fine-tuned above the majority class" in page.read_text()
