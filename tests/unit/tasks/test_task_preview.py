"""``harness tasks TASK``: a task's data read, checked and described before any run: its source,
columns, the order of its labels, examples per class and split, and what scores it."""

from __future__ import annotations

import datasets
import pytest

from harness.cli import main
from tests.unit.run.test_own_task_runs import write_similarity
from tests.unit.tasks.test_task_specs import write_sentiment


@pytest.fixture(autouse=True)
def datasets_cache(tmp_path_factory, monkeypatch) -> None:
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path_factory.mktemp("hf-datasets")))


def test_a_class_spec_is_described_as_a_run_reads_it(tmp_path, capsys):
    spec = write_sentiment(tmp_path / "data", labels=("pos", "neg"))  # label 1 is "neg": sorted, neg is output 0
    assert main(["tasks", str(spec)]) == 0
    out = capsys.readouterr().out
    assert f"task sentiment ({spec})" in out
    assert "data: csv files: train train.csv; validation dev.csv" in out
    assert "columns: review, sentiment, stars; text review, label sentiment (classes)" in out
    assert "labels: 0 neg, 1 pos (the model's outputs in this order: the training split's values, sorted" in out
    assert "train: neg 32, pos 32 (64 examples)" in out and "validation: neg 32, pos 32 (64 examples)" in out
    assert "scored by: validation/accuracy, validation/macro_f1 (the first is the main one), beside the majority" in out
    assert "--dry-run" in out


def test_a_score_pair_spec_says_its_scores_and_its_baseline_is_the_mean(tmp_path, capsys):
    spec = write_similarity(tmp_path / "data")
    assert main(["tasks", str(spec)]) == 0
    out = capsys.readouterr().out
    assert "text premise and claim, label score (score)" in out and "labels: a score: the model has one output" in out
    assert "train: 32 examples; scores mean " in out and "from 0 to 5" in out
    assert "dev/pearson, dev/spearman (the first is the main one), beside the mean score" in out


def test_a_bad_spec_is_one_line_before_anything_is_read(tmp_path, capsys):
    spec = tmp_path / "mine.yaml"
    spec.write_text("text_fields: review\nlabel_feild: x\ndataset: csv\n")
    assert main(["tasks", str(spec)]) == 2
    err = capsys.readouterr().err
    assert "unknown key 'label_feild' in the task spec (did you mean 'label_field'?)" in err
    assert len(err.strip().splitlines()) == 1
