"""GLUE tasks: the registry and the two loaders that yield the same `Example`s."""

from __future__ import annotations

import os
from pathlib import Path

from tasks.examples import Example
from tasks.registry import TASKS, GlueTask, get_task

__all__ = ["TASKS", "Example", "GlueTask", "get_task", "load_examples", "resolve_data_dir"]


def resolve_data_dir(data_dir: str | Path | None) -> Path | None:
    """The GLUE folder: the explicit ``--data-dir``, else ``$GLUE_DIR``, else None (use the hub)."""
    chosen = data_dir or os.environ.get("GLUE_DIR")
    return Path(chosen) if chosen else None


def load_examples(task: GlueTask, split: str, data_dir: str | Path | None = None) -> list[Example]:
    """All examples of a split ("train", "dev", "dev_matched", ...), from TSV or the hub."""
    from tasks.glue_tsv import read_glue_tsv
    from tasks.hub import read_glue_hub

    folder = resolve_data_dir(data_dir)
    rows = read_glue_tsv(folder, task, split) if folder else read_glue_hub(task, split)
    return list(rows)
