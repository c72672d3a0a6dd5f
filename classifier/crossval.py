"""Grouped cross-validation of the pattern classifier's training recipe (`TrainConfig`).

Three groupings, so that every score is on maps truly unseen in training:

- ``task``: train on the labelled maps of every other task, test on one (does the classifier
  hold on a task it was not trained on?);
- ``input``: 5 folds over the dev inputs (stratified by class), the maps of one input never on
  both sides (maps of the same input look alike);
- ``task-nested``: as ``task``, but the recipe itself is chosen inside each fold, among
  `CANDIDATES`, by leave-one-task-out on that fold's training tasks alone. The shipped recipe
  was chosen after seeing the ``task`` scores, which flatters them; this one never saw the
  held-out task, so it scores the whole procedure (choice included) honestly.

In ``task`` and ``input`` the recipe is fixed. Each fold trains a fresh network with the same
seed and synthetic set. Scores are of the pooled out-of-fold predictions (`block`
never predicted for single-sentence inputs, as in ``harness run``): macro-F1 (over the classes
present) and accuracy with
95% bootstrap intervals that resample whole inputs (1,000 resamples), the same per task and
per input-length band, and the confusion matrix (rows labelled, columns predicted), which
the patterns analysis uses to correct its shares for the classifier's errors.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import NotRequired, TypedDict, cast

import numpy as np
from sklearn.metrics import confusion_matrix, f1_score
from sklearn.model_selection import StratifiedGroupKFold

from classifier.data import CLASSES, LENGTH_BANDS, LabelledMap, band_name, length_band, read_labels, read_maps
from classifier.model import PatternClassifier, possible_classes
from classifier.resize import MapInputs
from classifier.train import TrainConfig, fit, real_inputs, recipe_description, synthetic_inputs
from tasks.files import atomic_path
from tasks.progress import progress_bar

GROUPINGS = ("task", "input", "task-nested")


# The tree recipes compared by hand to choose the shipped one (docs/classifier.md), as
# changes to `TrainConfig`: nested selection chooses among them without the held-out task.
class Recipe(TypedDict):
    """The settings of `TrainConfig` a nested selection chooses among."""

    tree_depth: int
    tree_rounds: int
    synthetic_per_class: int
    synthetic_max_length: int


CANDIDATES: tuple[Recipe, ...] = (  # each whole, whatever the defaults of `TrainConfig`
    {"tree_depth": 2, "tree_rounds": 200, "synthetic_per_class": 100, "synthetic_max_length": 320},
    {"tree_depth": 3, "tree_rounds": 200, "synthetic_per_class": 100, "synthetic_max_length": 320},
    {"tree_depth": 4, "tree_rounds": 200, "synthetic_per_class": 100, "synthetic_max_length": 320},
    {"tree_depth": 3, "tree_rounds": 100, "synthetic_per_class": 100, "synthetic_max_length": 320},
    {"tree_depth": 3, "tree_rounds": 400, "synthetic_per_class": 100, "synthetic_max_length": 320},
    {"tree_depth": 3, "tree_rounds": 200, "synthetic_per_class": 25, "synthetic_max_length": 128},
    {"tree_depth": 3, "tree_rounds": 200, "synthetic_per_class": 100, "synthetic_max_length": 128},
    {"tree_depth": 3, "tree_rounds": 200, "synthetic_per_class": 100, "synthetic_max_length": 512},
)
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


class Scores(TypedDict):
    """`Score` as a report keeps it (its intervals lists once read back from the file)."""

    maps: int
    inputs: int
    macro_f1: float
    macro_f1_interval: Sequence[float]
    accuracy: float
    accuracy_interval: Sequence[float]


class FoldChoice(TypedDict):
    """The recipe a fold of a nested cross-validation chose, and its leave-one-task-out macro-F1."""

    changes: Recipe
    inner_macro_f1: float


class Report(TypedDict):
    """A grouping's cross-validation report (`cross_validate`), as ``crossval.json`` keeps it by grouping."""

    grouping: str
    classes: list[str]
    overall: Scores
    per_task: dict[str, Scores]
    per_length_band: dict[str, Scores]
    confusion: list[list[int]]
    config: dict[str, str]
    chosen_per_fold: NotRequired[dict[str, FoldChoice]]


def input_groups(rows: list[LabelledMap]) -> np.ndarray:
    """(maps,) one integer per dev input (task and example), shared by that input's maps."""
    keys = [f"{row.task}:{row.split}:{row.example_index}" for row in rows]
    return np.unique(keys, return_inverse=True)[1]


def folds(rows: list[LabelledMap], labels: np.ndarray, grouping: str, seed: int) -> list[tuple[str, np.ndarray]]:
    """(name, held-out map indices) of each fold of ``grouping``."""
    if grouping in ("task", "task-nested"):
        tasks = np.array([row.task for row in rows])
        return [(task, np.flatnonzero(tasks == task)) for task in sorted(set(tasks))]
    splitter = StratifiedGroupKFold(n_splits=INPUT_FOLDS, shuffle=True, random_state=seed)
    return [
        (f"fold {index + 1}", test)
        for index, (_, test) in enumerate(splitter.split(np.zeros(len(rows)), labels, input_groups(rows)))
    ]


def macro_f1(labels: np.ndarray, predicted: np.ndarray) -> float:
    """Mean F1 over the classes that occur among the labels or predictions (a task without
    `block` maps is not scored on `block`)."""
    return float(f1_score(labels, predicted, average="macro", zero_division=0))


def percentile_interval(values: list[float]) -> tuple[float, float]:
    """The 2.5th and 97.5th percentiles of ``values``: a 95% interval."""
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
    return Score(
        len(labels),
        len(members),
        macro_f1(labels, predicted),
        percentile_interval(f1s),
        float((labels == predicted).mean()),
        percentile_interval(accuracies),
    )


class FoldTrainer:
    """Trains a recipe on some labelled maps and predicts others (inputs and synthetic sets
    built once per recipe)."""

    def __init__(self, config: TrainConfig) -> None:
        self.rows = read_labels(config.labels_file)
        self.labels = np.array([CLASSES.index(row.label) for row in self.rows])
        self.inputs, self.two_segments = real_inputs(self.rows, read_maps(config.maps_file), config)
        self.synthetic: dict[tuple[int | None, int | None], tuple[MapInputs, list[int]]] = {}

    def predict(self, recipe: TrainConfig, trained: np.ndarray, held_out: np.ndarray) -> np.ndarray:
        """Classes of the ``held_out`` maps by ``recipe`` trained on the ``trained`` ones."""
        synthetic = (recipe.synthetic_per_class, recipe.synthetic_max_length)
        if synthetic not in self.synthetic:
            self.synthetic[synthetic] = synthetic_inputs(recipe)
        network, _ = fit(self.inputs.take(trained), self.labels[trained], self.synthetic[synthetic], recipe)
        logits = PatternClassifier(network).logits(self.inputs.take(held_out))
        return possible_classes(logits, self.two_segments[held_out]).numpy()

    def leave_one_task_out(self, recipe: TrainConfig, among: np.ndarray) -> float:
        """Macro-F1 of ``recipe`` over the maps ``among``, each task of them held out in turn."""
        tasks = np.array([self.rows[index].task for index in among])
        predicted = np.full(len(among), -1)
        for task in sorted(set(tasks)):
            predicted[tasks == task] = self.predict(recipe, among[tasks != task], among[tasks == task])
        return macro_f1(self.labels[among], predicted)


def out_of_fold(
    config: TrainConfig, grouping: str, candidates: tuple[Recipe, ...] = CANDIDATES
) -> tuple[list[LabelledMap], np.ndarray, np.ndarray, dict[str, FoldChoice]]:
    """The labelled maps, their labels, the prediction of each by the fold that held it out,
    and (``task-nested``) the recipe each fold chose among ``candidates`` with its inner score."""
    trainer = FoldTrainer(config)
    predicted, chosen = np.full(len(trainer.rows), -1), dict[str, FoldChoice]()
    for name, held_out in progress_bar(
        iterable=folds(trainer.rows, trainer.labels, grouping, config.seed), desc=f"folds by {grouping}", unit="fold"
    ):
        trained = np.setdiff1d(np.arange(len(trainer.rows)), held_out)
        fold_config = config
        if grouping == "task-nested":
            changes, inner = chosen_recipe(trainer, config, trained, candidates)
            chosen[name] = {"changes": changes, "inner_macro_f1": inner}
            fold_config = replace(config, **changes)
        predicted[held_out] = trainer.predict(fold_config, trained, held_out)
    return trainer.rows, trainer.labels, predicted, chosen


def chosen_recipe(
    trainer: FoldTrainer, config: TrainConfig, trained: np.ndarray, candidates: tuple[Recipe, ...] = CANDIDATES
) -> tuple[Recipe, float]:
    """The changes to ``config`` (one of ``candidates``) with the best leave-one-task-out
    macro-F1 on the ``trained`` maps alone (the first of equals), and that score."""
    if config.kind != "trees":
        raise ValueError("nested selection chooses among tree recipes; cross-validate the CNN --by task input")
    scores = [trainer.leave_one_task_out(replace(config, **candidate), trained) for candidate in candidates]
    best = int(np.argmax(scores))  # the first of equals
    return candidates[best], scores[best]


def cross_validate(config: TrainConfig, grouping: str) -> Report:
    """The out-of-fold scores of ``grouping``: overall, per task, per length band, and the confusion matrix."""
    rows, labels, predicted, chosen = out_of_fold(config, grouping)
    groups = input_groups(rows)
    tasks = np.array([row.task for row in rows])
    bands = np.array([length_band(row.length) for row in rows])

    def part(where: np.ndarray) -> Scores:
        scored = score(labels[where], predicted[where], groups[where], config.seed)
        return cast(Scores, asdict(scored))  # `Score`'s fields, as `Scores` names them

    report: Report = {
        "grouping": grouping,
        "classes": list(CLASSES),
        "overall": part(np.ones(len(rows), dtype=bool)),
        "per_task": {task: part(tasks == task) for task in sorted(set(tasks))},
        "per_length_band": {
            band_name(band): part(bands == band) for band in range(len(LENGTH_BANDS) + 1) if (bands == band).any()
        },
        "confusion": confusion_matrix(labels, predicted, labels=list(range(len(CLASSES)))).tolist(),
        "config": recipe_description(config),
    }
    if chosen:
        report["chosen_per_fold"] = chosen
    return report


def report_table(report: Report) -> str:
    """The report as a Markdown table: macro-F1 and accuracy with intervals, overall, per task, per band."""
    lines = [
        f"| held out (grouped by {report['grouping']}) | maps | inputs | macro-F1 [95% CI] | accuracy [95% CI] |",
        "|---|---|---|---|---|",
    ]
    parts = [
        ("**all**", report["overall"]),
        *report["per_task"].items(),
        *((f"length {band}", value) for band, value in report["per_length_band"].items()),
    ]
    for name, value in parts:
        f1_low, f1_high = value["macro_f1_interval"]
        acc_low, acc_high = value["accuracy_interval"]
        lines.append(
            f"| {name} | {value['maps']} | {value['inputs']} | {value['macro_f1']:.3f} "
            f"[{f1_low:.3f}, {f1_high:.3f}] | {value['accuracy']:.3f} [{acc_low:.3f}, {acc_high:.3f}] |"
        )
    return "\n".join(lines)


def load_report(grouping: str = "task", path: Path = CROSSVAL_FILE) -> Report | None:
    """The stored cross-validation report of ``grouping``, or None where there is none."""
    if not path.exists():
        return None
    return json.loads(path.read_text()).get(grouping)


def save_reports(reports: list[Report], path: Path = CROSSVAL_FILE) -> Path:
    """The reports written into ``path``, beside the stored reports of other groupings."""
    stored = json.loads(path.read_text()) if path.exists() else {}
    with atomic_path(path) as temporary:
        temporary.write_text(
            json.dumps({**stored, **{report["grouping"]: report for report in reports}}, indent=2) + "\n"
        )
    return path
