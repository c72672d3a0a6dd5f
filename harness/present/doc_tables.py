"""Results tables in the README and docs, generated from stored runs and studies, never typed
(``harness docs``).

A table in a Markdown file is a block

    <!-- table:NAME run:LABEL -->
    ...generated...
    <!-- /table -->

NAME is an analysis table (a stem of some analysis's `tables`, e.g. ``coreference_table``)
or one of the cross-analysis tables here (``overview``); LABEL names a stored run whose
results are kept in ``docs/results/LABEL.json``: the run's description and its analysis
entries as ``summary.json`` holds them (only the clustering's full distance matrix, which no
table reads, is left out). ``harness docs --run LABEL=RUN_FOLDER`` takes a finished run's
stored results as LABEL's; ``harness docs`` rebuilds every block from them, so the README
and every doc quote one run wherever they name the same LABEL; ``--check`` (and the test
suite) fails when a block differs from what its stored results give. LABEL may name a stored
study instead (``harness docs --study LABEL=STUDY_FOLDER``: its study.json, with its figures
and tables beside it in ``docs/results/LABEL/figures``); NAME is then one of the study's
tables (``findings``, ``dev_scores_by_task``, ``pattern_shares_by_task``, ...).
"""

from __future__ import annotations

import re
import shutil
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from harness.present.study_figures import study_tables
from harness.results.entries import AnyEntry
from harness.results.run_record import Analysed, RunSection, RunSummary
from harness.results.store import JsonObject, key_of, read_json, write_json
from harness.results.study_record import decoded_study
from harness.results.summary import checked_study, whole_summary
from harness.views import VIEWS
from harness.views.base import Row, current_entries
from harness.views.markdown import markdown_table
from harness.views.tokens import model_tokens, own_tokens
from tasks.errors import InputError
from tasks.files import atomic_write_text

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results"
BLOCK = re.compile(r"(<!-- table:(?P<name>[\w-]+) run:(?P<run>[\w.-]+) -->\n)(?P<body>.*?)(<!-- /table -->)", re.S)


def documents(root: Path = ROOT) -> list[Path]:
    """The Markdown files whose table blocks are generated: the README and every doc (of a
    checkout: an installed package has none)."""
    if not (root / "README.md").is_file():
        raise InputError(
            f"{root}: no README.md; `harness docs` rebuilds the tables of a checkout of the harness, "
            "run it from one (`pip install -e .`)"
        )
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


class RunSnapshot(Analysed):
    """A run's results as the docs keep them (``docs/results/LABEL.json``, written by `snapshot`):
    where they came from, the run's description and the entries its tables read."""

    source: dict[str, str]
    run: RunSection


def decoded_snapshot(stored: JsonObject) -> RunSnapshot:
    """A run's stored results read back, typed: `snapshot` is what mypy checks, so the file is taken at its word."""
    return cast(RunSnapshot, stored)


def snapshot(summary: RunSummary, run_folder: Path) -> RunSnapshot:
    """What a run's tables read: its description and the entries of analyses with overview rows
    or tables (and those their rows read), less their heavy parts, and where they came from."""
    entries = current_entries(summary)
    read = {name for name, (view, entry) in entries.items() if view.in_overview() or view.tables(entry, summary["run"])}
    read |= {other for name in read for other in VIEWS[name].overview_reads}
    analyses: dict[str, AnyEntry] = {
        name: {**entry, "result": without(entry["result"], view.left_out)}
        for name, (view, entry) in entries.items()
        if name in read
    }
    return {
        "source": {"run_folder": run_folder.name, "summary_key": key_of(summary, 64)},
        "run": summary["run"],
        "analyses": analyses,
    }


def without(value: Any, keys: tuple[str, ...]) -> Any:  # Any: JSON of any shape, walked
    """``value`` with every dict key in ``keys`` dropped, at any depth."""
    if isinstance(value, dict):
        return {key: without(inner, keys) for key, inner in value.items() if key not in keys}
    if isinstance(value, list):
        return [without(inner, keys) for inner in value]
    return value


def overview(results: JsonObject) -> str:
    """One run at a glance: dev scores and the learning check, then each analysis's headline,
    pre-trained beside fine-tuned, the papers' BERT-base numbers for context (`View.overview_rows`)."""
    rows: list[Row] = [("", "pre-trained (untrained head)", "fine-tuned", "paper (BERT-base)")]
    for name, view in VIEWS.items():
        if name in results["analyses"]:
            rows += view.overview_rows(results["analyses"], results["run"])
    return markdown_table(rows[0], rows[1:])


def sweep_table(results: JsonObject) -> str:
    """A recipe sweep (``benchmarks/sweep_recipe.py``), per task and setting: the dev score's
    mean ± std over seeds, the majority class, and the seeds clearly above it."""
    groups: dict[tuple, list[JsonObject]] = {}
    for point in results["points"]:
        setting = (
            point["task"],
            point["learning_rate"],
            point["epochs"],
            point.get("reinit_layers", 0),
            point["max_train_examples"] or 0,
        )
        groups.setdefault(setting, []).append(point)
    lines = [
        "| task | lr | epochs | top layers re-initialised | train examples | metric | seeds | dev mean ± std | "
        "majority | seeds learned | train s / seed |",
        "|---" * 11 + "|",
    ]
    for (task, rate, epochs, reinit, _), group in sorted(groups.items()):
        scores = [100 * point["score"] for point in group]
        spread = f" ± {statistics.stdev(scores):.1f}" if len(scores) > 1 else ""
        lines.append(
            f"| {task} | {rate:g} | {epochs:g} | {reinit} | {group[0]['train_examples']} | {group[0]['metric']} | "
            f"{len(group)} | {statistics.mean(scores):.1f}{spread} | {100 * group[0]['majority']:.1f} | "
            f"{sum(point['learned'] for point in group)} | "
            f"{statistics.mean(point['train_seconds'] for point in group):.0f} |"
        )
    return "\n".join(lines) + "\n"


# Tables that read more than one analysis (or no run at all: a sweep's points).
OVERVIEWS: dict[str, Callable[[JsonObject], str]] = {"overview": overview, "sweep": sweep_table}


def without_title(text: str) -> str:
    """An analysis table without its ``# title`` line (the doc around it has its own headings)."""
    lines = text.splitlines()
    if lines and lines[0].startswith("# "):
        lines = lines[2:] if len(lines) > 1 and not lines[1] else lines[1:]
    return "\n".join(lines) + "\n"


def is_study(results: JsonObject) -> bool:
    """Whether stored results are a study's (its study.json) rather than a run's."""
    return "findings" in results and "tasks" in results


def render(name: str, results: JsonObject) -> str:
    """Table NAME from a run's or a study's stored results."""
    if is_study(results):
        tables = study_tables(
            decoded_study(results)
        )  # a study.json kept under docs/results: its writer is what is checked
        if name not in tables:
            raise InputError(f"table {name!r}: the stored study gives no such table; its tables: {', '.join(tables)}")
        with model_tokens(results.get("special_tokens")):
            return own_tokens(tables[name], markdown=True)
    if name in OVERVIEWS:
        return OVERVIEWS[name](results)
    run = decoded_snapshot(results)
    for view, entry in current_entries(run).values():
        tables = view.tables(entry, run["run"])
        if name in tables:
            return without_title(tables[name])
    raise InputError(
        f"table {name!r}: no analysis of the stored run gives it (of the current version); "
        f"tables: {', '.join(OVERVIEWS)} or an analysis table such as coreference_table"
    )


def stored_results(label: str, results_dir: Path = RESULTS) -> JsonObject:
    """Run LABEL's stored results (``docs/results/LABEL.json``); raises `InputError`, saying how to store them,
    when they are missing or damaged."""
    path = results_dir / f"{label}.json"
    results = read_json(path)
    if not isinstance(results, dict):
        raise InputError(
            f"{path}: no stored results of run {label!r}; take a finished run's with "
            f"`harness docs --run {label}=outputs/<run folder>` (a study's: `harness docs --study "
            f"{label}=outputs/studies/<name>`; a sweep's points: "
            f"`python -m benchmarks.sweep_recipe --table --out POINTS.jsonl --keep-as {label}`)"
        )
    return results


def take_run(label: str, run_folder: Path, results_dir: Path = RESULTS) -> Path:
    """Store a finished run's results as LABEL's (``docs/results/LABEL.json``)."""
    summary = whole_summary(run_folder)
    path = results_dir / f"{label}.json"
    write_json(path, snapshot(summary, run_folder))
    return path


def take_study(label: str, study_folder: Path, results_dir: Path = RESULTS) -> Path:
    """Store a study's results as LABEL's: its study.json as ``docs/results/LABEL.json``, its
    figures (PNG) and tables as ``docs/results/LABEL/figures`` (replacing what was there)."""
    study = checked_study(study_folder)
    figures = results_dir / label / "figures"
    if figures.is_dir():
        shutil.rmtree(figures)
    figures.mkdir(parents=True)
    for path in sorted((study_folder / "figures").glob("*")):
        if path.suffix in (".png", ".md"):
            shutil.copyfile(path, figures / path.name)
    path = results_dir / f"{label}.json"
    write_json(path, study)
    return path


def rebuilt(text: str, results_dir: Path = RESULTS) -> tuple[str, list[str]]:
    """``text`` with every table block regenerated, and the ``name run:label`` of blocks that changed."""
    changed: list[str] = []
    cache: dict[str, JsonObject] = {}

    def replace(match: re.Match) -> str:
        label = match["run"]
        results = cache.setdefault(label, stored_results(label, results_dir))
        body = render(match["name"], results)
        if body != match["body"]:
            changed.append(f"{match['name']} run:{label}")
        return match.group(1) + body + match.group(5)

    return BLOCK.sub(replace, text), changed


def rebuild(paths: list[Path], check: bool = False, results_dir: Path = RESULTS) -> list[str]:
    """Regenerate the table blocks of ``paths`` (or only compare, with ``check``); returns
    ``file: table run:label`` for every block that differed."""
    differing = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        new, changed = rebuilt(text, results_dir)
        differing += [f"{path.name}: {block}" for block in changed]
        if changed and not check:
            atomic_write_text(path, new)
    return differing
