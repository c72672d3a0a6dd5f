"""A second, independent labelling pass and its agreement with the labels (the CNN's ceiling).

``python -m classifier second-pass`` draws labelled maps, the same number from each task,
into a pool whose sheets show no labels; a second labeller labels it without seeing the
first labels (``<id> <class>`` lines, as for any pool), and ``python -m classifier agreement``
compares the two: Cohen's kappa with a bootstrap interval, raw agreement, and the confusion
between the passes, stored in `AGREEMENT_FILE` (the second pass's labels beside it in
`SECOND_PASS_FILE`).
"""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import NotRequired, TypedDict

import numpy as np
from sklearn.metrics import cohen_kappa_score, confusion_matrix, f1_score

from classifier.annotate import parse_label_lines, separator_ticks, write_pool
from classifier.data import CLASSES, DATA_DIR, LabelledMap, MapSource, draw_evenly, read_labels, read_maps
from classifier.guideline import relabel
from tasks.files import atomic_path

AGREEMENT_FILE = Path(__file__).resolve().parent / "agreement.json"
SECOND_PASS_FILE = DATA_DIR / "second_pass.txt"
BOOTSTRAP = 2000


def draw_second_pass(
    rows: list[LabelledMap], maps: dict[str, np.ndarray], count: int, seed: int, out: Path
) -> list[Path]:
    """Up to ``count`` labelled maps, spread evenly over tasks, in random order, written as a
    pool without their labels; returns the sheets."""
    rng = np.random.default_rng(seed)
    by_task: dict[str, list[LabelledMap]] = defaultdict(list)
    for row in rows:
        by_task[row.task].append(row)
    chosen = draw_evenly([members for _, members in sorted(by_task.items())], count, rng)
    chosen = [chosen[i] for i in rng.permutation(len(chosen))]
    sources = [MapSource(**{key: value for key, value in vars(row).items() if key != "label"}) for row in chosen]
    return write_pool(
        out, sources, {row.id: maps[row.id] for row in chosen}, {row.id: separator_ticks(row) for row in chosen}
    )


def kappa_interval(first: np.ndarray, second: np.ndarray, seed: int = 0) -> tuple[float, float]:
    """95% bootstrap interval of Cohen's kappa, resampling maps."""
    rng = np.random.default_rng(seed)
    draws = [
        cohen_kappa_score(first[sample], second[sample], labels=list(CLASSES))
        for sample in rng.integers(0, len(first), size=(BOOTSTRAP, len(first)))
    ]
    low, high = np.nanpercentile(draws, [2.5, 97.5])
    return float(low), float(high)


class Agreement(TypedDict):
    """A second labelling pass against the stored labels (`agreement`)."""

    maps: int
    cohen_kappa: float
    cohen_kappa_interval: list[float]
    raw_agreement: float
    macro_f1: float
    raw_agreement_per_task: dict[str, float]
    confusion: list[list[int]]


class WithLines(Agreement):
    """`Agreement` with the guideline's measured lines applied to the second pass, and how many maps they moved."""

    moved: int


class Recorded(Agreement):
    """What `record_agreement` returns (and stores beside the rows' and classes' names)."""

    with_lines: NotRequired[WithLines]


def agreement(rows: list[LabelledMap], second: dict[str, str]) -> Agreement:
    """Agreement of the second pass with the stored labels of the same maps: Cohen's kappa with
    its interval, and the second pass scored as a classifier would be (macro-F1 over the
    classes present, accuracy), so that the CNN's cross-validated scores can be set beside it."""
    labelled = {row.id: row for row in rows}
    unknown = sorted(set(second) - set(labelled))
    if unknown:
        raise ValueError(f"the second pass labels maps that have no stored label: {', '.join(unknown[:5])}")
    ids = sorted(second)
    first_labels = np.array([labelled[map_id].label for map_id in ids])
    second_labels = np.array([second[map_id] for map_id in ids])
    low, high = kappa_interval(first_labels, second_labels)
    per_task = defaultdict(list)
    for map_id in ids:
        per_task[labelled[map_id].task].append(labelled[map_id].label == second[map_id])
    return {
        "maps": len(ids),
        "cohen_kappa": float(cohen_kappa_score(first_labels, second_labels, labels=list(CLASSES))),
        "cohen_kappa_interval": [low, high],
        "raw_agreement": float((first_labels == second_labels).mean()),
        "macro_f1": float(f1_score(first_labels, second_labels, labels=sorted(set(first_labels)), average="macro")),
        "raw_agreement_per_task": {task: float(np.mean(same)) for task, same in sorted(per_task.items())},
        "confusion": confusion_matrix(first_labels, second_labels, labels=list(CLASSES)).tolist(),
    }


def record_agreement(labels_path: Path, out: Path = AGREEMENT_FILE) -> Recorded:
    """Compare a second pass's ``<id> <class>`` file with the stored labels, as labelled and with
    the guideline's measured lines applied to it as to the stored labels (`relabel`); store the
    result and a copy of the second pass's labels; returns the result."""
    second = parse_label_lines(labels_path.read_text().splitlines(), str(labels_path))
    rows = read_labels()
    stored = {row.id: row for row in rows}
    moved, count = relabel(
        [replace(stored[map_id], label=label) for map_id, label in second.items() if map_id in stored], read_maps()
    )
    result: Recorded = {
        **agreement(rows, second),
        "with_lines": {"moved": count, **agreement(rows, {row.id: row.label for row in moved})},
    }
    with atomic_path(out) as temporary:
        temporary.write_text(
            json.dumps(
                {
                    "rows": "stored labels (first) x second pass (columns), in the order of classes",
                    "classes": list(CLASSES),
                    **result,
                },
                indent=2,
            )
            + "\n"
        )
    if labels_path.resolve() != SECOND_PASS_FILE.resolve():
        shutil.copyfile(labels_path, SECOND_PASS_FILE)
    return result


def agreement_table(result: Recorded) -> str:
    """The agreement in a few lines of text."""
    low, high = result["cohen_kappa_interval"]
    lines = [
        f"{result['maps']} maps: Cohen's kappa {result['cohen_kappa']:.3f} [{low:.3f}, {high:.3f}], "
        f"raw agreement {result['raw_agreement']:.3f}, macro-F1 {result['macro_f1']:.3f}"
    ]
    if "with_lines" in result:
        lines_applied = result["with_lines"]
        low, high = lines_applied["cohen_kappa_interval"]
        lines.append(
            f"with the measured lines applied to the second pass ({lines_applied['moved']} moved): kappa "
            f"{lines_applied['cohen_kappa']:.3f} [{low:.3f}, {high:.3f}], raw agreement "
            f"{lines_applied['raw_agreement']:.3f}, macro-F1 {lines_applied['macro_f1']:.3f}"
        )
    per_task = result["raw_agreement_per_task"]
    lines.append(
        "raw agreement per task (as labelled): " + ", ".join(f"{task} {share:.2f}" for task, share in per_task.items())
    )
    lines.append("confusion (rows stored labels, columns second pass as labelled: " + ", ".join(CLASSES) + ")")
    lines += ["  " + " ".join(f"{value:4d}" for value in row) for row in result["confusion"]]
    return "\n".join(lines)
