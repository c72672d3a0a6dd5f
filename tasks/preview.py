"""A task's data as a run will read it, said before any work (``harness tasks SPEC``, ``harness run
--dry-run``): where it comes from, its columns, the order of its labels (the model's outputs),
how many examples of each class every split holds, and what scores it against which baseline.
Reading the data checks it: a problem is the one line a run would stop with."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np

from tasks.dataset_source import checked_split
from tasks.examples import Example
from tasks.loading import load_examples, resolved
from tasks.spec import FLAG_SOURCE, Task

SHOWN_TAGS = 6  # a tagging split's most frequent tags named in its line


def task_lines(task: Task, data_dir: str | Path | None = None, located: Task | None = None) -> list[str]:
    """What a run of ``task`` (as its spec or flags say it) reads and scores, a line each: the task
    and its data, its columns, its labels in the model's order, each split's counts, and its metrics
    beside their baseline; ``located``: the same task with its files where they are found (a
    pinned corpus's)."""
    read = resolved(located or task)
    splits = dict.fromkeys((read.train_split, *read.eval_splits))
    examples = {split: load_examples(read, split, data_dir) for split in splits}
    return [
        f"task {read.name} ({'the --dataset flags' if task.source == FLAG_SOURCE else task.source or 'registered'})",
        f"  data: {data_line(read, data_dir)}",
        f"  columns: {columns_line(read)}",
        f"  labels: {labels_line(task, read)}",
        *(f"  {split}: {counts_line(read, rows)}" for split, rows in examples.items()),
        f"  scored by: {metrics_line(read, examples[read.main_eval_split])}",
    ]


def data_line(task: Task, data_dir: str | Path | None) -> str:
    """Where each split is read from: its files (by name), the hub dataset, or GLUE's TSV folder."""
    if task.glue is not None:
        return (
            f"GLUE's {task.glue.folder} TSV files in {data_dir}"
            if data_dir
            else f"{task.dataset} ({task.config}), the hub"
        )
    if task.data_files:
        files = "; ".join(f"{split} {', '.join(Path(path).name for path in paths)}" for split, paths in task.data_files)
        return f"{task.dataset} files: {files}"
    return f"{task.dataset}" + (f" ({task.config})" if task.config else "") + ", through `datasets`"


def columns_line(task: Task) -> str:
    """The columns the training split has, and which are the texts and the label."""
    texts = " and ".join(name for name in task.text_fields if name)
    said = f"text {texts}, label {task.label_field} ({task.label_kind})"
    if task.glue is not None or task.is_tagging:
        return said
    return f"{', '.join(checked_split(task, task.train_split).column_names)}; {said}"


def labels_line(asked: Task, task: Task) -> str:
    """The classes in the order of the model's outputs, and where that order comes from."""
    if task.is_regression:
        return "a score: the model has one output"
    order = ", ".join(f"{index} {name}" for index, name in enumerate(task.label_names))
    if asked.label_names:
        origin = "as the spec lists them"
    elif task.is_tagging:
        origin = "the training split's tags, sorted"
    else:
        names = getattr(checked_split(task, task.train_split).features[task.label_field], "names", None)
        origin = "the dataset's class names" if names else "the training split's values, sorted"
    return f"{order} (the model's outputs in this order: {origin}; the spec's labels key sets another)"


def counts_line(task: Task, rows: list[Example]) -> str:
    """A split's size and spread: examples per class, the scores' mean and range, or sentences,
    words and the most frequent tags."""
    if task.is_tagging:
        tags = Counter(task.label_names[tag] for example in rows for tag in example.tags)
        words = sum(tags.values())
        top = ", ".join(f"{tag} {count / words:.0%}" for tag, count in tags.most_common(SHOWN_TAGS))
        return f"{len(rows):,} sentences, {words:,} words; tags {top}"
    if task.is_regression:
        scores = np.array([example.label for example in rows], dtype=float)
        spread = scores.std(ddof=1) if len(scores) > 1 else 0.0
        return (
            f"{len(rows):,} examples; scores mean {scores.mean():.3f} (s.d. {spread:.3f}), "
            f"from {scores.min():g} to {scores.max():g}"
        )
    counts = Counter(int(example.label) for example in rows)
    return (
        ", ".join(f"{name} {counts[index]:,}" for index, name in enumerate(task.label_names))
        + f" ({len(rows):,} examples)"
    )


def metrics_line(task: Task, main: list[Example]) -> str:
    """The metrics on the main evaluation split (the first: the learning check's and the
    trajectory's), beside the baseline every score is set beside."""
    metrics = ", ".join(f"{task.main_eval_split}/{metric}" for metric in task.metrics)
    if task.is_regression:
        return f"{metrics} (the first is the main one), beside the mean score (a constant: no correlation)"
    labels = [tag for example in main for tag in example.tags] if task.is_tagging else [int(e.label) for e in main]
    common, count = Counter(labels).most_common(1)[0]
    units = "words" if task.is_tagging else "examples"
    return (
        f"{metrics}{' over words' if task.is_tagging else ''} (the first is the main one), beside the majority "
        f"class: {task.label_names[common]}, {count / len(labels):.0%} of the {task.main_eval_split} {units}"
    )
