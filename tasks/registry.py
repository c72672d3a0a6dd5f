"""Registry of GLUE tasks: text fields, labels, metrics and where their files live.

A task is described once here; both loaders (`tasks.glue_tsv` for the original GLUE
folder and `tasks.hub` for `datasets`) read their column names from the same entry, so
they yield the same examples.
"""

from __future__ import annotations

from dataclasses import dataclass

from tasks.errors import InputError

HUB_DATASET = "nyu-mll/glue"  # GLUE on the hub: one config per task


@dataclass(frozen=True)
class GlueTask:
    """How one GLUE task is laid out and scored.

    ``tsv_columns`` are header names (or integer positions for header-less CoLA) of
    (text_a, text_b or None, label). ``tsv_labels`` lists the raw label strings in the
    order of ``label_names``; it is empty for regression (STS-B).
    """

    name: str
    folder: str
    hub_config: str
    hub_fields: tuple[str, str | None]
    tsv_columns: tuple[str | int, str | int | None, str | int]
    label_names: tuple[str, ...]
    tsv_labels: tuple[str, ...]
    metrics: tuple[str, ...]
    has_header: bool = True
    eval_splits: tuple[str, ...] = ("dev",)

    @property
    def is_regression(self) -> bool:
        """Whether the task is scored as regression (no label names: STS-B)."""
        return not self.label_names

    @property
    def num_labels(self) -> int:
        """Outputs of the classification head: 1 for regression, else one per label."""
        return 1 if self.is_regression else len(self.label_names)

    @property
    def is_pair(self) -> bool:
        """Whether an example is a pair of texts (the task has a second text field)."""
        return self.hub_fields[1] is not None

    @property
    def main_eval_split(self) -> str:
        """The evaluation split the main dev metric is read from: the first of ``eval_splits``."""
        return self.eval_splits[0]


_NLI = ("entailment", "not_entailment")

TASKS: dict[str, GlueTask] = {
    task.name: task
    for task in [
        GlueTask(
            "cola",
            "CoLA",
            "cola",
            ("sentence", None),
            (3, None, 1),
            ("unacceptable", "acceptable"),
            ("0", "1"),
            ("matthews",),
            has_header=False,
        ),
        GlueTask(
            "sst2",
            "SST-2",
            "sst2",
            ("sentence", None),
            ("sentence", None, "label"),
            ("negative", "positive"),
            ("0", "1"),
            ("accuracy",),
        ),
        GlueTask(
            "mrpc",
            "MRPC",
            "mrpc",
            ("sentence1", "sentence2"),
            ("#1 String", "#2 String", "Quality"),
            ("not_equivalent", "equivalent"),
            ("0", "1"),
            ("accuracy", "f1"),
        ),
        GlueTask(
            "stsb",
            "STS-B",
            "stsb",
            ("sentence1", "sentence2"),
            ("sentence1", "sentence2", "score"),
            (),
            (),
            ("pearson", "spearman"),
        ),
        GlueTask(
            "qqp",
            "QQP",
            "qqp",
            ("question1", "question2"),
            ("question1", "question2", "is_duplicate"),
            ("not_duplicate", "duplicate"),
            ("0", "1"),
            ("accuracy", "f1"),
        ),
        GlueTask(
            "mnli",
            "MNLI",
            "mnli",
            ("premise", "hypothesis"),
            ("sentence1", "sentence2", "gold_label"),
            ("entailment", "neutral", "contradiction"),
            ("entailment", "neutral", "contradiction"),
            ("accuracy",),
            eval_splits=("dev_matched", "dev_mismatched"),
        ),
        GlueTask(
            "qnli",
            "QNLI",
            "qnli",
            ("question", "sentence"),
            ("question", "sentence", "label"),
            _NLI,
            _NLI,
            ("accuracy",),
        ),
        GlueTask(
            "rte",
            "RTE",
            "rte",
            ("sentence1", "sentence2"),
            ("sentence1", "sentence2", "label"),
            _NLI,
            _NLI,
            ("accuracy",),
        ),
        GlueTask(
            "wnli",
            "WNLI",
            "wnli",
            ("sentence1", "sentence2"),
            ("sentence1", "sentence2", "label"),
            ("not_entailment", "entailment"),
            ("0", "1"),
            ("accuracy",),
        ),
    ]
}


def get_task(name: str) -> GlueTask:
    """Look a task up by name (case-insensitive, "sst-2" and "sts-b" accepted)."""
    key = name.lower().replace("-", "")
    if key not in TASKS:
        raise InputError(f"unknown task {name!r}; valid tasks: {', '.join(TASKS)}")
    return TASKS[key]
