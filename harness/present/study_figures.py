"""A study's cross-task figures and tables, drawn from its ``study.json`` only: each analysis's
view draws its own (`harness.views.base.View.draw_study` and ``study_tables``: Kovaleva et
al.'s Figures 2, 5 and 6, the dev scores beside the majority class and Table 1, the ablation
per task); here only what reads every analysis at once: the headline metrics per task and
the findings with their seed support.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from pathlib import Path

from harness.config import DEFAULT_FIGURE_FORMATS
from harness.present.parallel import drawn
from harness.results.study_record import Finding, SeedRecord, Spread, StudyRecord, TaskCell
from harness.views import VIEWS
from harness.views import trajectory as trajectory_view
from harness.views.across_tasks import metric_table
from harness.views.base import Failures, attempt
from harness.views.evidence import effect_text
from harness.views.markdown import markdown_table
from harness.views.papers import paper_cells
from harness.views.saving import figure_formats, vector_copies
from harness.views.tokens import model_tokens, own_tokens
from tasks.collector import frozen_heap
from tasks.files import atomic_write_text


def draw_study(
    study: StudyRecord,
    out_dir: Path,
    failures: Failures | None = None,
    formats: Sequence[str] = DEFAULT_FIGURE_FORMATS,
    processes: int = 1,
) -> list[Path]:
    """Every figure (as each of ``formats``) and table of the study, each view's figures in one of
    ``processes`` processes (0: one per core; `harness.present.parallel`); the files written. A view
    whose figures or tables fail is named in ``failures`` and the others are drawn."""
    failures = {} if failures is None else failures
    out_dir.mkdir(parents=True, exist_ok=True)
    pieces = {
        **{f"{view.name} figures": partial(view.draw_study, study, out_dir) for view in VIEWS.values()},
        "trajectory figures": partial(trajectory_view.draw_study, study, out_dir),
    }
    with model_tokens(study.get("special_tokens")), figure_formats(formats), frozen_heap():  # see `redraw`
        with drawn(list(pieces.values()), processes) as results:
            drawn_paths: list[list[Path]] = [
                attempt(failures, what, result, []) for what, result in zip(pieces, results)
            ]
            figures = [path for paths in drawn_paths for path in paths]
        written = [*figures, *(copy for path in figures for copy in vector_copies(path))]
        for stem, text in study_tables(study, failures).items():
            written.append(atomic_write_text(out_dir / f"{stem}.md", own_tokens(text, markdown=True)))
    return written


def seed_text(record: SeedRecord) -> str:
    """One seed's evidence in a cell: ``+0.031 [+0.012, +0.050]``, ``holds (99%)`` or ``[+0.02, +0.09]``."""
    if "value" in record:
        low, high = record["interval"]
        return f"{record['value']:+.3f} [{low:+.3f}, {high:+.3f}]"
    if "support" in record:
        return f"{record['state']} ({100 * record['support']:.0f}%)"
    if "interval" in record:
        low, high = record["interval"]
        return f"{record['state']} [{low:+.3f}, {high:+.3f}]"
    return record["state"]


def task_text(cell: TaskCell, holds: str) -> str:
    """A task's cell of a finding: on how many seeds it is clear (``holds``, unless the cell says
    what it counts), how the others went, the directions its clear changes went, its effect over
    the seeds, and each seed's evidence: ``2 of 3 (1 no clear change; 2 rises); effect +0.031
    [+0.012, +0.050] (3 seeds): +0.031 [+0.012, +0.050]; ...``."""
    holds = cell.get("holds_as", holds)
    others = ", ".join(f"{count} {state}" for state, count in cell.get("states", {}).items() if state != holds)
    ways = ", ".join(f"{count} {way}" for way, count in cell.get("directions", {}).items())
    noted = "; ".join(part for part in (others, ways) if part)
    size = f"; effect {effect_text(cell['effect'])}" if cell.get("effect") else ""
    seeds = "; ".join(seed_text(record) for record in cell.get("per_seed", []))
    return (
        f"{cell['holds']} of {cell['seeds']}"
        + (f" ({noted})" if noted else "")
        + size
        + (f": {seeds}" if seeds else "")
    )


def tasks_text(finding: Finding) -> str:
    """On how many tasks a finding is clear on every seed, where it is not defined, or why it was not judged."""
    if "undefined_on" in finding:
        return f"not defined on {', '.join(finding['undefined_on'])}"
    if "not_judged" in finding:
        return f"not judged: {finding['not_judged']}"
    return f"{finding['tasks_every_seed']} of {finding['tasks']}"


def findings_table(study: StudyRecord) -> str:
    """The findings beside the papers: each with the tasks it is clear on every seed of, per
    task its seeds and each seed's evidence (interval or share of resamples), what the paper
    found and whether the study agrees; then the tasks kept out of the findings (not learned),
    and why."""
    rows = []
    for finding in study["findings"].values():
        holds = finding.get("holds_as", "holds")
        seeds = "<br>".join(f"{task} {task_text(cell, holds)}" for task, cell in finding["per_task"].items())
        rows.append([finding["claim"], tasks_text(finding), seeds, *paper_cells(finding.get("paper"))])
    table = (
        markdown_table(
            [
                "finding",
                "tasks clear on every seed",
                "per task: seeds clear, each seed's evidence",
                "what the papers found",
                "beside the paper",
            ],
            rows,
        )
        if rows
        else "No finding could be judged.\n"
    )
    kept_out = "".join(
        f"\nNot in the findings: {task}: {why}.\n" for task, why in study.get("kept_out_of_findings", {}).items()
    )
    return table + kept_out


def time_table(seconds: dict[str, dict[str, Spread]]) -> str:
    """Minutes per seed of fine-tuning, of the analyses and of each source read only to intervene
    (`View.timed_apart`: the ablation's, over the seeds it ran on) per task, each task's total, and
    the study's."""
    apart = list(dict.fromkeys(view.timed_apart for view in VIEWS.values() if view.timed_apart))
    rows, total = [], 0.0
    for task, phases in seconds.items():
        spent = sum(sum(phase["values"]) for phase in phases.values())
        total += spent
        rows.append(
            [
                task,
                str(phases["fine-tuning"]["n"]),
                f"{phases['fine-tuning']['mean'] / 60:.1f}",
                f"{phases['analyses']['mean'] / 60:.1f}",
                *(
                    f"{phases[phase]['mean'] / 60:.1f} ({phases[phase]['n']})" if phase in phases else "-"
                    for phase in apart
                ),
                f"{spent / 60:.0f}",
            ]
        )
    rows.append(["all tasks", "", "", "", *[""] * len(apart), f"{total / 60:.0f}"])
    return markdown_table(
        [
            "task",
            "seeds",
            "fine-tuning, min per seed",
            "analyses, min per seed",
            *(f"{phase}, min per seed (seeds)" for phase in apart),
            "task total, min",
        ],
        rows,
    )


def study_tables(study: StudyRecord, failures: Failures | None = None) -> dict[str, str]:
    """The study's Markdown tables by file stem: ``findings`` always; with tasks, each view's
    tables (one that fails is named in ``failures``) and ``headline_by_task``."""
    failures = {} if failures is None else failures
    tables = {"findings": findings_table(study)}
    if not study["tasks"]:
        return tables
    for view in VIEWS.values():
        view_tables: dict[str, str] = attempt(failures, f"{view.name} tables", partial(view.study_tables, study), {})
        tables.update(view_tables)
    if study.get("seconds"):
        tables["time_by_task"] = time_table(study["seconds"])
    headline = list(dict.fromkeys(name for entry in study["tasks"].values() for name in entry["headline"]))
    tables["headline_by_task"] = metric_table(study, headline)
    return tables
