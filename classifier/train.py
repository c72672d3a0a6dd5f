"""Training the pattern classifier on the real labelled maps and measuring it.

The real labelled maps are split once, stratified by class, into a training part and a
held-out part; the held-out part is real maps only and is never trained on. The shipped
kind, boosted trees on the maps' measurements (`classifier.trees`), learns from the real
training maps and a few synthetic ones per class (clear extremes beyond the real maps'
range); the CNN (kind ``cnn``, the paper's baseline) sees the real maps repeated (they are
few) beside a large balanced synthetic set. Per-class
precision/recall/F1, macro-F1 and the confusion matrix on the held-out maps are printed,
stored with the weights and logged to MLflow.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import matplotlib.pyplot as plt
import mlflow
import numpy as np
import torch
from sklearn.metrics import confusion_matrix, f1_score, precision_recall_fscore_support
from sklearn.model_selection import train_test_split

from classifier.data import CLASSES, LABELS_FILE, MAPS_FILE, LabelledMap, read_labels, read_maps
from classifier.features import NO_SECOND_SEGMENT
from classifier.model import WEIGHTS_FILE, PatternClassifier, PatternCNN, possible_classes
from classifier.resize import MapInputs, normalise_list
from classifier.synthetic import synthetic_set
from classifier.trees import MeasuredTrees, fit_trees

# The harness's default MLflow store too (MLflow 3 refuses a plain ./mlruns file store).
DEFAULT_TRACKING_URI = "sqlite:///mlruns/mlflow.db"


KINDS = ("trees", "cnn")
SYNTHETIC_PER_CLASS = {"trees": 100, "cnn": 800}
# the trees see synthetic maps of up to 320 tokens: clear maps longer than any labelled one (128) fall
# beyond every threshold learnt from the real maps; the CNN sees every map pooled to 32 x 32 anyway
SYNTHETIC_MAX_LENGTH = {"trees": 320, "cnn": 128}


@dataclass
class TrainConfig:
    """Split, kind, data mix and optimisation of one training run."""

    kind: str = "trees"
    # the best leave-one-task-out macro-F1 on all labels among the `crossval.CANDIDATES` that recognise the
    # hand-made clear maps and keep the analyses within 1.3x their forward passes (depth 3 with 400 rounds
    # scores 0.004 higher and costs 1.39x; depth 3 scores the same to 0.001: docs/classifier.md);
    # `crossval --by task-nested` scores the choice by score alone
    tree_depth: int = 2
    tree_rounds: int = 200
    test_fraction: float = 0.25
    # None: a few for the trees (clear extremes beyond the real maps' range), many for the CNN
    synthetic_per_class: int | None = None
    synthetic_max_length: int | None = None  # None: `SYNTHETIC_MAX_LENGTH` of the kind
    # the CNN's optimisation
    real_repeats: int = 6  # each real training map appears this often per epoch
    epochs: int = 30
    batch_size: int = 64
    learning_rate: float = 2e-3
    weight_decay: float = 1e-4
    seed: int = 0
    labels_file: Path = LABELS_FILE
    maps_file: Path = MAPS_FILE
    out: Path = WEIGHTS_FILE

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"classifier kind {self.kind!r} is not one of {', '.join(KINDS)}")
        self.synthetic_per_class, self.synthetic_max_length = self.synthetic_size

    @property
    def synthetic_size(self) -> tuple[int, int]:
        """Maps per class of the synthetic set and their longest length, the kind's defaults where unset."""
        per_class, max_length = self.synthetic_per_class, self.synthetic_max_length
        return (
            SYNTHETIC_PER_CLASS[self.kind] if per_class is None else per_class,
            SYNTHETIC_MAX_LENGTH[self.kind] if max_length is None else max_length,
        )


@dataclass
class Evaluation:
    """Scores on the held-out real maps; per-class lists in the order of `CLASSES`."""

    macro_f1: float
    accuracy: float
    precision: list[float]
    recall: list[float]
    f1: list[float]
    support: list[int]
    confusion: list[list[int]]  # rows: true class, columns: predicted class
    counts: dict[str, dict[str, int]] = field(default_factory=dict)  # split -> class -> maps

    def table(self) -> str:
        """A plain-text report: precision, recall, F1 and support per class, macro-F1, accuracy and the confusion
        matrix."""
        lines = [f"{'class':<18} {'precision':>9} {'recall':>7} {'F1':>6} {'n':>4}"]
        for index, name in enumerate(CLASSES):
            lines.append(
                f"{name:<18} {self.precision[index]:9.2f} {self.recall[index]:7.2f} "
                f"{self.f1[index]:6.2f} {self.support[index]:4d}"
            )
        lines.append(f"macro-F1 {self.macro_f1:.3f}   accuracy {self.accuracy:.3f}")
        lines.append("confusion (rows true, columns predicted: " + ", ".join(CLASSES) + ")")
        lines += ["  " + " ".join(f"{value:4d}" for value in row) for row in self.confusion]
        return "\n".join(lines)


def evaluate(
    classifier: PatternClassifier, inputs: MapInputs, two_segments: torch.Tensor, labels: np.ndarray
) -> Evaluation:
    """Scores of the classifier's predictions (`block` ruled out for single-segment inputs)."""
    predicted = possible_classes(classifier.logits(inputs), two_segments).numpy()
    classes = list(range(len(CLASSES)))
    precision, recall, f1, support = precision_recall_fscore_support(labels, predicted, labels=classes, zero_division=0)
    return Evaluation(
        macro_f1=float(f1_score(labels, predicted, labels=classes, average="macro", zero_division=0)),
        accuracy=float((predicted == labels).mean()),
        precision=precision.tolist(),
        recall=recall.tolist(),
        f1=f1.tolist(),
        support=support.tolist(),
        confusion=confusion_matrix(labels, predicted, labels=classes).tolist(),
    )


def _fit(network: PatternCNN, inputs: MapInputs, labels: torch.Tensor, config: TrainConfig) -> list[float]:
    """Mini-batch AdamW with a cosine schedule; returns the mean loss per epoch."""
    optimiser = torch.optim.AdamW(network.parameters(), lr=config.learning_rate, weight_decay=config.weight_decay)
    steps = config.epochs * -(-len(inputs) // config.batch_size)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimiser, config.learning_rate, total_steps=steps)
    generator = torch.Generator().manual_seed(config.seed)
    losses = []
    network.train()
    for _ in range(config.epochs):
        order = torch.randperm(len(inputs), generator=generator)
        total = 0.0
        for start in range(0, len(order), config.batch_size):
            batch = order[start : start + config.batch_size]
            logits = network(inputs.images[batch], inputs.measures[batch])
            loss = torch.nn.functional.cross_entropy(logits, labels[batch])
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            schedule.step()
            total += loss.item() * len(batch)
        losses.append(total / len(order))
    network.eval()
    return losses


def recipe_description(config: TrainConfig) -> dict[str, str]:
    """The recipe's settings, files by name and content hash (no machine's paths)."""
    return {
        key: f"{value.name} sha256:{hashlib.sha256(value.read_bytes()).hexdigest()[:16]}"
        if isinstance(value, Path) and value.exists()
        else str(value)
        for key, value in asdict(config).items()
        if key != "out"
    }


def synthetic_inputs(config: TrainConfig) -> tuple[MapInputs, list[int]]:
    """The balanced synthetic training set of ``config``, as the inputs of its kind, and its labels."""
    per_class, max_length = config.synthetic_size
    maps, second_segments, labels = synthetic_set(per_class, seed=config.seed, max_length=max_length)
    return normalise_list(maps, second_segments, images=config.kind == "cnn"), labels


def real_inputs(
    rows: list[LabelledMap], maps: dict[str, np.ndarray], config: TrainConfig
) -> tuple[MapInputs, torch.Tensor]:
    """The labelled maps as the inputs of ``config``'s kind and whether each input is a pair (len(rows),) bool."""
    second_segments = [row.second_segment for row in rows]
    inputs = normalise_list([maps[row.id] for row in rows], second_segments, images=config.kind == "cnn")
    return inputs, torch.tensor(second_segments) != NO_SECOND_SEGMENT


def fit(
    real_inputs: MapInputs, real_labels: np.ndarray, synthetic: tuple[MapInputs, list[int]], config: TrainConfig
) -> tuple[MeasuredTrees | PatternCNN, list[float]]:
    """A network of ``config``'s kind seeded by ``config.seed``, and its training loss per epoch
    (none for trees): trees on the measurements of the real maps and the synthetic set, or a
    CNN on the synthetic set and the real maps (repeated `real_repeats` times)."""
    if config.kind == "trees":
        measures = torch.cat([real_inputs.measures, synthetic[0].measures]).numpy()
        labels = np.concatenate([real_labels, synthetic[1]])
        return fit_trees(measures, labels, config.tree_depth, config.tree_rounds, config.seed), []
    torch.manual_seed(config.seed)
    inputs = MapInputs.cat([synthetic[0]] + [real_inputs] * config.real_repeats)
    targets = torch.tensor(synthetic[1] + real_labels.tolist() * config.real_repeats)
    network = PatternCNN()
    return network, _fit(network, inputs, targets, config)


def train(config: TrainConfig) -> tuple[PatternClassifier, Evaluation, list[float]]:
    """Split, train, evaluate on the held-out real maps, save the weights to ``config.out``."""
    rows = read_labels(config.labels_file)
    maps = read_maps(config.maps_file)
    labels = np.array([CLASSES.index(row.label) for row in rows])
    train_rows, test_rows = train_test_split(
        np.arange(len(rows)), test_size=config.test_fraction, stratify=labels, random_state=config.seed
    )
    inputs, two_segments = real_inputs(rows, maps, config)
    network, losses = fit(inputs.take(train_rows), labels[train_rows], synthetic_inputs(config), config)
    evaluation = evaluate(
        PatternClassifier(network), inputs.take(test_rows), two_segments[test_rows], labels[test_rows]
    )
    evaluation.counts = {
        split: {name: int((labels[part] == index).sum()) for index, name in enumerate(CLASSES)}
        for split, part in (("train", train_rows), ("test", test_rows))
    }
    info = {
        "evaluation": asdict(evaluation),
        "test_ids": [rows[i].id for i in test_rows],
        "config": recipe_description(config),
    }
    classifier = PatternClassifier(network, info)
    classifier.save(config.out)
    return classifier, evaluation, losses


def log_to_mlflow(
    config: TrainConfig,
    evaluation: Evaluation,
    losses: list[float],
    seconds: float,
    tracking_uri: str,
    experiment: str = "pattern-classifier",
) -> str:
    """One MLflow run with the settings, per-class scores, loss curve, confusion matrix and weights."""
    mlflow.set_tracking_uri(tracking_uri)
    mlflow.set_experiment(experiment)
    with mlflow.start_run(run_name=f"{config.kind}-seed{config.seed}") as run:
        mlflow.log_params({key: str(value) for key, value in asdict(config).items()})
        metrics: dict[str, float] = {
            "macro_f1": evaluation.macro_f1,
            "accuracy": evaluation.accuracy,
            "train_seconds": seconds,
        }
        for index, name in enumerate(CLASSES):
            for score in ("precision", "recall", "f1"):
                metrics[f"{score}.{name.replace('+', '_')}"] = getattr(evaluation, score)[index]
        mlflow.log_metrics(metrics)
        for epoch, loss in enumerate(losses):
            mlflow.log_metric("train_loss", loss, step=epoch)
        with tempfile.TemporaryDirectory() as folder:
            report = Path(folder) / "evaluation.json"
            report.write_text(json.dumps(asdict(evaluation), indent=2))
            mlflow.log_artifact(str(report))
            mlflow.log_artifact(str(draw_confusion(evaluation, Path(folder) / "confusion.png")))
        mlflow.log_artifact(str(config.out))
        return run.info.run_id


def draw_confusion(evaluation: Evaluation, path: Path) -> Path:
    """The held-out confusion matrix as a labelled heatmap."""
    matrix = np.asarray(evaluation.confusion)
    figure, axes = plt.subplots(figsize=(5.2, 4.4))
    image = axes.imshow(matrix, cmap="Blues")
    for (row, column), value in np.ndenumerate(matrix):
        axes.text(
            column,
            row,
            str(value),
            ha="center",
            va="center",
            color="white" if value > matrix.max() / 2 else "black",
            fontsize=8,
        )
    axes.set_xticks(range(len(CLASSES)), CLASSES, rotation=30, ha="right", fontsize=8)
    axes.set_yticks(range(len(CLASSES)), CLASSES, fontsize=8)
    axes.set_xlabel("predicted")
    axes.set_ylabel("labelled")
    axes.set_title(f"held-out real maps: macro-F1 {evaluation.macro_f1:.2f}", fontsize=9)
    figure.colorbar(image, ax=axes, label="maps")
    figure.tight_layout()
    figure.savefig(path, dpi=200)
    plt.close(figure)
    return path


def run(config: TrainConfig, tracking_uri: str) -> Evaluation:
    """Train, print the held-out scores, log them; the CLI entry point."""
    started = time.perf_counter()
    _, evaluation, losses = train(config)
    seconds = time.perf_counter() - started
    print(evaluation.table())
    print(f"trained in {seconds:.0f} s; weights: {config.out}")
    run_id = log_to_mlflow(config, evaluation, losses, seconds, tracking_uri)
    print(f"MLflow run {run_id} at {tracking_uri}")
    return evaluation
