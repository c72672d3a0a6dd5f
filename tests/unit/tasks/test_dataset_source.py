"""An own task's rows read through `datasets`: a row without a label is never a class of its own;
it is one line naming it, or, where the spec says ``missing_labels: drop``, left out and counted."""

from __future__ import annotations

import logging

import datasets
import pytest

from harness.cli import build_parser, configs_from
from harness.run.plan import plan_run
from tests.fixtures import tiny_run_arguments


@pytest.fixture(autouse=True)
def datasets_cache(tmp_path_factory, monkeypatch) -> None:
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path_factory.mktemp("hf-datasets")))


def test_rows_without_a_label_are_left_out_and_counted_where_the_spec_says_so(
    tiny_model_dir, tiny_data, tmp_path, caplog
):
    folder = tmp_path / "own"
    folder.mkdir()
    (folder / "train.csv").write_text(
        "text,label\nthe cat sat,pos\nthe dog ran,\nhe is happy,neg\nshe sat,nan\nit ran,neg\n"
    )
    (folder / "dev.csv").write_text('text,label\nthe cat sat,pos\n"the dog\nran",\nhe ran,neg\n')
    spec = folder / "own.yaml"
    spec.write_text("data_files: {train: train.csv, validation: dev.csv}\ntext_fields: text\nmissing_labels: drop\n")
    argv = tiny_run_arguments(tiny_model_dir, tiny_data, tmp_path / "run", "--task", str(spec))
    with caplog.at_level(logging.WARNING, logger="tasks.dataset_source"):
        plan = plan_run(configs_from(build_parser().parse_args(argv))[0])
    assert plan.data.task.label_names == ("neg", "pos")  # no class "None" or "nan"
    assert [example.text_a for example in plan.data.train] == ["the cat sat", "he is happy", "it ran"]
    assert [example.label for example in plan.data.dev["validation"]] == [1, 0]
    assert [record.getMessage() for record in caplog.records if record.name == "tasks.dataset_source"] == [
        "own: left out 2 of the 5 rows of split 'train' that have no label (missing_labels: drop); the first: "
        "split 'train', train.csv line 3",
        "own: left out 1 of the 3 rows of split 'validation' that have no label (missing_labels: drop); the first: "
        "split 'validation', dev.csv line 3",
    ]
    assert plan.data.identity["spec"]["missing_labels"] == "drop"  # the rows left out are in the run's key
