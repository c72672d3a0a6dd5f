"""What the papers found, as runs and studies set their results beside it
(`harness.views.base.PaperPoint`): Kovaleva et al.'s Table 1 and the tasks she fine-tuned on,
Prasanna et al.'s pattern shares and the directions of change they give per task."""

from __future__ import annotations

from harness.results.checkpoints import FINETUNED, FROZEN_ENCODER, RANDOM_INIT
from harness.results.study_record import PaperBeside

# Kovaleva et al. 2019, Table 1 (dev; MRPC and QQP as F1/accuracy).
KOVALEVA_TABLE_1 = {
    "mrpc": {FROZEN_ENCODER: "0/31.6", RANDOM_INIT: "81.2/68.3", FINETUNED: "87.9/82.3"},
    "stsb": {FROZEN_ENCODER: "33.1", RANDOM_INIT: "2.9", FINETUNED: "82.7"},
    "sst2": {FROZEN_ENCODER: "49.1", RANDOM_INIT: "80.5", FINETUNED: "92.0"},
    "qqp": {FROZEN_ENCODER: "0/60.9", RANDOM_INIT: "0/63.2", FINETUNED: "65.2/78.6"},
    "rte": {FROZEN_ENCODER: "52.7", RANDOM_INIT: "52.7", FINETUNED: "64.6"},
    "qnli": {FROZEN_ENCODER: "52.8", RANDOM_INIT: "49.5", FINETUNED: "84.4"},
    "mnli": {FROZEN_ENCODER: "31.7", RANDOM_INIT: "61.0", FINETUNED: "78.6"},
}
# The GLUE tasks she fine-tuned bert-base-uncased on (CoLA and WNLI excluded).
KOVALEVA_TASKS = tuple(KOVALEVA_TABLE_1)

# Prasanna et al. 2020: the share of heterogeneous maps per task, pre-trained and fine-tuned
# bert-base-uncased (percent, 100 dev examples x 5 seeds x 144 heads, Kovaleva et al.'s classes).
PRASANNA_HETEROGENEOUS = {
    "cola": (41.0, 42.1),
    "sst2": (22.5, 22.8),
    "mrpc": (25.6, 23.3),
    "stsb": (53.4, 49.8),
    "qqp": (55.9, 50.8),
    "mnli": (28.3, 25.2),
    "qnli": (57.0, 49.7),
    "rte": (15.9, 15.7),
}


def expected_for(tasks: tuple[str, ...], expectation: str = "holds") -> dict[str, str]:
    """The same expectation on each of a paper's tasks (the others are not compared)."""
    return dict.fromkeys(tasks, expectation)


def directions(shares: dict[str, tuple[float, float]]) -> dict[str, str]:
    """``rises`` or ``falls`` per task, from a paper's (pre-trained, fine-tuned) values."""
    return {task: "rises" if after > before else "falls" for task, (before, after) in shares.items()}


def verdict_text(paper: PaperBeside) -> str:
    """How a study's finding stands beside its paper: ``partly (the paper's way on every seed of 2 of 4 tasks)``."""
    return paper["verdict"] + (f" ({paper['detail']})" if paper["detail"] else "")


def paper_line(paper: PaperBeside) -> str:
    """A finding's paper in one phrase: ``Kovaleva et al. 2019, Fig. 5: agrees (...)``."""
    return f"{paper['source']}: {verdict_text(paper)}"


def paper_cells(paper: PaperBeside | None) -> tuple[str, str]:
    """Table cells of a finding's paper: what it found (source: finding), and the verdict."""
    if paper is None:
        return "not measured by the papers", "-"
    return f"{paper['source']}: {paper['says']}", verdict_text(paper)
