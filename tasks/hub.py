"""Loader for GLUE from the Hugging Face hub (`datasets`, ``nyu-mll/glue``), for online users."""

from __future__ import annotations

from collections.abc import Iterator

import datasets

from tasks.errors import InputError
from tasks.examples import Example
from tasks.registry import GlueTask

HUB_DATASET = "nyu-mll/glue"


def hub_split_name(split: str) -> str:
    """GLUE file names ("dev_matched") to hub split names ("validation_matched")."""
    return split.replace("dev", "validation")


def read_glue_hub(task: GlueTask, split: str) -> Iterator[Example]:
    """Yield the same examples as `read_glue_tsv`, from the hub copy of GLUE."""
    try:
        rows = datasets.load_dataset(HUB_DATASET, task.hub_config, split=hub_split_name(split))
    except Exception as error:  # datasets raises many types for offline / missing data
        raise InputError(
            f"could not load {HUB_DATASET}/{task.hub_config} ({type(error).__name__}: {error}); "
            "offline? point --data-dir or GLUE_DIR at a GLUE TSV folder"
        ) from error
    field_a, field_b = task.hub_fields
    for row in rows:
        yield Example(
            guid=f"{task.name}-{row['idx']}",
            text_a=row[field_a].strip(),
            text_b=row[field_b].strip() if field_b else None,
            label=float(row["label"]) if task.is_regression else int(row["label"]),
            split=split,
        )
