"""Loading a split of a GLUE task from the original TSV folder or from the hub; both loaders
yield the same `Example`s."""

from __future__ import annotations

from pathlib import Path

from tasks.examples import Example
from tasks.glue_tsv import read_glue_tsv
from tasks.hub import read_glue_hub
from tasks.registry import GlueTask


def load_examples(task: GlueTask, split: str, data_dir: str | Path | None = None) -> list[Example]:
    """All examples of a split ("train", "dev", "dev_matched", ...): from the GLUE TSV folder
    ``data_dir``, or from the hub (`datasets`) when it is None."""
    rows = read_glue_tsv(data_dir, task, split) if data_dir else read_glue_hub(task, split)
    return list(rows)
