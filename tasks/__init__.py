"""GLUE tasks: the registry and the example type (light to import: the CLI checks ``--task``
with it before anything heavy loads). The loaders are in `tasks.loading`."""

from tasks.examples import Example
from tasks.registry import TASKS, GlueTask, get_task

__all__ = ["TASKS", "Example", "GlueTask", "get_task"]
