"""The tasks ``--task`` names: GLUE's nine, one spec file each in ``tasks/specs`` (`tasks.spec`),
found by listing that folder; a spec file's path names a user's own task.

Both GLUE loaders (`tasks.glue_tsv` for the original GLUE folder and `tasks.hub` for `datasets`)
read their column names from the same spec, so they yield the same examples.
"""

from __future__ import annotations

import difflib
from functools import cache
from pathlib import Path
from typing import Any

from tasks.errors import InputError, clipped
from tasks.spec import FLAG_SOURCE, Task, is_spec_path, read_spec, task_from_spec

HUB_DATASET = "nyu-mll/glue"  # GLUE on the hub: one config per task
SPECS = Path(__file__).with_name("specs")

GLUE_ORDER = ("cola", "sst2", "mrpc", "stsb", "qqp", "mnli", "qnli", "rte", "wnli")  # the benchmark's own order


def shipped_order(task: Task) -> tuple[int, str]:
    """GLUE's tasks in the benchmark's order, then any other shipped spec by name."""
    return (GLUE_ORDER.index(task.name) if task.name in GLUE_ORDER else len(GLUE_ORDER), task.name)


TASKS: dict[str, Task] = {task.name: task for task in sorted(map(read_spec, SPECS.glob("*.toml")), key=shipped_order)}


def get_task(name: str) -> Task:
    """Look a task up by name (case-insensitive, "sst-2" and "sts-b" accepted)."""
    key = name.lower().replace("-", "")
    if key not in TASKS:
        raise InputError(f"unknown task {name!r}; valid tasks: {', '.join(TASKS)}, or a task spec file (.toml, .yaml)")
    return TASKS[key]


@cache
def find_task(name: str) -> Task:
    """A registered task by name, or the task of a spec file (.toml, .yaml) by its path."""
    if not is_spec_path(name):
        return get_task(name)
    path = Path(name).expanduser()
    if not path.is_file():
        raise InputError(f"--task {name}: no such task spec file; check the path, or name one of {', '.join(TASKS)}")
    task = read_spec(path.resolve())
    if task.name in TASKS:
        raise InputError(f"{path}: name = {task.name!r} is GLUE's; give your task a name of its own")
    return task


@cache
def flag_task(flags: tuple[tuple[str, Any], ...]) -> Task:  # Any: each flag's value, checked as a spec's
    """The task ``--dataset`` and its flags define (``--task`` its name), as a spec of those keys."""
    values = {key: value for key, value in flags if value is not None}
    if values["name"] in TASKS or is_spec_path(values["name"]):
        raise InputError(f"--task {values['name']}: with --dataset, --task names your task; give it a name of its own")
    if "text_fields" not in values:
        raise InputError("--dataset needs --text-fields: the one or two columns holding the text")
    folder = Path(values["dataset"]).expanduser()
    if folder.is_file():
        raise InputError(
            f"--dataset {folder}: a file holds one split; give the folder of the train and dev files "
            "(their names give the splits) or a spec file naming a file per split"
        )
    if folder.exists():
        values["dataset"] = str(folder.resolve())
    else:
        check_hub_id(values["dataset"])
    return task_from_spec(values, FLAG_SOURCE)


def check_hub_id(name: str) -> None:
    """``--dataset`` that is no folder here is a hub id: refused in one line when it is written as
    a path (``./reviews``, ``data/reviews`` whose parent folder exists) or is a near miss of a folder
    here (``reviewz`` beside ``reviews``), so a typo says "no such folder", not "the hub has no such
    dataset"."""
    path = Path(name).expanduser()
    written_as_path = name.startswith((".", "/", "~")) or (len(path.parts) > 1 and path.parent.is_dir())
    beside = path.parent if written_as_path or len(path.parts) == 1 else None  # owner/name: the hub's
    folders = [entry.name for entry in beside.iterdir() if entry.is_dir()] if beside and beside.is_dir() else []
    close = difflib.get_close_matches(path.name, folders, n=1, cutoff=0.8)
    if written_as_path or close:
        hint = f" (did you mean {str(path.with_name(close[0]))!r}?)" if close else ""
        raise InputError(
            f"--dataset {clipped(name)}: no such folder{hint}; give the folder of your task's files, "
            "or a hub id (owner/name)"
        )
