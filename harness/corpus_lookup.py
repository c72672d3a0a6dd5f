"""Where the harness finds a pinned default corpus (`tasks.corpora`) when no flag names other
data: the data cache, else the development copy ``../shared/data`` beside a checkout
(`SHARED_DATA`); `harness.run.plan` downloads what neither holds."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from tasks.corpora import Corpus, Location, find
from tasks.spec import Task


def development_data() -> Path | None:
    """The development copy of the default corpora, ``../shared/data`` beside a checkout of the
    harness (a folder with ``pyproject.toml``), looked up after the data cache and before a
    download (`default_corpus_path`); None for an installed package, which never looks beside
    its site-packages."""
    checkout = Path(__file__).resolve().parents[1]
    return checkout.parent / "shared" / "data" if (checkout / "pyproject.toml").is_file() else None


SHARED_DATA = development_data()


def corpus_location(corpus: Corpus) -> Location | None:
    """Where ``corpus`` is found without a flag: the data cache, else ../shared/data (`SHARED_DATA`,
    beside a checkout); None when neither holds it (nothing is downloaded here)."""
    return find(corpus, SHARED_DATA)


def looked_in() -> str:
    """Where a corpus is looked for without a flag, in words: ``in the data cache or ../shared/data``."""
    return "in the data cache" + (" or ../shared/data" if SHARED_DATA is not None else "")


def default_corpus_path(corpus: Corpus) -> Path | None:
    """What the readers take of ``corpus`` when no flag names other data (`corpus_location`), or None."""
    location = corpus_location(corpus)
    return location.entry if location else None


def in_corpus_folder(task: Task, folder: Path) -> Task:
    """``task`` (a spec naming its ``data_files`` in a pinned corpus: ``corpus`` in its spec) with
    those files in ``folder``, where the corpus is found."""
    files = tuple((split, tuple(str(folder / name) for name in names)) for split, names in task.data_files)
    return replace(task, data_files=files)
