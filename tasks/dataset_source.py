"""A spec's data through `datasets`' own loaders and cache: a hub id (and config), a local folder
(its files' names give the splits: ``dev.csv`` is ``validation``), or local CSV / TSV / JSONL /
Parquet files by split. Every problem a run would meet later is one line here: a split that is
missing or empty, a field that is not a column, text that is not a string, one class."""

from __future__ import annotations

import csv
import logging
import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from functools import cache
from numbers import Number
from pathlib import Path
from typing import Any

import datasets
from datasets.data_files import DataFilesDict, get_data_patterns
from huggingface_hub.utils import logging as hub_logging

from tasks.errors import InputError, clipped
from tasks.examples import Example
from tasks.hub import cached_snapshot, first_line
from tasks.spec import FLAG_SOURCE, FORMATS, Task, check_metrics, data_format, named
from tasks.treebank import Sentence, read_treebank

TEXT_TYPES = ("string", "large_string")
log = logging.getLogger(__name__)
SAID: set[tuple[Task, str]] = set()  # the splits whose rows left out were said


def where(task: Task) -> str:
    """The task's data as an error names it: its spec (or flags) and dataset."""
    described = task.dataset if not task.data_files else f"{task.dataset} files"
    return f"{task.source}: {task.name} ({described}{f', config {task.config}' if task.config else ''})"


@cache
def dataset_split(task: Task, split: str) -> datasets.Dataset:
    """One split's rows, read by `datasets` (and kept in its cache, keyed on the files' content)."""
    paths = split_files(task, split) if task.data_files else ()
    try:
        with loading(progress=not paths and not Path(task.dataset).is_dir()):
            if paths:
                builder, options = ("csv", {"delimiter": "\t"}) if task.dataset == "tsv" else (task.dataset, {})
                return datasets.load_dataset(builder, data_files={split: list(paths)}, split=split, **options)
            return hub_split(task, split)
    except ValueError as error:
        message = str(error)
        if "corresponds to no data" in message:
            raise InputError(f"{where(task)}: split {split!r} has no rows; point it at data") from error
        if "Unknown split" in message or "Bad split" in message:
            raise InputError(f"{where(task)}: no split {split!r} ({first_line(error)}); set the split names") from error
        raise InputError(f"{where(task)}: could not read split {split!r} ({first_line(error)}); {fix(task)}") from error
    except Exception as error:  # datasets raises many types for missing files, offline hubs, bad files
        cause = first_line(root_cause(error))  # type: ignore[arg-type]
        raise InputError(f"{where(task)}: could not read split {split!r} ({cause}); {fix(task)}") from error


def split_files(task: Task, split: str) -> tuple[str, ...]:
    """The data files of one split of the spec, or one line naming the splits it has."""
    files = dict(task.data_files)
    if split not in files:
        if task.source == FLAG_SOURCE:  # the folder's files, named by `with_folder_files`
            raise InputError(
                f"{where(task)}: the folder's files give no {split!r} split (they give {', '.join(files)}); "
                "name one with --train-split or --eval-split, or name a file for it (dev.csv is validation)"
            )
        raise InputError(f"{where(task)}: data_files has no {split!r} split (it has {', '.join(files)}); add it")
    return files[split]


def with_folder_files(task: Task) -> Task:
    """A task read from a local folder as the same task naming the folder's data files by split,
    found by `datasets`' own rules (``train.csv`` is train, ``dev.csv`` validation), so that a
    folder given to --dataset and a spec naming its files are one task: one key, one fine-tuning.
    Files of other kinds than data (a spec, a README) are left out."""
    folder = Path(task.dataset)
    if task.data_files or not folder.is_dir():
        return task
    try:
        found = DataFilesDict.from_patterns(get_data_patterns(str(folder)), str(folder))
    except Exception as error:  # datasets' EmptyDatasetError and its kin: nothing it could read
        raise InputError(f"{where(task)}: no data files in the folder ({first_line(error)}); {fix(task)}") from error
    files = tuple(
        (str(split), kept)
        for split, paths in found.items()
        if (kept := tuple(sorted(str(path) for path in paths if Path(str(path)).suffix.lower() in FORMATS)))
    )
    if not files:
        raise InputError(f"{where(task)}: no data files in the folder (of {', '.join(FORMATS)}); {fix(task)}")
    return replace(task, dataset=data_format(files, task.source), data_files=files)


def fix(task: Task) -> str:
    """What to check when a task's data cannot be read."""
    if task.data_files or Path(task.dataset).exists():
        return "check the files"
    return (
        f"no folder {task.dataset!r} here either: check the path, or the hub id; offline, download it "
        f"first (`hf download {task.dataset} --repo-type dataset`)"
    )


def hub_split(task: Task, split: str) -> datasets.Dataset:
    """A hub dataset's (or local folder's) split: online, or offline from the dataset cache an
    earlier load prepared; failing both, from the repository's snapshot in the hub cache (as
    ``hf download --repo-type dataset`` leaves it), which `datasets` reads as the local folder it
    is (its README's configurations, its data files), since offline it does not look there itself."""
    try:
        return datasets.load_dataset(task.dataset, task.config, split=split)
    except Exception as error:  # offline or unreachable: datasets raises many types
        snapshot = None if Path(task.dataset).exists() else cached_snapshot(task.dataset)
        if snapshot is None:
            raise
        try:
            return datasets.load_dataset(str(snapshot), task.config, split=split)
        except Exception:  # the snapshot lacks this split or config: the hub's own error says more
            raise error from None


@contextmanager
def loading(progress: bool) -> Iterator[None]:
    """`datasets` at work within the block: its progress bars shown for a hub download (minutes),
    not for local files (read in a moment: their bars would only be noise); its error log lines
    silenced, and those of `huggingface_hub` it calls (an unreachable hub's warning), so the failure
    reaches the user as one line, `dataset_split`'s."""
    bars_were_off, verbosity = datasets.are_progress_bars_disabled(), datasets.logging.get_verbosity()
    hub_verbosity = hub_logging.get_verbosity()
    if not progress:
        datasets.disable_progress_bars()
    datasets.logging.set_verbosity(datasets.logging.CRITICAL)
    hub_logging.set_verbosity(hub_logging.CRITICAL)
    try:
        yield
    finally:
        datasets.logging.set_verbosity(verbosity)
        hub_logging.set_verbosity(hub_verbosity)
        if not bars_were_off:
            datasets.enable_progress_bars()


def root_cause(error: BaseException) -> BaseException:
    """The first exception of a chain (`datasets` wraps a file's parse error in its own)."""
    while error.__cause__ is not None:
        error = error.__cause__
    return error


def checked_split(task: Task, split: str) -> datasets.Dataset:
    """A split with its fields checked: each a column, the texts strings, at least one row."""
    rows = dataset_split(task, split)
    texts, label, kind = (named(key, task.source) for key in ("text_fields", "label_field", "label_kind"))
    for field in (*(name for name in task.text_fields if name), task.label_field):
        if field not in rows.column_names:
            raise InputError(
                f"{where(task)}: {field!r} is not a column of split {split!r} "
                f"(its columns: {', '.join(rows.column_names)}); fix {texts} or {label}"
            )
    for field in (name for name in task.text_fields if name):
        if kind_of(rows.features[field]) != "text":
            raise InputError(
                f"{where(task)}: text field {field!r} holds {kind_of(rows.features[field])}, not strings; "
                f"name a text column in {texts}"
            )
    if task.is_regression and kind_of(rows.features[task.label_field]) not in NUMBER_TYPES:
        raise InputError(
            f"{where(task)}: label {task.label_field!r} holds {kind_of(rows.features[task.label_field])}, "
            f"not numbers, and {kind} is score; use {kind} classes"
        )
    if not len(rows):
        raise InputError(f"{where(task)}: split {split!r} has no rows; point it at data")
    return rows


def kind_of(feature: Any) -> str:  # Any: a `datasets` feature, of whichever class
    """A column's type as an error names it: "text", "int64", "ClassLabel"..."""
    kind = getattr(feature, "dtype", type(feature).__name__)
    return "text" if kind in TEXT_TYPES else str(kind)


NUMBER_TYPES = tuple(f"{kind}{bits}" for kind in ("int", "uint", "float") for bits in (8, 16, 32, 64)) + ("bool",)


def label_text(value: Any) -> str:  # Any: a cell as `datasets` reads it
    """A label value as the spec's labels write it ("1" for 1 and 1.0, "pos" for "pos")."""
    if isinstance(value, Number) and not isinstance(value, bool) and float(value).is_integer():  # type: ignore[arg-type]
        return str(int(value))  # type: ignore[call-overload]
    return str(value)


def label_texts(rows: datasets.Dataset, field: str) -> list[str]:
    """A class column's values as the spec's labels write them: a `datasets.ClassLabel`'s by
    their names (-1, its "no label", as "-1"), any other's as `label_text`."""
    names = getattr(rows.features[field], "names", None)
    values = rows[field]
    if names:
        return [names[value] if 0 <= value < len(names) else str(value) for value in values]
    return [label_text(value) for value in values]


def sort_key(label: str) -> tuple[int, float, str]:
    """Numbers in numeric order, then words alphabetically."""
    try:
        return (0, float(label), "")
    except ValueError:
        return (1, 0.0, label)


TAG_FIELDS = ("upos", "xpos")  # the columns of a CoNLL-U word a tagging task may be trained to predict


@cache
def tagged_sentences(task: Task, split: str) -> list[Sentence]:
    """A tagging task's sentences of one split (its CoNLL-U files, read once: the training split's
    tags and examples both come from them), checked: the words' form tagged with one of
    `TAG_FIELDS`, and at least one sentence."""
    if task.text_fields != ("form", None) or task.label_field not in TAG_FIELDS:
        raise InputError(
            f'{where(task)}: a CoNLL-U task tags each word\'s form: text_fields = ["form"], label_field one of '
            f"{', '.join(TAG_FIELDS)}"
        )
    sentences = [sentence for path in split_files(task, split) for sentence in read_treebank(path)]
    if not sentences:
        raise InputError(f"{where(task)}: split {split!r} has no sentences; point it at a treebank")
    return sentences


def with_tags(task: Task) -> Task:
    """A tagging task with its tags: the spec's, else those of its training split, sorted."""
    seen = {tag for sentence in tagged_sentences(task, task.train_split) for tag in tags_of(sentence, task)}
    if len(seen) < 2:
        raise InputError(
            f"{where(task)}: {task.label_field} has one tag in split {task.train_split!r}; tagging needs two"
        )
    return task if task.label_names else replace(task, label_names=tuple(sorted(seen)))


def tags_of(sentence: Sentence, task: Task) -> list[str]:
    """The sentence's tags in the spec's column (UPOS or XPOS)."""
    return sentence.upos if task.label_field == "upos" else sentence.xpos


def read_tagged_split(task: Task, split: str) -> list[Example]:
    """A tagging task's sentences as examples: the words, joined as the text, and each one's tag index."""
    classes = {name: index for index, name in enumerate(task.label_names)}
    examples = []
    for index, sentence in enumerate(tagged_sentences(task, split)):
        unknown = [tag for tag in tags_of(sentence, task) if tag not in classes]
        if unknown:
            raise InputError(
                f"{where(task)}: sentence {sentence.sent_id or index + 1} of split {split!r} has the tag "
                f"{clipped(unknown[0])!r}, not one of the task's {len(classes)}; add it to labels"
            )
        examples.append(
            Example(
                guid=f"{task.name}-{split}-{index}",
                text_a=" ".join(sentence.words),
                text_b=None,
                label=0,
                split=split,
                words=tuple(sentence.words),
                tags=tuple(classes[tag] for tag in tags_of(sentence, task)),
            )
        )
    return examples


@cache
def with_labels(task: Task) -> Task:
    """``task`` with its classes: the spec's, else the dataset's class names (a `datasets.ClassLabel`
    column), else its training split's values sorted; at least two seen in training."""
    if task.is_tagging:
        return with_tags(task)
    if task.is_regression:
        split = task.train_split
        without_label(task, split, checked_split(task, split))
        return task
    rows = checked_split(task, task.train_split)
    unlabelled = without_label(task, task.train_split, rows)
    seen = {label for index, label in enumerate(label_texts(rows, task.label_field)) if index not in unlabelled}
    if len(seen) < 2:
        raise InputError(
            f"{where(task)}: label {task.label_field!r} has one class in split {task.train_split!r} "
            f"({clipped(', '.join(sorted(seen)))}); a classifier needs two"
        )
    names = getattr(rows.features[task.label_field], "names", None) or sorted(seen, key=sort_key)
    resolved = task if task.label_names else replace(task, label_names=tuple(names))
    check_metrics(resolved, resolved.label_kind)
    return resolved


def read_dataset_split(task: Task, split: str) -> list[Example]:
    """A split's examples: texts stripped, labels as class indices (of `with_labels`) or scores;
    a tagging task's sentences with their words' tags."""
    if task.is_tagging:
        return read_tagged_split(task, split)
    rows = checked_split(task, split)
    first, second = task.text_fields
    classes = {name: index for index, name in enumerate(task.label_names)}
    labels = rows[task.label_field] if task.is_regression else label_texts(rows, task.label_field)
    unlabelled = without_label(task, split, rows)
    if unlabelled and (task, split) not in SAID:  # once per process: the CLI reads the files before the run
        SAID.add((task, split))
        log.warning(
            "%s: left out %d of the %d rows of split %r that have no label (missing_labels: drop); the first: %s",
            task.name,
            len(unlabelled),
            len(rows),
            split,
            row_place(task, split, min(unlabelled)),
        )
    examples = []
    for index, (row, label) in enumerate(zip(rows, labels)):
        if index in unlabelled:
            continue
        texts = [row[first], row[second] if second else ""]
        if any(value is None for value in (*texts, label)):
            raise InputError(
                f"{where(task)}: {row_place(task, split, index)} has an empty text or label; fill or drop it"
            )
        if not task.is_regression and label not in classes:
            raise InputError(
                f"{where(task)}: {row_place(task, split, index)}: label {clipped(label)!r} is not one of "
                f"{', '.join(task.label_names)}"
            )
        examples.append(
            Example(
                guid=f"{task.name}-{split}-{index}",
                text_a=texts[0].strip(),
                text_b=texts[1].strip() if second else None,
                label=float(label) if task.is_regression else classes[label],
                split=split,
            )
        )
    return examples


def without_label(task: Task, split: str, rows: datasets.Dataset) -> set[int]:
    """The rows of ``split`` that have no label (an empty cell, NaN, null; a `datasets.ClassLabel`'s
    -1): with ``missing_labels: drop`` their indices, to leave out; else one line naming the first,
    as a class "None" or "nan" would otherwise be learned and scored."""
    names = getattr(rows.features[task.label_field], "names", None)
    missing = [index for index, value in enumerate(rows[task.label_field]) if no_label(value, bool(names))]
    if missing and task.missing_labels != "drop":
        more = f" (and {len(missing) - 1} more row{'s' if len(missing) > 2 else ''})" if len(missing) > 1 else ""
        fix = (
            "add missing_labels: drop to the spec"
            if task.source != FLAG_SOURCE
            else "write a spec with missing_labels: drop"
        )
        raise InputError(
            f"{where(task)}: {row_place(task, split, missing[0])} has no label (an empty cell, NaN or null){more}; "
            f"fill it, or {fix} to leave such rows out"
        )
    return set(missing)


def no_label(value: Any, class_label: bool) -> bool:  # Any: a cell as `datasets` reads it
    """Whether a label cell holds nothing: None (an empty CSV cell, "nan", JSON null), a float NaN,
    blank text, or a `datasets.ClassLabel`'s -1 ("no label")."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return True
    return (isinstance(value, str) and not value.strip()) or (class_label and value < 0)


def row_place(task: Task, split: str, index: int) -> str:
    """Where row ``index`` of a split is, as its user finds it: the file and the line it starts on
    (a CSV or TSV record after the header, a JSON line), else its 1-based row number."""
    if task.dataset in ("csv", "tsv", "json"):
        for path in map(Path, split_files(task, split)):
            lines = record_lines(path, task.dataset)
            if lines is None:
                break
            if index < len(lines):
                return f"split {split!r}, {path.name} line {lines[index]}"
            index -= len(lines)
    return f"split {split!r} row {index + 1}"


def record_lines(path: Path, kind: str) -> list[int] | None:
    """The line each record of a data file starts on, as `datasets` reads them (blank lines
    skipped, a quoted field may span lines); None for a JSON file that is not one record a line."""
    with path.open(encoding="utf-8", newline="") as handle:
        if kind == "json":
            lines = [(number, line.lstrip()[:1]) for number, line in enumerate(handle, 1) if line.strip()]
            return None if lines and lines[0][1] == "[" else [number for number, _ in lines]
        reader = csv.reader(handle, delimiter="\t" if kind == "tsv" else ",")
        starts, start = [], 1
        for record in reader:
            if record:
                starts.append(start)
            start = reader.line_num + 1
        return starts[1:]  # the header
