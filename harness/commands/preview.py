"""``harness tasks TASK``: one task's data read and checked as a run reads it, and described (no torch)."""

from __future__ import annotations

import os

from harness.config import TasksConfig
from harness.corpus_lookup import corpus_location, in_corpus_folder, looked_in
from tasks.corpora import DOWNLOAD_COMMAND, get_corpus
from tasks.errors import InputError
from tasks.preview import task_lines
from tasks.registry import find_task
from tasks.spec import Task


def tasks(settings: TasksConfig) -> None:
    """The task's data (its spec's, the registry's; GLUE's from $GLUE_DIR, else the hub) said a line a
    part, then how to see a run's key and cost."""
    asked = find_task(settings.task)
    for line in task_lines(asked, os.environ.get("GLUE_DIR") or None, found(asked)):
        print(line)
    print(
        f"  a run's key, folder and cost: `harness run --task {settings.task} --model M --dry-run` (with the "
        "run's flags)"
    )


def found(task: Task) -> Task:
    """``task`` with the files of its pinned corpus where the corpus is (nothing is downloaded here)."""
    if task.corpus is None:
        return task
    corpus = get_corpus(task.corpus)
    location = corpus_location(corpus)
    if location is None:
        raise InputError(
            f"{task.source}: no {corpus.title} {corpus.version} {looked_in()}; `{DOWNLOAD_COMMAND} {corpus.name}` "
            "fetches it"
        )
    return in_corpus_folder(task, location.folder)
