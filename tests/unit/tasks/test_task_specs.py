"""Tasks as data: GLUE's nine shipped specs keep each task's layout and scoring; a user's spec
(TOML or YAML) and the same keys as flags make one task, read through `datasets`; a bad spec
or bad data is one line before any model work; the run's key holds the spec and the data."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import datasets
import pytest

from harness.cli import build_parser, configs_from, main
from harness.config import TaskConfig
from harness.run.plan import plan_run
from tasks.registry import TASKS
from tasks.spec import GlueLayout
from tests.fixtures import SHARED_DATA, assert_one_line_and_no_work, sentiment_sentences, tiny_run_arguments

# The GLUE registry as it was written in Python before the specs (the oracle the spec files must
# reproduce): name, folder, text fields, TSV columns, labels, labels in the files, metrics, header, eval splits.
_NLI = ("entailment", "not_entailment")
GLUE_BEFORE = [
    ("cola", "CoLA", ("sentence", None), (3, None, 1), ("unacceptable", "acceptable"), ("0", "1"), ("matthews",)),
    ("sst2", "SST-2", ("sentence", None), ("sentence", None, "label"), ("negative", "positive"), ("0", "1")),
    ("mrpc", "MRPC", ("sentence1", "sentence2"), ("#1 String", "#2 String", "Quality"), ("not_equivalent",)),
    ("stsb", "STS-B", ("sentence1", "sentence2"), ("sentence1", "sentence2", "score"), (), (), ("pearson",)),
    ("qqp", "QQP", ("question1", "question2"), ("question1", "question2", "is_duplicate"), ("not_duplicate",)),
    ("mnli", "MNLI", ("premise", "hypothesis"), ("sentence1", "sentence2", "gold_label"), ("entailment",)),
    ("qnli", "QNLI", ("question", "sentence"), ("question", "sentence", "label"), _NLI, _NLI, ("accuracy",)),
    ("rte", "RTE", ("sentence1", "sentence2"), ("sentence1", "sentence2", "label"), _NLI, _NLI, ("accuracy",)),
    ("wnli", "WNLI", ("sentence1", "sentence2"), ("sentence1", "sentence2", "label"), ("not_entailment",)),
]
METRICS_BEFORE = {"cola": ("matthews",), "mrpc": ("accuracy", "f1"), "qqp": ("accuracy", "f1")}
METRICS_BEFORE |= {"stsb": ("pearson", "spearman")}
LABELS_BEFORE = {
    "mrpc": (("not_equivalent", "equivalent"), ("0", "1")),
    "qqp": (("not_duplicate", "duplicate"), ("0", "1")),
    "mnli": (("entailment", "neutral", "contradiction"),) * 2,
    "wnli": (("not_entailment", "entailment"), ("0", "1")),
}


@pytest.mark.parametrize("before", GLUE_BEFORE, ids=[row[0] for row in GLUE_BEFORE])
def test_the_shipped_glue_specs_keep_each_tasks_layout_and_scoring(before):
    name, folder, fields, columns = before[:4]
    labels, values = LABELS_BEFORE.get(name, before[4:6])
    task = TASKS[name]
    assert task.glue == GlueLayout(folder, columns, values, header=name != "cola")
    assert (task.text_fields, task.label_names, task.config, task.dataset) == (fields, labels, name, "nyu-mll/glue")
    assert task.metrics == METRICS_BEFORE.get(name, ("accuracy",))
    assert task.eval_splits == (("dev_matched", "dev_mismatched") if name == "mnli" else ("dev",))
    assert task.is_regression == (name == "stsb") and task.is_pair == (fields[1] is not None)
    assert list(TASKS) == [*(row[0] for row in GLUE_BEFORE), "upos"]  # the benchmark's order, then the others


@pytest.fixture
def datasets_cache(tmp_path_factory, monkeypatch) -> Path:
    """`datasets`' own cache, in a folder of the test's (outside the run's, as a user's is)."""
    folder = tmp_path_factory.mktemp("hf-datasets")
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(folder))
    return folder


def write_sentiment(folder: Path, labels: tuple[str, str] = ("neg", "pos")) -> Path:
    """A CSV task (train.csv, dev.csv: review, sentiment) and its YAML spec; the spec's path."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = sentiment_sentences()
    dev = [row for index, row in enumerate(rows) if (index // 2) % 2 == 0]
    for split, part in (("train", [row for row in rows if row not in dev]), ("dev", dev)):
        with (folder / f"{split}.csv").open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["review", "sentiment", "stars"])
            writer.writerows((text, labels[label], 4 * label + 1) for text, label in part)
    spec = folder / "sentiment.yaml"
    spec.write_text(
        "name: sentiment\n"
        "data_files:\n  train: train.csv\n  validation: dev.csv\n"
        "text_fields: review\nlabel_field: sentiment\n"
    )
    return spec


def test_a_spec_file_toml_or_yaml_and_the_same_flags_make_one_task(tmp_path):
    spec = write_sentiment(tmp_path / "data")
    toml = tmp_path / "data" / "sentiment.toml"
    toml.write_text(
        'name = "sentiment"\ntext_fields = ["review"]\nlabel_field = "sentiment"\n'
        '[data_files]\ntrain = "train.csv"\nvalidation = "dev.csv"\n'
    )
    from_yaml, from_toml = TaskConfig(task=str(spec)).definition, TaskConfig(task=str(toml)).definition
    from_flags = TaskConfig(
        task="sentiment", dataset=str(tmp_path / "data"), text_fields=["review"], label_field="sentiment"
    ).definition
    assert from_yaml == from_toml
    assert from_yaml.data_files == (
        ("train", (str(tmp_path / "data" / "train.csv"),)),
        ("validation", (str(tmp_path / "data" / "dev.csv"),)),
    )
    assert (from_yaml.dataset, from_yaml.metrics, from_yaml.eval_splits) == (
        "csv",
        ("accuracy", "macro_f1"),
        ("validation",),
    )
    # the folder as --dataset: `datasets` finds its splits by the files' names (dev.csv is validation)
    assert (from_flags.dataset, from_flags.data_files, from_flags.text_fields) == (
        str(tmp_path / "data"),
        (),
        ("review", None),
    )
    assert TaskConfig(task="sentiment", dataset=str(tmp_path / "data"), text_fields=["review"]).name == "sentiment"


def bad_spec(root: Path, text: str, suffix: str = ".toml") -> list[str]:
    spec = root / f"mine{suffix}"
    spec.write_text(text)
    return ["--task", str(spec)]


SPEC_CASES = {
    "unknown key": ('name = "x"\ntext_field = ["a"]\ndataset = "csv"\n', "mine.toml: unknown key 'text_field'"),
    "label kind": ('text_fields = ["a"]\ndataset = "d"\nlabel_kind = "spans"\n', "label_kind 'spans' is not one of"),
    "metric of the other kind": (
        'text_fields = ["a"]\ndataset = "d"\nlabel_kind = "score"\nmetrics = ["accuracy"]\n',
        "metric 'accuracy' does not score score",
    ),
    "three texts": ('text_fields = ["a", "b", "c"]\ndataset = "d"\n', "text_fields names one or two text columns"),
    "no data": ('text_fields = ["a"]\n', "names no data: give dataset"),
    "toml syntax": ('text_fields = ["a"\n', "mine.toml: not a valid TOML task spec"),
    "glue's name": ('name = "rte"\ntext_fields = ["a"]\ndataset = "d"\n', "is GLUE's; give your task a name"),
    "mixed files": (
        'text_fields = ["a"]\n[data_files]\ntrain = "t.csv"\nvalidation = "v.jsonl"\n',
        "data_files of suffixes .csv, .jsonl",
    ),
}


@pytest.mark.parametrize("case", SPEC_CASES)
def test_a_bad_spec_is_one_line_before_any_work(case, tiny_model_dir, tiny_data, tmp_path, capsys, caplog):
    text, message = SPEC_CASES[case]
    argv = tiny_run_arguments(tiny_model_dir, tiny_data, tmp_path / "run", *bad_spec(tmp_path, text))
    assert_one_line_and_no_work(main(argv), message, tmp_path / "run", capsys, caplog)


def test_flags_without_text_fields_or_with_a_glue_name_are_one_line(
    tiny_model_dir, tiny_data, tmp_path, capsys, caplog
):
    folder = write_sentiment(tmp_path / "data").parent
    for extra, message in (
        (["--task", "mine", "--dataset", str(folder)], "--dataset needs --text-fields"),
        (["--task", "rte", "--dataset", str(folder), "--text-fields", "review"], "--task rte: with --dataset"),
    ):
        argv = tiny_run_arguments(tiny_model_dir, tiny_data, tmp_path / "run", *extra)
        assert_one_line_and_no_work(main(argv), message, tmp_path / "run", capsys, caplog)


def one_class(folder: Path) -> str:
    (folder / "train.csv").write_text("review,sentiment,stars\nthe cat is happy,pos,1\nthe dog is happy,pos,2\n")
    return "label 'sentiment' has one class in split 'train' (pos); a classifier needs two"


def empty_dev(folder: Path) -> str:
    (folder / "dev.csv").write_text("review,sentiment,stars\n")
    return "split 'validation' has no rows"


def unknown_field(folder: Path) -> str:
    (folder / "sentiment.yaml").write_text((folder / "sentiment.yaml").read_text().replace("review", "text"))
    return "'text' is not a column of split 'train' (its columns: review, sentiment, stars); fix text_fields"


def numbers_as_text(folder: Path) -> str:
    (folder / "sentiment.yaml").write_text((folder / "sentiment.yaml").read_text().replace("review", "stars"))
    return "text field 'stars' holds int64, not strings"


def words_as_score(folder: Path) -> str:
    (folder / "sentiment.yaml").write_text((folder / "sentiment.yaml").read_text() + "label_kind: score\n")
    return "label 'sentiment' holds text, not numbers, and label_kind is score"


def unseen_dev_label(folder: Path) -> str:
    rows = (folder / "dev.csv").read_text().splitlines()
    (folder / "dev.csv").write_text("\n".join([*rows[:2], rows[2].replace(",neg,", ",meh,"), *rows[3:]]) + "\n")
    return "split 'validation', dev.csv line 3: label 'meh' is not one of neg, pos"


def missing_split(folder: Path) -> str:
    (folder / "sentiment.yaml").write_text((folder / "sentiment.yaml").read_text() + "eval_splits: [test]\n")
    return "data_files has no 'test' split (it has train, validation); add it"


DATA_CASES = [one_class, empty_dev, unknown_field, numbers_as_text, words_as_score, unseen_dev_label, missing_split]


@pytest.mark.parametrize("damage", DATA_CASES, ids=[case.__name__ for case in DATA_CASES])
def test_bad_data_is_one_line_naming_the_spec_before_any_work(
    damage, datasets_cache, tiny_model_dir, tiny_data, tmp_path, capsys, caplog
):
    spec = write_sentiment(tmp_path / "data")
    message = damage(spec.parent)
    argv = tiny_run_arguments(tiny_model_dir, tiny_data, tmp_path / "run", "--task", str(spec))
    assert_one_line_and_no_work(
        main(argv), f"{spec}: sentiment (csv files): {message}", tmp_path / "run", capsys, caplog
    )


def run_key(argv: list[str]) -> str:
    return plan_run(configs_from(build_parser().parse_args(argv))[0]).key


def test_the_run_key_holds_the_spec_and_the_datas_content_not_where_it_lies(
    datasets_cache, tiny_model_dir, tiny_data, tmp_path
):
    spec = write_sentiment(tmp_path / "data")
    moved = tmp_path / "elsewhere" / "data"
    shutil.copytree(spec.parent, moved)
    key = run_key(tiny_run_arguments(tiny_model_dir, tiny_data, tmp_path / "run", "--task", str(spec)))
    assert (
        run_key(tiny_run_arguments(tiny_model_dir, tiny_data, tmp_path / "run", "--task", str(moved / spec.name)))
        == key
    )
    (moved / "dev.csv").write_text((moved / "dev.csv").read_text().replace("the cat", "a cat", 1))
    edited = run_key(tiny_run_arguments(tiny_model_dir, tiny_data, tmp_path / "run", "--task", str(moved / spec.name)))
    assert edited != key
    reordered = tmp_path / "data" / "reordered.yaml"
    reordered.write_text(spec.read_text() + "labels: [pos, neg]\n")
    assert run_key(tiny_run_arguments(tiny_model_dir, tiny_data, tmp_path / "run", "--task", str(reordered))) != key


def test_a_spec_reads_the_examples_and_its_classes_come_from_training(
    datasets_cache, tiny_model_dir, tiny_data, tmp_path
):
    spec = write_sentiment(tmp_path / "data")
    plan = plan_run(
        configs_from(
            build_parser().parse_args(tiny_run_arguments(tiny_model_dir, tiny_data, tmp_path, "--task", str(spec)))
        )[0]
    )
    task, rows = plan.data.task, sentiment_sentences()
    assert task.label_names == ("neg", "pos") and task.num_labels == 2 and not task.is_pair
    assert len(plan.data.train) + len(plan.data.dev["validation"]) == len(rows)
    first = plan.data.dev["validation"][0]
    assert (first.text_a, first.label, first.split) == (rows[0][0], rows[0][1], "validation")
    assert plan.run_dir.name.startswith("sentiment-")
    assert json.loads(json.dumps(plan.data.identity))["spec"]["data_files"] == {
        "train": ["train.csv"],
        "validation": ["dev.csv"],
    }


UD_EWT = SHARED_DATA / "ud-english-ewt"


@pytest.mark.slow  # reads the whole treebank (14 MB)
@pytest.mark.skipif(not (UD_EWT / "en_ewt-ud-train.conllu").is_file(), reason=f"UD English EWT not found at {UD_EWT}")
def test_the_shipped_upos_task_reads_the_pinned_treebank_as_tagged_sentences(tiny_model_dir, tiny_data, tmp_path):
    argv = tiny_run_arguments(tiny_model_dir, tiny_data, tmp_path, "--task", "upos", "--analyses", "evaluation")
    plan = plan_run(configs_from(build_parser().parse_args(argv))[0])
    task, train, dev = plan.data.task, plan.data.train, plan.data.dev["validation"]  # named as every task's
    assert task.is_tagging and len(task.label_names) == 17 and task.label_names[:3] == ("ADJ", "ADP", "ADV")
    assert (len(train), len(dev)) == (12544, 2001)  # UD English EWT r2.16's train and dev sentences
    words = sum(len(example.words) for example in dev)
    assert words == 25147 and all(len(example.tags) == len(example.words) for example in dev)  # its word lines
    assert dev[0].text_a == " ".join(dev[0].words) and plan.run_dir.name.startswith("upos-")
    assert {entry["file"] for entry in plan.data.identity["validation"]} == {"en_ewt-ud-dev.conllu"}
