"""``harness tasks TASK``: one task's data read and checked as a run reads it, and described (no torch)."""

from __future__ import annotations

import os

from harness.config import TasksConfig
from tasks.preview import task_lines
from tasks.registry import find_task


def tasks(settings: TasksConfig) -> None:
    """The task's data (its spec's, the registry's; GLUE's from $GLUE_DIR, else the hub) said a line a
    part, then how to see a run's key and cost."""
    for line in task_lines(find_task(settings.task), os.environ.get("GLUE_DIR") or None):  # type: ignore[arg-type]
        print(line)
    print(
        f"  a run's key, folder and cost: `harness run --task {settings.task} --model M --dry-run` (with the "
        "run's flags)"
    )
