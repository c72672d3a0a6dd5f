"""Tasks: the registry (GLUE's specs) and the example type (light to import: the CLI checks ``--task``
with it before anything heavy loads). The loaders are in `tasks.loading`."""

from tasks.examples import Example
from tasks.registry import TASKS, get_task
from tasks.spec import Task

__all__ = ["TASKS", "Example", "Task", "get_task"]
