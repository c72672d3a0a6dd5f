"""Loading a split of a task: GLUE's from the original TSV folder or from the hub (both loaders
yield the same `Example`s), any other task's through `datasets` (`tasks.dataset_source`)."""

from __future__ import annotations

from pathlib import Path

from tasks.dataset_source import read_dataset_split, with_folder_files, with_labels
from tasks.examples import Example
from tasks.glue_tsv import read_glue_tsv
from tasks.hub import read_glue_hub
from tasks.spec import Task


def resolved(task: Task) -> Task:
    """``task`` with its classes known (GLUE's are in its spec, another task's may come from its
    training split) and a local folder's files named by split, as a spec names them."""
    return task if task.glue is not None else with_labels(with_folder_files(task))


def load_examples(task: Task, split: str, data_dir: str | Path | None = None) -> list[Example]:
    """All examples of a split ("train", "dev", "dev_matched", a dataset's "validation"...): a
    GLUE task's from the GLUE TSV folder ``data_dir``, or from the hub when it is None."""
    if task.glue is None:
        return read_dataset_split(resolved(task), split)
    rows = read_glue_tsv(data_dir, task, split) if data_dir else read_glue_hub(task, split)
    return list(rows)


def check_local(task: Task) -> None:
    """A task of one's own whose data are files here (`Task.is_local`) read and checked as a run
    reads them, every split: the CLI calls it before it imports torch, so a row without a label or
    a column that is not there is one line in the seconds `datasets` takes to load, not a model's."""
    for split in (task.train_split, *task.eval_splits):
        load_examples(task, split)
