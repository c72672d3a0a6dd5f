"""Grouped cross-validation of the pattern classifier's training recipe (`TrainConfig`).

Two groupings, so that every score is on maps truly unseen in training:

- ``task``: train on the labelled maps of every other task, test on one (does the classifier
  hold on a task it was not trained on?);
- ``input``: 5 folds over the dev inputs (stratified by class), the maps of one input never on
  both sides (maps of the same input look alike).

The recipe is fixed: nothing is chosen on a held-out fold. Each fold trains a fresh network
with the same seed and synthetic set. Scores are of the pooled out-of-fold predictions (`block`
never predicted for single-sentence inputs, as in ``harness run``): macro-F1 (over the classes
present) and accuracy with
95% bootstrap intervals that resample whole inputs (1,000 resamples), the same per task and
per input-length band, and the confusion matrix (rows labelled, columns predicted), which
the patterns analysis uses to correct its shares for the classifier's errors.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.metrics import confusion_matrix, f1_score
from sklearn.model_selection import StratifiedGroupKFold
from tqdm import tqdm

from classifier.data import CLASSES, LENGTH_BANDS, LabelledMap, band_name, length_band, read_labels, read_maps
from classifier.model import PatternClassifier, possible_classes
from classifier.train import TrainConfig, fit, real_inputs, recipe_description, synthetic_inputs
from tasks.files import atomic_path

GROUPINGS = ("task", "input")
INPUT_FOLDS = 5
RESAMPLES = 1000
CROSSVAL_FILE = Path(__file__).resolve().parent / "crossval.json"


@dataclass
class Score:
    """Macro-F1 and accuracy of a set of maps, each with a 95% bootstrap interval over inputs."""

    maps: int
    inputs: int
    macro_f1: float
    macro_f1_interval: tuple[float, float]
    accuracy: float
    accuracy_interval: tuple[float, float]


def input_groups(rows: list[LabelledMap]) -> np.ndarray:
    """(maps,) one integer per dev input (task and example), shared by that input's maps."""
    keys = [f"{row.task}:{row.split}:{row.example_index}" for row in rows]
    return np.unique(keys, return_inverse=True)[1]


def folds(rows: list[LabelledMap], labels: np.ndarray, grouping: str, seed: int) -> list[tuple[str, np.ndarray]]:
    """(name, held-out map indices) of each fold of ``grouping``."""
    if grouping == "task":
        tasks = np.array([row.task for row in rows])
        return [(task, np.flatnonzero(tasks == task)) for task in sorted(set(tasks))]
    splitter = StratifiedGroupKFold(n_splits=INPUT_FOLDS, shuffle=True, random_state=seed)
    return [(f"fold {index + 1}", test) for index, (_, test) in
            enumerate(splitter.split(np.zeros(len(rows)), labels, input_groups(rows)))]


def macro_f1(labels: np.ndarray, predicted: np.ndarray) -> float:
    """Mean F1 over the classes that occur among the labels or predictions (a task without
    `block` maps is not scored on `block`)."""
    return float(f1_score(labels, predicted, average="macro", zero_division=0))


def percentile_interval(values: list[float]) -> tuple[float, float]:
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


def score(labels: np.ndarray, predicted: np.ndarray, groups: np.ndarray, seed: int) -> Score:
    """The scores of these maps, intervals from resampling their inputs with replacement."""
    members = [np.flatnonzero(groups == group) for group in np.unique(groups)]
    rng = np.random.default_rng(seed)
    f1s, accuracies = [], []
    for _ in range(RESAMPLES):
        chosen = np.concatenate([members[i] for i in rng.integers(len(members), size=len(members))])
        f1s.append(macro_f1(labels[chosen], predicted[chosen]))
        accuracies.append(float((labels[chosen] == predicted[chosen]).mean()))
    return Score(len(labels), len(members), macro_f1(labels, predicted), percentile_interval(f1s),
                 float((labels == predicted).mean()), percentile_interval(accuracies))


def out_of_fold(config: TrainConfig, grouping: str) -> tuple[list[LabelledMap], np.ndarray, np.ndarray]:
    """The labelled maps, their labels and the prediction of each by the fold that held it out."""
    rows = read_labels(config.labels_file)
    maps = read_maps(config.maps_file)
    labels = np.array([CLASSES.index(row.label) for row in rows])
    inputs, two_segments = real_inputs(rows, maps, config)
    synthetic = synthetic_inputs(config)
    predicted = np.full(len(rows), -1)
    for _, held_out in tqdm(folds(rows, labels, grouping, config.seed), desc=f"folds by {grouping}", unit="fold"):
        trained = np.setdiff1d(np.arange(len(rows)), held_out)
        network, _ = fit(inputs.take(trained), labels[trained], synthetic, config)
        logits = PatternClassifier(network).logits(inputs.take(held_out))
        predicted[held_out] = possible_classes(logits, two_segments[held_out]).numpy()
    return rows, labels, predicted


def cross_validate(config: TrainConfig, grouping: str) -> dict[str, Any]:
    """The out-of-fold scores of ``grouping``: overall, per task, per length band, and the confusion matrix."""
    rows, labels, predicted = out_of_fold(config, grouping)
    groups = input_groups(rows)
    tasks = np.array([row.task for row in rows])
    bands = np.array([length_band(row.length) for row in rows])

    def part(where: np.ndarray) -> dict[str, Any]:
        return asdict(score(labels[where], predicted[where], groups[where], config.seed))

    return {"grouping": grouping, "classes": list(CLASSES),
            "overall": part(np.ones(len(rows), dtype=bool)),
            "per_task": {task: part(tasks == task) for task in sorted(set(tasks))},
            "per_length_band": {band_name(band): part(bands == band) for band in range(len(LENGTH_BANDS) + 1)
                                if (bands == band).any()},
            "confusion": confusion_matrix(labels, predicted, labels=list(range(len(CLASSES)))).tolist(),
            "config": recipe_description(config)}


def report_table(report: dict[str, Any]) -> str:
    """The report as a Markdown table: macro-F1 and accuracy with intervals, overall, per task, per band."""
    lines = [f"| held out (grouped by {report['grouping']}) | maps | inputs | macro-F1 [95% CI] | accuracy [95% CI] |",
             "|---|---|---|---|---|"]
    parts = [("**all**", report["overall"]), *report["per_task"].items(),
             *((f"length {band}", value) for band, value in report["per_length_band"].items())]
    for name, value in parts:
        f1_low, f1_high = value["macro_f1_interval"]
        acc_low, acc_high = value["accuracy_interval"]
        lines.append(f"| {name} | {value['maps']} | {value['inputs']} | {value['macro_f1']:.3f} "
                     f"[{f1_low:.3f}, {f1_high:.3f}] | {value['accuracy']:.3f} [{acc_low:.3f}, {acc_high:.3f}] |")
    return "\n".join(lines)


def load_report(grouping: str = "task", path: Path = CROSSVAL_FILE) -> dict[str, Any] | None:
    """The stored cross-validation report of ``grouping``, or None where there is none."""
    if not path.exists():
        return None
    return json.loads(path.read_text()).get(grouping)


def save_reports(reports: list[dict[str, Any]], path: Path = CROSSVAL_FILE) -> Path:
    with atomic_path(path) as temporary:
        temporary.write_text(json.dumps({report["grouping"]: report for report in reports}, indent=2) + "\n")
    return path
