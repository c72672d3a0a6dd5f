"""Stored results as tidy pandas DataFrames, for notebooks and any tool that reads Parquet or CSV.

Every result of the harness sits in nested JSON (each run's ``summary.json``, each study's
``study.json``); these functions read it back, never recomputing or loading a model, as long
tables with one value per row, so that a groupby or a pivot answers a question across
tasks, seeds, checkpoints, layers and heads::

    from harness.present.frames import load_runs, load_study, load_findings

    runs = load_runs("outputs")  # every run folder under outputs/ (or a run folder, or a list of them)
    cosine = runs[(runs.metric == "cosine") & runs.layer.notna() & runs["head"].isna()]
    cosine.pivot_table(index="layer", columns="task", values="value")  # mean over seeds
    study = load_study("tiny", "outputs")  # outputs/studies/tiny/study.json: mean, std, min, max, n
    findings = load_findings("tiny", "outputs")  # one row per finding and task: holds on how many seeds

`load_runs` gives the columns of `RUN_COLUMNS`: ``task``, ``model`` (a local folder by its
name), ``seed``, ``run`` (the run's key: its folder is ``<task>-<model>-seed<seed>-<key[:8]>``),
``analysis``, ``checkpoint`` (``pretrained``, ``finetuned``, a baseline) or ``pair``
(``pretrained->finetuned``: a comparison; one of the two is always missing), ``metric``,
``layer`` and ``head`` (1-based, missing where the value is not per layer or per head; write
``runs["head"]``, as ``runs.head`` is the DataFrame's method), ``value`` and ``step`` (the
training step of a point of a ``--trajectory`` run; missing on the rows of the run's final
models). Three kinds of rows:

- every scalar metric of the run, named as MLflow and a study name it (``cosine_mean``,
  ``pattern_finetuned_vertical``, ``dev_accuracy_change``), with the checkpoint or pair its
  record (`harness.views.metrics.Metric`) is of (a fine-tuned minus pre-trained ``change`` is
  the pair ``pretrained->finetuned``; a reference such as the majority class is neither) and
  its layer where it is one layer's (``cosine_layer_2``);
- every per-layer and per-head array an analysis stored per checkpoint or per pair (the
  cosine per layer and head, surface statistics, sinks, vig, features, gradients, coreference
  and probe heads, the ablation's deltas, intervals, p-values and importance): ``metric`` is
  the array's path in the stored result without ``per_head``/``per_layer`` (``entropy``,
  ``sink_share.cls``, ``zero.delta``; the analysis's name where nothing is left, as the
  cosine's), so that a statistic's per-head and per-layer rows share one name; the pattern
  classifier's maps per head and class are ``counts.<class>``. Nulls in the store (a head
  with no mention of a type) are left out, as MLflow's metrics leave them out. Not in the
  table: arrays of another shape (the syntax heads per direction and relation, the
  clustering's JS divergences and MDS, the examples' maps, pruning curves) and labels;
- with ``--trajectory``, every scalar metric measured at each kept step, with its ``step``, on
  the record of the run's metric of that name (the checkpoint kept at the step stands where the
  fine-tuned model stands; ``runs[runs.step.notna()]`` is the trajectory), and the cosine of
  each step's maps to the final model's as ``to_final.cosine_layer_<l>`` on the pair
  ``<step>->finetuned``.

`load_study` gives `STUDY_COLUMNS`: per study task and metric, the mean, standard deviation,
minimum, maximum and number of seeds the study stored (its analysis, checkpoint and pair from
its record in a stored run of the task); `load_findings` gives
`FINDING_COLUMNS`: per finding, task and seed, its state and evidence (the change and its 95%
interval over the sampled units, or a claim's share of resamples), on how many of the task's
seeds it is clear, and the paper beside it (``paper``, ``paper_says``, ``paper_verdict``). ``harness
export`` writes all three as Parquet and CSV (`export_tables`); read a CSV back with the
same types with ``pd.read_csv(path, dtype=RUN_COLUMNS)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from os import PathLike
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd

from harness.config import ExportConfig
from harness.results.checkpoints import FINETUNED
from harness.results.entries import AnyEntry
from harness.results.run_record import RunSummary
from harness.results.store import JsonObject, ensure_writable
from harness.results.study_record import StudyRecord
from harness.results.summary import STUDIES, SUMMARY, checked_study, checked_summary, whole_summary
from harness.views.base import ViewClass, current_entries, pair_name
from harness.views.metrics import Metric
from harness.views.summary import summary_records
from harness.views.titles import model_title
from harness.views.trajectory import TO_FINAL
from tasks.errors import InputError
from tasks.files import atomic_path, atomic_write_text

Where = str | PathLike[str]
# Each table's columns and their pandas types: strings and whole numbers that can be missing.
RUN_COLUMNS = {
    "task": "string",
    "model": "string",
    "seed": "Int64",
    "run": "string",
    "analysis": "string",
    "checkpoint": "string",
    "pair": "string",
    "metric": "string",
    "layer": "Int64",
    "head": "Int64",
    "value": "float64",
    "step": "Int64",
}
STUDY_COLUMNS = {
    "study": "string",
    "model": "string",
    "task": "string",
    "analysis": "string",
    "checkpoint": "string",
    "pair": "string",
    "metric": "string",
    "mean": "float64",
    "std": "float64",
    "min": "float64",
    "max": "float64",
    "n": "Int64",
}
FINDING_COLUMNS = {
    "study": "string",
    "finding": "string",
    "claim": "string",
    "task": "string",
    "seed": "Int64",
    "state": "string",
    "clear": "boolean",
    "value": "Float64",
    "low": "Float64",
    "high": "Float64",
    "support": "Float64",
    "unit": "string",
    "n": "Int64",
    "holds": "Int64",
    "seeds": "Int64",
    "paper": "string",
    "paper_says": "string",
    "paper_verdict": "string",
}
LAYER_KEYS = {"per_layer", "layers"}  # keys that only say the level: one value per layer, or a grid per head
LEVEL_KEYS = {"per_head", "heads", *LAYER_KEYS}  # dropped from names


def load_runs(where: Where | Iterable[Where] = "outputs") -> pd.DataFrame:
    """The runs at ``where`` as one tidy table (`RUN_COLUMNS`): a run folder, a folder of run
    folders (every one whose summary.json is whole: failed runs are passed over), or a list of
    either. One line (`InputError`) when a folder is missing or nothing is stored."""
    places = [where] if isinstance(where, (str, PathLike)) else list(where)
    summaries = [summary for place in places for summary in run_summaries(Path(place))]
    if not summaries:
        raise InputError(
            f"nothing stored in {', '.join(map(str, places)) or 'no folder'}: "
            "run `harness run` or `harness study` first"
        )
    return table([row for summary in summaries for row in run_rows(summary)], RUN_COLUMNS)


def load_study(study: Where, output_dir: Where = "outputs") -> pd.DataFrame:
    """A study's metrics over seeds (`STUDY_COLUMNS`), one row per task and metric; ``study``
    is its folder or its name under ``<output_dir>/studies``. The analysis, checkpoint and pair
    of each metric are its record's in one stored run of its task (missing when none of the
    study's runs is there)."""
    folder = study_folder(study, Path(output_dir))
    stored = checked_study(folder)
    records = metric_records(folder, stored)
    return table(
        [
            (
                stored["name"],
                model_title(stored["model"]),
                task,
                *study_placement(records.get(metric)),
                metric,
                spread["mean"],
                spread["std"],
                spread["min"],
                spread["max"],
                spread["n"],
            )
            for task, aggregate in stored["tasks"].items()
            for metric, spread in aggregate["metrics"].items()
        ],
        STUDY_COLUMNS,
    )


def load_findings(study: Where, output_dir: Where = "outputs") -> pd.DataFrame:
    """A study's findings (`FINDING_COLUMNS`), one row per finding, task and seed: the seed's
    state (holds, fails, unclear; or rises, falls, no clear change), whether it is clearly the
    finding's way, its evidence (the change and its 95% interval over ``n`` sampled ``unit``s,
    or the share of resamples a claim held on), on how many of the task's seeds the finding is
    clear, and the paper beside it (its source, what it found, the study's verdict; missing where
    no paper measured it)."""
    stored = checked_study(study_folder(study, Path(output_dir)))
    return table(
        [
            (
                stored["name"],
                finding,
                found["claim"],
                task,
                record["seed"],
                record["state"],
                record["state"] == cell.get("holds_as", found.get("holds_as", "holds")),
                record.get("value"),
                *(record.get("interval") or (None, None)),
                record.get("support"),
                record.get("unit"),
                record.get("n"),
                cell["holds"],
                cell["seeds"],
                *(
                    (paper["source"], paper["says"], paper["verdict"])
                    if (paper := found.get("paper"))
                    else (None, None, None)
                ),
            )
            for finding, found in stored.get("findings", {}).items()
            for task, cell in found["per_task"].items()
            for record in cell.get("per_seed", [])
        ],
        FINDING_COLUMNS,
    )


TableRow = tuple[Any, ...]  # a table's row: each column its own type (text, numbers, None)


def table(rows: list[TableRow], columns: dict[str, str]) -> pd.DataFrame:
    """``rows`` as a DataFrame with ``columns``' names and types (None becomes missing)."""
    return pd.DataFrame(rows, columns=list(columns), dtype=object).astype(columns)


def run_summaries(place: Path) -> list[RunSummary]:
    """The whole summary of the run folder ``place``, or those of the run folders in it."""
    if (place / SUMMARY).is_file():
        return [whole_summary(place)]
    if not place.is_dir():
        raise InputError(f"{place}: no such folder; give a run folder or the folder of runs (--output-dir)")
    found = (checked_summary(path) for path in sorted(place.glob(f"*/{SUMMARY}")))
    return [summary for summary in found if summary is not None]


def run_rows(summary: RunSummary) -> Iterator[TableRow]:
    """The rows of one run: its identity, then each analysis's scalar metrics and arrays."""
    run = summary["run"]
    identity = (run["task"], model_title(run["model"]), run["seed"], run["key"])
    shape = (run["num_layers"], run["num_heads"])
    for metric in summary_records(summary):
        yield (
            *identity,
            metric.analysis,
            metric.checkpoint,
            pair_of(metric),
            metric.name,
            metric.layer,
            None,
            metric.value,
            None,
        )
    for analysis, (view, entry) in current_entries(summary).items():
        for checkpoint, pair, metric, layer, head, value in entry_arrays(view, entry, shape):
            yield *identity, analysis, checkpoint, pair, metric, layer, head, value, None
    yield from trajectory_rows(summary, identity)


def trajectory_rows(summary: RunSummary, identity: TableRow) -> Iterator[TableRow]:
    """A ``--trajectory`` run's metrics at each kept step, each on the record of the run's metric
    of that name (a point is measured as a run is), and each step's cosine to the final maps."""
    records = {metric.name: metric for metric in summary_records(summary)}
    trajectory = summary.get("trajectory")
    for point in trajectory.get("points", []) if trajectory else []:  # its metrics and its cosine to the final maps
        step = point["step"]
        for name, value in point["metrics"].items():
            metric = records.get(name)
            placed = (
                (None, None, None, None)
                if metric is None
                else (metric.analysis, metric.checkpoint, pair_of(metric), metric.layer)
            )
            yield *identity, *placed[:3], name, placed[3], None, value, step
        for name, value in point[TO_FINAL].items():  # of a view that says to_final: the run's metric of that name
            analysis = records[name].analysis if name in records else None
            yield *identity, analysis, None, f"step-{step}->{FINETUNED}", f"{TO_FINAL}.{name}", None, None, value, step


def pair_of(metric: Metric) -> str | None:
    """The name of the pair a metric is of (``pretrained->finetuned``), or None."""
    return None if metric.pair is None else pair_name(metric.pair)


def study_placement(metric: Metric | None) -> tuple[str | None, str | None, str | None]:
    """(analysis, checkpoint, pair) of a study's metric from its record, all missing without one."""
    return (None, None, None) if metric is None else (metric.analysis, metric.checkpoint, pair_of(metric))


def entry_arrays(view: ViewClass, entry: AnyEntry, shape: tuple[int, int]) -> Iterator[TableRow]:
    """(checkpoint, pair, metric, layer, head, value) of every per-layer and per-head value an
    analysis stored per checkpoint and per pair."""
    result = entry["result"]
    for checkpoint, stored in result.get("per_checkpoint", {}).items():
        for metric, layer, head, value in arrays(view, stored, shape):
            yield checkpoint, None, metric, layer, head, value
    for pair, stored in result.get("per_pair", {}).items():
        for metric, layer, head, value in arrays(view, stored, shape):
            yield None, pair, metric, layer, head, value


def arrays(view: ViewClass, stored: JsonObject, shape: tuple[int, int]) -> Iterator[tuple[str, int, int | None, float]]:
    """(metric, layer, head, value) of a checkpoint's or pair's result: each layers x heads grid
    of numbers anywhere in it, each list of one number per layer under a per-layer key, and each
    part of the lists per head that the view names (`View.per_head_parts`: the pattern
    classifier's maps of each class)."""
    for path, node in leaves(stored, ()):
        metric = array_metric(path, view)
        if is_grid(node, shape):
            yield from ((metric, layer, head, value) for layer, head, value in cells(node) if value is not None)
        elif is_per_layer(path, view) and is_numbers(node, shape[0]):
            yield from ((metric, layer, None, value) for layer, value in enumerate(node, 1) if value is not None)
        elif path[-1] in view.per_head_parts:
            parts = view.per_head_parts[path[-1]]
            yield from (
                (parts[index], layer, head, count)
                for layer, head, counts in cells(node)
                for index, count in enumerate(counts)
            )


def leaves(node: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:  # Any: a result, any view's
    """Every value under nested dicts that is not itself a dict, with the keys leading to it."""
    if isinstance(node, dict):
        for key, inner in node.items():
            yield from leaves(inner, (*path, str(key)))
    elif path:
        yield path, node


Cell = TypeVar("Cell")  # a grid's value: a number, None, or a list of counts


def cells(grid: list[list[Cell]]) -> Iterator[tuple[int, int, Cell]]:
    """(layer, head, value) of a layers x heads grid, 1-based."""
    return ((layer, head, value) for layer, row in enumerate(grid, 1) for head, value in enumerate(row, 1))


def is_numbers(node: object, length: int) -> bool:
    """Whether ``node`` is a list of ``length`` numbers (None allowed, booleans not)."""
    return (
        isinstance(node, list)
        and len(node) == length
        and all(value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)) for value in node)
    )


def is_grid(node: object, shape: tuple[int, int]) -> bool:
    """Whether ``node`` is a layers x heads grid of numbers."""
    return isinstance(node, list) and len(node) == shape[0] and all(is_numbers(row, shape[1]) for row in node)


def is_per_layer(path: tuple[str, ...], view: ViewClass) -> bool:
    """Whether the keys leading to a list say it holds one value per layer (`LAYER_KEYS`, or one of the
    view's ``per_layer_keys``)."""
    return any(key in LAYER_KEYS or key in view.per_layer_keys for key in path)


def array_metric(path: tuple[str, ...], view: ViewClass) -> str:
    """An array's metric name: its path without the keys that only say per head or per layer
    (``per_head.sink_share.cls`` -> ``sink_share.cls``, ``heads.zero.delta`` -> ``zero.delta``), a key
    that says its level as the view names its value (``accuracy_per_head.all`` -> ``accuracy.all``:
    ``per_head_keys``, ``per_layer_keys``); the analysis's name where nothing is left (the cosine's
    ``per_head``)."""
    named = view.per_head_keys | view.per_layer_keys
    return ".".join(named.get(key, key) for key in path if key not in LEVEL_KEYS) or view.name


def study_folder(study: Where, output_dir: Path) -> Path:
    """The folder of the study ``study`` names: a folder, or a name under ``<output_dir>/studies``."""
    studies = output_dir / STUDIES
    for folder in (Path(study), studies / study):
        if (folder / "study.json").is_file():
            return folder
    known = ", ".join(sorted(path.parent.name for path in studies.glob("*/study.json"))) or "none"
    raise InputError(f"study {study}: no study.json there nor in {studies / study} (studies under {studies}: {known})")


def study_run_folders(folder: Path, stored: StudyRecord) -> list[Path]:
    """The folders of a study's runs (under the output folder that holds ``studies/<name>``)."""
    return [folder.parent.parent / run["folder"] for run in stored["runs"]]


def metric_records(folder: Path, stored: StudyRecord) -> dict[str, Metric]:
    """``{name: record}`` of the metrics of the first whole summary of each task among the study's runs."""
    found: dict[str, Metric] = {}
    for task in stored["tasks"]:
        summaries = (
            checked_summary(run / SUMMARY)
            for run in study_run_folders(folder, stored)
            if run.name.startswith(f"{task}-")
        )
        summary = next((summary for summary in summaries if summary is not None), None)
        if summary is not None:
            found |= {metric.name: metric for metric in summary_records(summary)}
    return found


def export_tables(settings: ExportConfig, output_dir: Path) -> list[Path]:
    """Write the runs (and with ``--study`` the study's metrics and findings) as Parquet and CSV
    into ``settings.out``; the files written. The runs are ``--runs``, else the study's runs,
    else every run under ``output_dir``."""
    if not output_dir.is_dir():
        raise InputError(
            f"--output-dir {output_dir}: no such folder; run `harness run` or `harness study` first, "
            "or give the folder they wrote"
        )
    study = study_folder(settings.study, output_dir) if settings.study else None
    tables = {"runs": load_runs(exported_runs(settings, study, output_dir))}
    if study is not None:
        tables |= {"study": load_study(study), "findings": load_findings(study)}
    out = settings.out_under(output_dir)
    ensure_writable(out, "--out")
    return [path for stem, frame in tables.items() for path in write_table(frame, out / stem)]


def exported_runs(settings: ExportConfig, study: Path | None, output_dir: Path) -> list[Path]:
    """What ``harness export`` reads runs from: ``--runs``, else the study's runs that finished,
    else the output folder (every run in it)."""
    if settings.runs:
        return [run_folder(name, output_dir) for name in settings.runs]
    if study is not None:
        return [path for path in study_run_folders(study, checked_study(study)) if (path / SUMMARY).is_file()]
    return [output_dir]


def run_folder(name: str, output_dir: Path) -> Path:
    """The run folder ``--runs`` names: a folder, or a folder's name under the output folder."""
    for folder in (Path(name), output_dir / name):
        if (folder / SUMMARY).is_file():
            return folder
    known = ", ".join(sorted(path.parent.name for path in output_dir.glob(f"*/{SUMMARY}"))) or "none"
    raise InputError(f"--runs {name}: no {SUMMARY} there nor in {output_dir / name} (runs under {output_dir}: {known})")


def write_table(frame: pd.DataFrame, stem: Path) -> list[Path]:
    """``frame`` as ``<stem>.parquet`` and ``<stem>.csv``, each written whole or not at all."""
    parquet, csv = stem.with_suffix(".parquet"), stem.with_suffix(".csv")
    with atomic_path(parquet) as temporary:
        frame.to_parquet(temporary, index=False)
    atomic_write_text(csv, frame.to_csv(index=False))
    return [parquet, csv]
