"""Loader for GLUE from the Hugging Face hub (`datasets`, ``nyu-mll/glue``): online, or offline from
what an earlier download left in the local caches."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import datasets
from huggingface_hub import snapshot_download

from tasks.errors import InputError
from tasks.examples import Example
from tasks.hub_reach import read_cache_only_if_unreachable
from tasks.registry import HUB_DATASET
from tasks.spec import Task


def hub_split_name(split: str) -> str:
    """GLUE file names ("dev_matched") to hub split names ("validation_matched")."""
    return split.replace("dev", "validation")


def cached_snapshot(repo_id: str) -> Path | None:
    """The folder of a dataset repository's snapshot in the local hub cache (``refs/main``'s commit,
    as ``hf download <repo> --repo-type dataset`` leaves it), or None when it is not there."""
    try:
        return Path(snapshot_download(repo_id, repo_type="dataset", local_files_only=True))
    except Exception:  # not cached, not a repository id, or a hub error of any type
        return None


def hub_rows(task: Task, split: str) -> datasets.Dataset:
    """The hub's rows of one split. `datasets` reads the hub online, and offline the dataset cache
    an earlier load prepared; it does not read the hub cache's snapshot offline, so that comes next:
    the split's parquet files in the layout of the hub's parquet conversion (``rte/validation-*.parquet``)."""
    name = hub_split_name(split)
    read_cache_only_if_unreachable()
    try:
        return datasets.load_dataset(HUB_DATASET, task.config, split=name)
    except Exception as error:  # datasets raises many types for offline / missing data
        failure = error
    snapshot = cached_snapshot(HUB_DATASET)
    folder = None if snapshot is None else snapshot / task.config if task.config else snapshot
    files = sorted(folder.glob(f"{name}-*.parquet")) if folder is not None else []
    if files:
        try:
            return datasets.load_dataset("parquet", data_files={name: [str(path) for path in files]}, split=name)
        except Exception as error:  # a damaged file: pyarrow and datasets raise many types
            raise InputError(
                f"{files[0].parent}: could not read {HUB_DATASET}'s {name} parquet files "
                f"({first_line(error)}); download them again or point --data-dir or GLUE_DIR "
                "at a GLUE TSV folder"
            ) from error
    cached = (
        f"nor has its hub cache snapshot {snapshot.name} {task.config}/{name}-*.parquet"
        if snapshot is not None
        else "nor is it in the hub cache"
    )
    raise InputError(
        f"could not load {HUB_DATASET}/{task.config} {name} ({first_line(failure)}), {cached}; "
        "offline? point --data-dir or GLUE_DIR at a GLUE TSV folder"
    ) from failure


def first_line(error: Exception) -> str:
    """An exception as one line: its type and the first line of its message."""
    message = str(error).strip().splitlines()
    return f"{type(error).__name__}: {message[0]}" if message else type(error).__name__


def read_glue_hub(task: Task, split: str) -> Iterator[Example]:
    """Yield the same examples as `read_glue_tsv`, from the hub copy of GLUE. Guids too: the hub's
    ``idx`` counts the rows of GLUE's TSV file, the TSV loader's guid is the row's line in that file."""
    first_row_line = 2 if task.glue is None or task.glue.header else 1
    field_a, field_b = task.text_fields
    for row in hub_rows(task, split):
        yield Example(
            guid=f"{task.name}-{row['idx'] + first_row_line}",
            text_a=row[field_a].strip(),
            text_b=row[field_b].strip() if field_b else None,
            label=float(row["label"]) if task.is_regression else int(row["label"]),
            split=split,
        )
