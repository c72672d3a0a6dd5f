"""A task as data: a spec (a TOML or YAML file, or the same keys as flags) names a `datasets`
source, the one or two text fields, the label field and its kind, the metrics and the splits.

GLUE's nine tasks are nine such specs shipped in ``tasks/specs``; theirs add a ``[glue]`` table,
the layout of the GLUE download script's TSV folder, which ``--data-dir`` reads instead of the hub.
A user's spec reads its data through `datasets` (`tasks.dataset_source`): a hub id (and config),
a local folder, or local CSV / TSV / JSONL / Parquet files by split.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tasks.errors import InputError, clipped
from tasks.files import name_problem
from tasks.settings_files import SettingsError, parsed, settings_text

CLASSES, SCORE, TAGS = "classes", "score", "tags"  # a class per input, a number per input, a class per word
LABEL_KINDS = (CLASSES, SCORE, TAGS)
# the metrics a spec may declare, by the label kind they score; two-class ones score class 1
METRICS_BY_KIND = {
    CLASSES: ("accuracy", "macro_f1", "f1", "matthews"),
    SCORE: ("pearson", "spearman"),
    TAGS: ("accuracy", "macro_f1"),  # over the words, each scored at its first sub-token
}
TWO_CLASS_METRICS = ("f1", "matthews")
DEFAULT_METRICS = {CLASSES: ("accuracy", "macro_f1"), SCORE: ("pearson", "spearman"), TAGS: ("accuracy",)}
CONLLU = "conllu"  # a treebank's words and their tags (`tasks.treebank`), the one format of word tags
FORMATS = {".csv": "csv", ".tsv": "tsv", ".json": "json", ".jsonl": "json", ".parquet": "parquet", ".conllu": CONLLU}
SPEC_SUFFIXES = (".toml", ".yaml", ".yml")
MISSING_LABELS = ("error", "drop")  # what a spec's missing_labels takes: the default first
SPEC_MAX_BYTES = 1 << 20  # a spec is a few hundred bytes; read no more of a file given in its place
SPEC_HOLDS = "a task spec is a few lines of keys"
DEFAULT_EVAL_SPLIT = "validation"  # `datasets`' name for a dev split (a local ``dev.csv`` becomes it too)


@dataclass(frozen=True)
class GlueLayout:
    """Where a GLUE task's TSV files keep its fields: ``columns`` are header names (integer
    positions for header-less CoLA) of (text, second text or None, label); ``values`` the labels
    as written in the files, in the order of the task's labels (none for a score)."""

    folder: str
    columns: tuple[str | int, str | int | None, str | int]
    values: tuple[str, ...] = ()
    header: bool = True


@dataclass(frozen=True)
class Task:
    """What a run fine-tunes on and how it is scored.

    ``dataset``: a hub id or local folder `datasets.load_dataset` reads, or a format ("csv",
    "tsv", "json", "parquet") for ``data_files`` (split -> files). ``label_names``: the classes
    in the order of the model's outputs (a spec may leave them to its training split:
    `tasks.dataset_source`). Split names are the dataset's own, but GLUE's, which keep its
    files' names ("dev", "dev_matched")."""

    name: str
    text_fields: tuple[str, str | None]
    label_names: tuple[str, ...]
    metrics: tuple[str, ...]
    dataset: str
    config: str | None = None
    data_files: tuple[tuple[str, tuple[str, ...]], ...] = ()
    label_field: str = "label"
    label_kind: str = CLASSES
    train_split: str = "train"
    eval_splits: tuple[str, ...] = (DEFAULT_EVAL_SPLIT,)
    glue: GlueLayout | None = None
    corpus: str | None = None  # a pinned corpus of the harness (`tasks.corpora`) whose folder data_files are in
    missing_labels: str | None = None  # "drop": rows without a label are left out (counted); else each is an error
    source: str = field(default="", compare=False)  # the spec file or flags it came from, for errors
    data_outside: bool = field(default=False, compare=False)  # the spec reads data outside its folder (not a key)

    @property
    def is_regression(self) -> bool:
        """Whether the task is scored as regression (a score: STS-B)."""
        return self.label_kind == SCORE

    @property
    def is_tagging(self) -> bool:
        """Whether each word is labelled (a class per word, scored at its first sub-token: UPOS)."""
        return self.label_kind == TAGS

    @property
    def num_labels(self) -> int:
        """Outputs of the classification head: 1 for regression, else one per label."""
        return 1 if self.is_regression else len(self.label_names)

    @property
    def is_local(self) -> bool:
        """Whether the task's data are files on this machine read through `datasets` (a spec's
        ``data_files`` or a local folder): not GLUE's, a pinned corpus's or the hub's."""
        return self.glue is None and self.corpus is None and (bool(self.data_files) or Path(self.dataset).is_dir())

    @property
    def is_pair(self) -> bool:
        """Whether an example is a pair of texts (the task has a second text field)."""
        return self.text_fields[1] is not None

    @property
    def main_eval_split(self) -> str:
        """The evaluation split the main dev metric is read from: the first of ``eval_splits``."""
        return self.eval_splits[0]

    @property
    def title(self) -> str:
        """The task's name in tables and figures: GLUE's folder ("RTE"), else its name."""
        return self.glue.folder if self.glue else self.name

    def as_spec(self) -> dict[str, Any]:  # Any: JSON of the spec's fields, each its own type
        """The task as the keys of a spec (JSON-ready, files as written): what a run stores and keys on."""
        spec = {name: value for name, value in asdict(self).items() if name not in ("source", "data_outside")}
        spec["text_fields"] = [name for name in self.text_fields if name is not None]
        spec["labels"] = list(spec.pop("label_names"))
        spec["data_files"] = {split: list(files) for split, files in self.data_files}
        return {name: value for name, value in spec.items() if value not in (None, {}, ())}


SPEC_KEYS = {
    "name": "the task's name (default: the spec file's name)",
    "dataset": "a hub id or local folder, or csv/tsv/json/parquet for data_files",
    "config": "the hub dataset's configuration",
    "data_files": "local files: one path, a list, or a table of split = path(s)",
    "text_fields": "one or two text columns",
    "label_field": "the label column (default: label)",
    "label_kind": "classes, score, or tags: a class per word of a CoNLL-U treebank (default: classes)",
    "labels": "the classes in order (default: the training split's values, sorted)",
    "metrics": "what dev is scored by (default: accuracy, macro_f1 for classes; pearson, spearman for a score; "
    "accuracy for tags)",
    "train_split": "the split fine-tuned on (default: train)",
    "eval_splits": f"the splits scored (default: {DEFAULT_EVAL_SPLIT}); the first is the main one",
    "missing_labels": "error: a row without a label (empty, None, NaN) is an error naming it; drop: such rows are "
    "left out, counted (default: error)",
    "data_outside": "true: data_files (and a dataset folder) may lie outside the spec's folder (default: false)",
    "glue": "the GLUE TSV folder's layout (shipped GLUE specs)",
    "corpus": "a corpus of the harness (`harness data list`) whose folder data_files are in",
}
SHIPPED_ONLY = ("glue", "corpus")  # keys of the shipped specs (GLUE's TSV layout, a pinned corpus), not a user's
USER_KEYS = tuple(key for key in SPEC_KEYS if key not in SHIPPED_ONLY)  # what the README's table documents
GLUE_KEYS = ("folder", "columns", "values", "header")
FLAG_SOURCE = "--dataset"  # the ``source`` of a task the flags define, in errors
# The flag that sets each key when --dataset defines the task (`harness.config.TaskConfig`'s fields):
# an error about a task of flags names the flag the user typed, not the spec key.
KEY_FLAGS = {
    "dataset": "--dataset",
    "config": "--dataset-config",
    "text_fields": "--text-fields",
    "label_field": "--label-field",
    "label_kind": "--label-kind",
    "train_split": "--train-split",
    "eval_splits": "--eval-split",
}


def named(key: str, source: str) -> str:
    """A spec key as the user wrote it: its flag where the flags define the task (``source`` is
    `FLAG_SOURCE`), else the key."""
    return KEY_FLAGS.get(key, key) if source == FLAG_SOURCE else key


def unknown_key(key: str, source: str) -> InputError:
    """One line for a key the spec does not take: the closest key, and the keys it takes."""
    close = difflib.get_close_matches(key, SPEC_KEYS, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return InputError(f"{source}: unknown key {key!r} in the task spec{hint}; the keys: {', '.join(USER_KEYS)}")


def read_spec(path: Path) -> Task:
    """The task a spec file describes (TOML or YAML), its data files relative to its folder."""
    try:
        values = parsed(settings_text(path, SPEC_MAX_BYTES, SPEC_HOLDS), "toml" if path.suffix == ".toml" else "yaml")
    except OSError as error:
        raise InputError(f"{path}: cannot read the task spec ({error.strerror}); check the path") from error
    except SettingsError as error:  # bytes or nesting no spec has, or its syntax
        if error.syntax is not None:
            raise InputError(
                f"{path}: not a valid {path.suffix[1:].upper()} task spec ({error.syntax}); fix its syntax"
            ) from error
        raise InputError(f"{path}{f':{error.line}' if error.line else ''}: {error.problem}") from None
    if not isinstance(values, Mapping):
        raise InputError(
            f"{path}: a task spec is a table of keys ({', '.join(USER_KEYS)}); found {type(values).__name__}"
        )
    return task_from_spec({"name": path.stem, **values}, str(path), path.parent)


def task_from_spec(values: Mapping[str, Any], source: str, folder: Path | None = None) -> Task:
    """A `Task` from a spec's keys (Any: as a TOML or JSON file or the flags give them, each checked
    here); ``source`` (the file, or the flags) names it in errors, relative data files are found
    from ``folder``. Labels not given are left to the data."""
    unknown = sorted(set(values) - set(SPEC_KEYS))
    if unknown:
        raise unknown_key(unknown[0], source)
    kind = text(values, "label_kind", source, CLASSES)
    if kind not in LABEL_KINDS:
        raise InputError(f"{source}: label_kind {kind!r} is not one of {', '.join(LABEL_KINDS)}")
    labels = strings(values, "labels", source, ())
    if labels and kind == SCORE:
        raise InputError(f"{source}: labels are for label_kind = classes; a score has none (drop labels)")
    fields = strings(values, "text_fields", source, None)
    if not 1 <= len(fields) <= 2:
        raise InputError(f"{source}: {named('text_fields', source)} names one or two text columns, not {len(fields)}")
    corpus = text(values, "corpus", source, None)
    files = data_files(values.get("data_files"), source, None if corpus else folder)
    dataset = text(values, "dataset", source, None)
    if dataset is None and files:  # the format from the files' suffix, unless the spec names it
        dataset = data_format(files, source)
    outside = values.get("data_outside", False)
    if not isinstance(outside, bool):
        raise InputError(f"{source}: data_outside is {clipped(repr(outside))}, not true or false")
    if folder is not None and not corpus and not outside:
        check_inside(files, dataset, source, folder)
    missing = text(values, "missing_labels", source, None)
    if missing not in (None, *MISSING_LABELS):
        raise InputError(f"{source}: missing_labels {clipped(repr(missing))} is not one of {', '.join(MISSING_LABELS)}")
    if dataset is None:
        raise InputError(f"{source}: the task spec names no data: give dataset (a hub id or folder) or data_files")
    metrics = strings(values, "metrics", source, DEFAULT_METRICS[kind])
    name = text(values, "name", source, None)
    if (problem := name_problem(name)) is not None:  # it names the run's folder and its checkpoint's
        raise InputError(f"{source}: name {clipped(repr(name))} {problem}; give the task one plain name")
    task = Task(
        name=name,
        text_fields=(fields[0], fields[1] if len(fields) > 1 else None),
        label_names=labels,
        metrics=metrics,
        dataset=dataset,
        config=text(values, "config", source, None),
        data_files=files,
        label_field=text(values, "label_field", source, "label"),
        label_kind=kind,
        train_split=text(values, "train_split", source, "train"),
        eval_splits=strings(values, "eval_splits", source, (DEFAULT_EVAL_SPLIT,)),
        glue=glue_layout(values.get("glue"), source),
        corpus=corpus,
        missing_labels=None if missing == MISSING_LABELS[0] else missing,  # the default leaves the key as it was
        source=source,
        data_outside=outside,
    )
    check_metrics(task, kind)
    if (kind == TAGS) != (task.dataset == CONLLU):
        raise InputError(f"{source}: word tags come from CoNLL-U files (.conllu data_files) with label_kind = tags")
    return task


def check_metrics(task: Task, kind: str) -> None:
    """Every metric known and fit for the label kind (and two classes, where it scores class 1)."""
    for metric in task.metrics:
        if metric not in METRICS_BY_KIND[kind]:
            raise InputError(
                f"{task.source}: metric {metric!r} does not score {kind}; "
                f"choose from {', '.join(METRICS_BY_KIND[kind])}"
            )
        if metric in TWO_CLASS_METRICS and task.label_names and len(task.label_names) != 2:
            raise InputError(
                f"{task.source}: metric {metric!r} scores two classes, and the task has {len(task.label_names)}; "
                "use macro_f1 or accuracy"
            )


def text(values: Mapping[str, Any], key: str, source: str, default: Any) -> Any:  # Any: a string, or the default given
    """A string key of the spec, or ``default`` when absent (the name has none: it is required)."""
    value = values.get(key, default)
    if value is None and key == "name":
        raise InputError(f'{source}: the task spec has no name; add name = "..."')
    if value is not None and not isinstance(value, str):
        raise InputError(f"{source}: {key} is {clipped(repr(value))}, not a string")
    return value


# Any: a spec's keys as a TOML or JSON file or the flags give them (as `task_from_spec`'s)
def strings(values: Mapping[str, Any], key: str, source: str, default: tuple[str, ...] | None) -> tuple[str, ...]:
    """A key holding one string or a list of strings (a label may be written as a number)."""
    value = values.get(key, default)
    if value is None:
        raise InputError(f"{source}: the task spec has no {key} ({SPEC_KEYS[key]})")
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(item, (str, int, float)) for item in items):
        raise InputError(f"{source}: {key} is {clipped(repr(value))}, not a list of strings")
    return tuple(str(item) for item in items)


def data_files(value: object, source: str, folder: Path | None) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``data_files`` as (split, files) pairs, relative paths made absolute from ``folder``: one
    path or a list is the training split's (`datasets`' own rule)."""
    if value is None:
        return ()
    by_split = value if isinstance(value, Mapping) else {"train": value}
    pairs = []
    for split, files in by_split.items():
        listed = [files] if isinstance(files, str) else files
        if not isinstance(listed, list) or not listed or not all(isinstance(item, str) for item in listed):
            raise InputError(
                f"{source}: data_files for {split!r} is {clipped(repr(files))}, not a path or a list of paths"
            )
        paths = [Path(item).expanduser() for item in listed]
        pairs.append((str(split), tuple(str(folder / p if folder and not p.is_absolute() else p) for p in paths)))
    return tuple(pairs)


def check_inside(
    files: tuple[tuple[str, tuple[str, ...]], ...], dataset: str | None, source: str, folder: Path
) -> None:
    """Every data file (and a local dataset folder) inside the spec's ``folder``, links followed: a
    spec read from elsewhere reads nothing outside its folder (``../``, an absolute path, a link out)
    unless it says ``data_outside: true``."""
    inside = folder.resolve()
    local = [("dataset", dataset)] if dataset and Path(dataset).expanduser().is_dir() else []
    for split, path in [*((split, path) for split, paths in files for path in paths), *local]:
        resolved = Path(path).expanduser().resolve()
        if not resolved.is_relative_to(inside):
            linked = f" (a link to {clipped(str(resolved))})" if resolved != Path(os.path.abspath(path)) else ""
            raise InputError(
                f"{source}: {'the dataset folder' if split == 'dataset' else f'data file {split!r}'} "
                f"{clipped(path)}{linked} lies outside the spec's folder {folder}; move it beside the spec, or "
                "add data_outside: true to read it from there"
            )


def data_format(files: tuple[tuple[str, tuple[str, ...]], ...], source: str) -> str:
    """The `datasets` loader of ``files`` by their suffix (one kind for all)."""
    suffixes = {Path(path).suffix.lower() for _, paths in files for path in paths}
    kinds = {FORMATS.get(suffix) for suffix in suffixes}
    if len(kinds) != 1 or None in kinds:
        raise InputError(
            f"{source}: data_files of suffixes {', '.join(sorted(suffixes))}: give files of one kind "
            f"({', '.join(FORMATS)}) or name it with dataset = csv, tsv, json or parquet"
        )
    return kinds.pop()  # type: ignore[return-value]


def glue_layout(value: Any, source: str) -> GlueLayout | None:  # Any: the [glue] table as read, checked here
    """The ``[glue]`` table: the TSV folder's layout ("" in ``columns`` for no second text)."""
    if value is None:
        return None
    unknown = sorted(set(value) - set(GLUE_KEYS)) if isinstance(value, Mapping) else ["(not a table)"]
    if unknown:
        raise InputError(f"{source}: unknown key {unknown[0]!r} in glue; the keys: {', '.join(GLUE_KEYS)}")
    first, second, label = value["columns"]
    return GlueLayout(
        folder=value["folder"],
        columns=(first, second if second != "" else None, label),
        values=tuple(value.get("values", ())),
        header=bool(value.get("header", True)),
    )


def is_spec_path(name: str) -> bool:
    """Whether ``--task`` names a spec file rather than a registered task."""
    return Path(name).suffix.lower() in SPEC_SUFFIXES
