"""Grouped cross-validation of the classifier's recipe, on a small labelled set written here;
the docs quote the stored report."""

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from classifier import CLASSES
from classifier.crossval import (
    CANDIDATES,
    GROUPINGS,
    FoldTrainer,
    folds,
    input_groups,
    load_report,
    out_of_fold,
    report_table,
    score,
)
from classifier.data import LabelledMap, read_labels, write_maps, write_rows
from classifier.features import NO_SECOND_SEGMENT
from classifier.train import TrainConfig
from tests.unit.classifier.test_classifier import clear_map

TASKS = ("cola", "mrpc", "rte", "stsb")  # any two of them have a `block` map: nested folds train on two
# Candidates the nested selection chooses among here: whole recipes as the shipped ones, small
# enough that the 40 fits of the protocol take seconds (the shipped ones take minutes).
SMALL_CANDIDATES = (
    {"tree_depth": 2, "tree_rounds": 20, "synthetic_per_class": 10, "synthetic_max_length": 64},
    {"tree_depth": 3, "tree_rounds": 20, "synthetic_per_class": 10, "synthetic_max_length": 64},
    {"tree_depth": 3, "tree_rounds": 40, "synthetic_per_class": 5, "synthetic_max_length": 48},
)


@pytest.fixture(scope="module")
def labelled(tmp_path_factory):
    """Two maps of each class per task (never `block` for single-sentence CoLA), two maps per input."""
    folder = tmp_path_factory.mktemp("labelled")
    rows, maps = [], {}
    for task in TASKS:
        for index, label in enumerate(label for label in CLASSES for _ in range(2)):
            if task == "cola" and label == "block":
                label = "vertical"
            n = 14 + 3 * index
            second = NO_SECOND_SEGMENT if task == "cola" else n // 2 + 1
            map_id = f"{task}-{index}"
            rows.append(
                LabelledMap(
                    map_id,
                    "tiny",
                    "pretrained",
                    "-",
                    task,
                    "dev",
                    index // 2,
                    f"g{index // 2}",
                    0,
                    index % 2,
                    n,
                    second,
                    label,
                )
            )
            maps[map_id] = clear_map(label, n)
    write_rows(folder / "labels.tsv", rows)
    write_maps(folder / "maps.npz", maps)
    return TrainConfig(
        synthetic_per_class=10,
        synthetic_max_length=64,
        real_repeats=2,
        epochs=2,
        labels_file=folder / "labels.tsv",
        maps_file=folder / "maps.npz",
    )


@pytest.mark.filterwarnings("ignore:The least populated class")  # 4 block maps in 5 folds, by design
def test_task_folds_hold_out_one_task_and_input_folds_never_split_an_input(labelled):
    rows = read_labels(labelled.labels_file)
    labels = np.array([CLASSES.index(row.label) for row in rows])
    by_task = folds(rows, labels, "task", seed=0)
    assert [name for name, _ in by_task] == list(TASKS)
    assert all({rows[i].task for i in held_out} == {name} for name, held_out in by_task)
    groups = input_groups(rows)
    by_input = folds(rows, labels, "input", seed=0)
    held = np.concatenate([held_out for _, held_out in by_input])
    assert sorted(held.tolist()) == list(range(len(rows)))  # every map held out exactly once
    for _, held_out in by_input:
        assert not set(groups[held_out]) & set(np.delete(groups, held_out))


def test_every_map_is_predicted_by_the_fold_that_held_it_out_and_never_block_without_two_segments(labelled):
    rows, labels, predicted, chosen = out_of_fold(labelled, "task")
    assert len(predicted) == len(rows) and (predicted >= 0).all() and chosen == {}
    single = np.array([row.second_segment == NO_SECOND_SEGMENT for row in rows])
    assert not (predicted[single] == CLASSES.index("block")).any()


def test_nested_selection_never_sees_the_held_out_task(labelled, monkeypatch):
    calls = []
    predict = FoldTrainer.predict

    def recorded(trainer, recipe, trained, held_out):
        calls.append((trained, held_out))
        return predict(trainer, recipe, trained, held_out)

    monkeypatch.setattr(FoldTrainer, "predict", recorded)
    rows, labels, predicted, chosen = out_of_fold(labelled, "task-nested", SMALL_CANDIDATES)
    tasks = np.array([row.task for row in rows])
    per_fold = len(SMALL_CANDIDATES) * (len(TASKS) - 1) + 1  # every candidate on each inner fold, then the chosen one
    assert len(calls) == per_fold * len(TASKS) and (predicted >= 0).all()
    for index, task in enumerate(TASKS):
        fold = calls[index * per_fold : (index + 1) * per_fold]
        assert all(task not in set(tasks[trained]) | set(tasks[held_out]) for trained, held_out in fold[:-1])
        assert set(tasks[fold[-1][1]]) == {task} and task not in set(tasks[fold[-1][0]])
        assert chosen[task]["changes"] in SMALL_CANDIDATES and 0 <= chosen[task]["inner_macro_f1"] <= 1


def test_the_shipped_candidates_are_whole_recipes_of_the_tree_kind(labelled):
    """Each shipped candidate sets every setting the selection varies (so none inherits a
    default), and is a valid recipe; `python -m classifier crossval --by task-nested` runs them."""
    assert len({tuple(sorted(candidate)) for candidate in CANDIDATES}) == 1
    assert set(SMALL_CANDIDATES[0]) == set(CANDIDATES[0])
    assert all(replace(labelled, **candidate).kind == "trees" for candidate in CANDIDATES)


@pytest.mark.slow
def test_scores_have_intervals_around_them_over_inputs():
    labels = np.array([0, 1, 2, 3, 4] * 4)
    predicted = labels.copy()
    predicted[:3] = 4
    result = score(labels, predicted, np.arange(len(labels)) // 2, seed=0)
    assert result.maps == 20 and result.inputs == 10 and result.accuracy == 0.85
    assert result.accuracy_interval[0] < result.accuracy <= result.accuracy_interval[1]
    assert result.macro_f1_interval[0] <= result.macro_f1 <= result.macro_f1_interval[1]
    perfect = score(labels, labels, np.arange(len(labels)), seed=0)
    assert perfect.macro_f1 == 1.0 and perfect.macro_f1_interval == (1.0, 1.0)
    report = {
        "grouping": "task",
        "overall": vars(result),
        "per_task": {"rte": vars(result)},
        "per_length_band": {"<=16": vars(perfect)},
    }
    table = report_table(report).splitlines()
    assert len(table) == 5 and table[2].startswith("| **all** | 20 | 10 | ") and "length <=16" in table[4]


def test_the_docs_quote_the_stored_cross_validation():
    text = (Path(__file__).resolve().parents[3] / "docs" / "classifier.md").read_text()
    for grouping in GROUPINGS:
        report = load_report(grouping)
        assert report is not None and report["grouping"] == grouping
        assert report_table(report) in text, (
            f"regenerate docs/classifier.md's {grouping} table: python -m classifier crossval"
        )
