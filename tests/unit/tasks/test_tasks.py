import numpy as np
import pytest

from tasks import TASKS, get_task
from tasks.errors import InputError
from tasks.hub import hub_split_name
from tasks.loading import load_examples
from tasks.metrics import compute_metrics


def test_registry_has_the_nine_glue_tasks_and_upos_with_their_metrics():
    assert set(TASKS) == {"cola", "sst2", "mrpc", "stsb", "qqp", "mnli", "qnli", "rte", "wnli", "upos"}
    assert get_task("upos").is_tagging and get_task("upos").metrics == ("accuracy",)
    assert get_task("CoLA").metrics == ("matthews",)
    assert get_task("mrpc").metrics == get_task("qqp").metrics == ("accuracy", "f1")
    assert get_task("sts-b").is_regression and get_task("stsb").num_labels == 1
    assert get_task("mnli").eval_splits == ("dev_matched", "dev_mismatched")
    assert not get_task("sst2").is_pair and get_task("qnli").is_pair


def test_unknown_task_lists_the_valid_ones():
    with pytest.raises(InputError, match="unknown task 'foo'; valid tasks: cola, sst2"):
        get_task("foo")


def test_hub_split_names():
    assert hub_split_name("dev") == "validation"
    assert hub_split_name("dev_mismatched") == "validation_mismatched"
    assert hub_split_name("train") == "train"


def write_rte(folder, rows):
    (folder / "RTE").mkdir()
    (folder / "RTE" / "dev.tsv").write_text("index\tsentence1\tsentence2\tlabel\n" + "".join(rows))


def test_malformed_row_names_file_and_line(tmp_path):
    write_rte(tmp_path, ["0\tA man.\tA person.\tentailment\n", "1\tonly two\n"])
    with pytest.raises(InputError, match=r"RTE/dev.tsv:3: malformed row with 2 columns"):
        load_examples(get_task("rte"), "dev", tmp_path)


def test_unknown_label_names_file_and_line(tmp_path):
    write_rte(tmp_path, ["0\tA man.\tA person.\tmaybe\n"])
    with pytest.raises(InputError, match=r"dev.tsv:2: label 'maybe' is not one of"):
        load_examples(get_task("rte"), "dev", tmp_path)


def test_missing_task_folder_says_how_to_fix(tmp_path):
    with pytest.raises(InputError, match=r"MNLI/dev_matched.tsv not found.*GLUE script"):
        load_examples(get_task("mnli"), "dev_matched", tmp_path)


def test_wrong_header_is_reported(tmp_path):
    (tmp_path / "QQP").mkdir()
    (tmp_path / "QQP" / "dev.tsv").write_text("a\tb\n1\t2\n")
    with pytest.raises(InputError, match=r"QQP/dev.tsv:1: header has no column 'question1'"):
        load_examples(get_task("qqp"), "dev", tmp_path)


def test_metrics():
    logits = np.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]])
    labels = np.array([1, 0, 0, 0])
    scores = compute_metrics(get_task("mrpc"), logits, labels)
    assert scores["accuracy"] == 0.75 and abs(scores["f1"] - 2 / 3) < 1e-9
    assert compute_metrics(get_task("cola"), logits, np.array([1, 0, 1, 0]))["matthews"] == 1.0
    stsb = compute_metrics(get_task("stsb"), np.array([[1.0], [2.0], [3.0]]), np.array([1.0, 2.5, 2.9]))
    assert stsb["spearman"] == 1.0 and 0.9 < stsb["pearson"] < 1.0
    constant = compute_metrics(get_task("stsb"), np.ones((3, 1)), np.array([1.0, 2.0, 3.0]))
    assert constant == {"pearson": 0.0, "spearman": 0.0}
