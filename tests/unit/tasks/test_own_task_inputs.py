"""A task of one's own as its user names it: the spec file and the --dataset flags that say the same
are one task (one run key, one fine-tuning), and each mistake in its data is one line in the user's
words, before the model is looked at: the file and line of a bad row, "no such folder" for a
misspelt one, the flags a flag-form task was given, the spec key meant."""

from __future__ import annotations

import csv
import os
import re
import subprocess
import sys
from pathlib import Path

import datasets
import pytest

from harness.cli import build_parser, configs_from, main
from harness.config import RunConfig, TaskConfig
from harness.model.finetune import checkpoint_root
from harness.run.pipeline import recorded_settings
from harness.run.plan import plan_run
from tasks.spec import USER_KEYS
from tests.fixtures import assert_one_line_and_no_work, tiny_run_arguments
from tests.unit.tasks.test_task_specs import write_sentiment

README = Path(__file__).resolve().parents[3] / "README.md"


@pytest.fixture(autouse=True)
def datasets_cache(tmp_path_factory, monkeypatch) -> None:
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path_factory.mktemp("hf-datasets")))


def flags_of(folder: Path) -> list[str]:
    """The --dataset flags that define the task `write_sentiment`'s spec describes."""
    return ["--task", "sentiment", "--dataset", str(folder), "--text-fields", "review", "--label-field", "sentiment"]


def planned(argv: list[str]):
    return plan_run(configs_from(build_parser().parse_args(argv))[0])


@pytest.mark.slow  # plans two runs, each reading and hashing the data and the model
def test_a_spec_and_the_flags_saying_the_same_are_one_run_key_and_one_fine_tuning(tiny_model_dir, tiny_data, tmp_path):
    spec = write_sentiment(tmp_path / "data")
    by_spec = planned(tiny_run_arguments(tiny_model_dir, tiny_data, tmp_path, "--task", str(spec)))
    by_flags = planned(tiny_run_arguments(tiny_model_dir, tiny_data, tmp_path, *flags_of(spec.parent)))
    assert by_flags.key == by_spec.key and by_flags.finetune_key == by_spec.finetune_key
    assert checkpoint_root(by_flags.config, by_flags.finetune_key) == checkpoint_root(
        by_spec.config, by_spec.finetune_key
    )
    assert by_flags.data.task.data_files == by_spec.data.task.data_files  # the folder's files, by split
    assert by_flags.run_dir == by_spec.run_dir


def test_a_spec_runs_config_json_records_what_the_spec_says_not_the_flags_defaults(tmp_path):
    spec = write_sentiment(tmp_path / "data")
    recorded = recorded_settings(RunConfig(TaskConfig(task=str(spec))))
    assert recorded["label_field"] == "sentiment" and recorded["text_fields"] == ["review"]
    assert recorded["eval_split"] == ["validation"] and recorded["task"] == str(spec)


def test_a_data_error_is_said_before_the_model_is_looked_at(tiny_data, tmp_path, capsys, caplog):
    """The model folder here has no config: had the model been looked at first, its error would be the one said."""
    spec = write_sentiment(tmp_path / "data")
    (spec.parent / "dev.csv").write_text("review,sentiment,stars\n")
    (tmp_path / "no-model").mkdir()
    argv = tiny_run_arguments(tmp_path / "no-model", tiny_data, tmp_path / "run", "--task", str(spec))
    assert_one_line_and_no_work(main(argv), "split 'validation' has no rows", tmp_path / "run", capsys, caplog)
    assert "fine-tuning recipe" not in capsys.readouterr().out


def test_a_bad_row_is_named_by_its_file_and_the_line_it_starts_on(tiny_model_dir, tiny_data, tmp_path, capsys, caplog):
    spec = write_sentiment(tmp_path / "data")
    with (spec.parent / "dev.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["review", "sentiment", "stars"])
        writer.writerow(["the cat is happy ,\nand the dog ran", "pos", 5])  # one record on lines 2 and 3
        writer.writerow(["the dog is happy", "pos", 5])  # line 4
        writer.writerow(["the dog is not happy", "meh", 1])  # line 5
    argv = tiny_run_arguments(tiny_model_dir, tiny_data, tmp_path / "run", "--task", str(spec))
    message = "split 'validation', dev.csv line 5: label 'meh' is not one of neg, pos"
    assert_one_line_and_no_work(main(argv), message, tmp_path / "run", capsys, caplog)


def test_a_misspelt_folder_is_no_such_folder_not_a_dataset_the_hub_lacks(
    tiny_model_dir, tiny_data, tmp_path, capsys, caplog, monkeypatch
):
    folder = write_sentiment(tmp_path / "reviews").parent
    monkeypatch.chdir(tmp_path)
    for typed, message in (
        ("reviewz", "--dataset reviewz: no such folder (did you mean 'reviews'?)"),
        ("./reviewz", "--dataset ./reviewz: no such folder (did you mean 'reviewz'"),
    ):
        flags = ["--task", "mine", "--dataset", typed, "--text-fields", "review"]
        argv = tiny_run_arguments(tiny_model_dir, tiny_data, tmp_path / "run", *flags)
        assert_one_line_and_no_work(main(argv), message.split(" (did")[0], tmp_path / "run", capsys, caplog)
    assert folder.is_dir()


def test_a_task_of_flags_is_told_its_mistakes_in_flags(tiny_model_dir, tiny_data, tmp_path, capsys, caplog):
    folder = write_sentiment(tmp_path / "data").parent
    cases = (
        (["--text-fields", "text"], "fix --text-fields or --label-field"),
        (["--text-fields", "stars"], "name a text column in --text-fields"),
        (["--text-fields", "review", "--eval-split", "test"], "name one with --train-split or --eval-split"),
    )
    for extra, message in cases:
        argv = tiny_run_arguments(
            tiny_model_dir, tiny_data, tmp_path / "run", "--task", "mine", "--dataset", str(folder)
        )
        assert_one_line_and_no_work(
            main([*argv, "--label-field", "sentiment", *extra]), message, tmp_path / "run", capsys, caplog
        )


def test_an_unknown_spec_key_gets_the_key_meant_and_the_keys_the_readme_documents(
    tiny_model_dir, tiny_data, tmp_path, capsys, caplog
):
    spec = tmp_path / "mine.yaml"
    spec.write_text("text_field: review\ndataset: csv\n")
    argv = tiny_run_arguments(tiny_model_dir, tiny_data, tmp_path / "run", "--task", str(spec))
    message = "unknown key 'text_field' in the task spec (did you mean 'text_fields'?); the keys: name, dataset"
    assert_one_line_and_no_work(main(argv), message, tmp_path / "run", capsys, caplog)
    section = README.read_text().split("### Your own task", 1)[1].split("\n###", 1)[0]
    table = section.split("| key | what it holds (default) |", 1)[1].split("\n\n", 1)[0]
    documented = [key for row in table.splitlines()[2:] for key in re.findall(r"`(\w+)`", row.split("|")[1])]
    assert documented == list(USER_KEYS)


@pytest.mark.slow  # a harness process of its own, offline
def test_a_name_that_is_no_folder_here_and_no_dataset_on_the_hub_says_both_in_one_line(tiny_model_dir, tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_DATASETS_CACHE": str(tmp_path / "hf")}
    flags = ["--task", "mine", "--dataset", "reviewz", "--text-fields", "review", "--model", str(tiny_model_dir)]
    done = subprocess.run(
        [sys.executable, "-m", "harness", "run", *flags, "--output-dir", str(tmp_path / "out")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "could not read split 'train'" in done.stderr and "no folder 'reviewz' here either" in done.stderr
