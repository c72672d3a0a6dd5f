"""The tasks ``--task`` names: GLUE's nine, one spec file each in ``tasks/specs`` (`tasks.spec`),
found by listing that folder; a spec file's path names a user's own task.

Both GLUE loaders (`tasks.glue_tsv` for the original GLUE folder and `tasks.hub` for `datasets`)
read their column names from the same spec, so they yield the same examples.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from tasks.errors import InputError
from tasks.spec import Task, is_spec_path, read_spec, task_from_spec

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
def flag_task(flags: tuple[tuple[str, Any], ...]) -> Task:
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
    return task_from_spec(values, "--dataset")
