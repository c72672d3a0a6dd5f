"""``harness data``: the pinned default corpora, listed (where each is found, or absent) or downloaded;
``harness tasks``: the tasks a run fine-tunes on. No torch."""

from __future__ import annotations

import os

from harness.config import DataConfig, TasksConfig
from harness.corpus_lookup import corpus_location
from tasks.corpora import CACHE, DATA_VARIABLE, DOWNLOAD_COMMAND, SHARED, Corpus, cache_folder, data_home, missing_files
from tasks.download import download_corpus
from tasks.registry import HUB_DATASET, TASKS
from tasks.spec import Task

PLACE_NAMES = {CACHE: "in the data cache", SHARED: "in ../shared/data (the development copy)"}


def data(settings: DataConfig) -> None:
    """``harness data list`` or ``harness data download``, for the corpora named (default: all)."""
    if settings.action == "download":
        for corpus in settings.corpora:
            print(fetched(corpus))
        return
    for corpus in settings.corpora:
        print(listed(corpus))
    print(
        f"data cache: {data_home()} (${DATA_VARIABLE} moves it); lookup order: the analysis's flag, the data "
        f"cache, ../shared/data beside a checkout, a download"
    )


TASK_COLUMNS = ("task", "inputs", "labels", "metrics", "eval splits", "GLUE folder", "hub config")


def tasks(settings: TasksConfig) -> None:
    """``harness tasks``: a row per task, in aligned columns, then where the tasks' data is read
    from and how a task of one's own is named (``harness tasks TASK`` is `harness.commands.preview`'s)."""
    rows = [TASK_COLUMNS, *(task_row(task) for task in TASKS.values())]
    widths = [max(len(row[column]) for row in rows) for column in range(len(TASK_COLUMNS))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    glue = os.environ.get("GLUE_DIR")
    corpora = [f"{task.name} reads {task.corpus}" for task in TASKS.values() if task.corpus]
    print(
        f"data: the GLUE TSV folder of --data-dir or $GLUE_DIR ({f'now {glue}' if glue else 'unset'}), "
        f"<folder>/<GLUE folder>/<split>.tsv; without either, {HUB_DATASET} from the hub through `datasets` "
        f"(or its cache); {', '.join(corpora)}, a pinned corpus (`harness data list`)"
    )
    print(
        "your own task: --task a spec file (.toml or .yaml: a `datasets` hub id, folder or CSV/TSV/JSONL/Parquet "
        'files, the text fields, the label), or --dataset with --text-fields; README, "Your own task"; '
        "`harness tasks TASK` reads, checks and describes one task's data"
    )


def task_row(task: Task) -> tuple[str, ...]:
    """A task's cells under `TASK_COLUMNS`."""
    return (
        task.name,
        "words of a treebank" if task.is_tagging else "pair of texts" if task.is_pair else "one text",
        f"a tag per word, {len(task.label_names)} ({task.label_field})"
        if task.is_tagging
        else "a score (regression)"
        if task.is_regression
        else ", ".join(task.label_names),
        ", ".join(task.metrics),
        ", ".join(task.eval_splits),
        task.glue.folder if task.glue else "",
        task.config or "",
    )


def fetched(corpus: Corpus) -> str:
    """``corpus`` downloaded into the data cache where it is not there yet; one line saying where it is."""
    folder = cache_folder(corpus)
    if not missing_files(corpus, folder):
        return f"{corpus.name} {corpus.version}: already in the data cache, {folder}"
    return f"{corpus.name} {corpus.version}: downloaded and verified, {download_corpus(corpus, folder)}"


def listed(corpus: Corpus) -> str:
    """Two lines: the corpus, its version, licence and size, and where it is found (or how to fetch
    it); then what reads it and where it comes from."""
    location = corpus_location(corpus)
    where = (
        f"absent; `{DOWNLOAD_COMMAND} {corpus.name}` puts it in {cache_folder(corpus)}"
        if location is None
        else f"present {PLACE_NAMES[location.place]}: {location.folder}"
    )
    return (
        f"{corpus.name} {corpus.version} ({corpus.licence}, {corpus.size / 1e6:.1f} MB): {where}\n"
        f"  {corpus.title}, for {corpus.purpose}; from {corpus.homepage}"
    )
