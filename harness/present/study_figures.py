"""A study's cross-task figures and tables, drawn from its ``study.json`` only: each analysis's
view draws its own (`harness.views.base.View.draw_study` and ``study_tables``: Kovaleva et
al.'s Figures 2, 5 and 6, the dev scores beside the majority class and Table 1, the ablation
per task); here only what reads every analysis at once: the headline metrics per task and
the findings with their seed support.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.views import VIEWS
from harness.views.across_tasks import metric_table
from harness.views.style import model_tokens, own_tokens
from tasks.files import atomic_write_text


def draw_study(study: dict[str, Any], out_dir: Path) -> list[Path]:
    """Every figure (PNG and PDF) and table of the study; the files written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with model_tokens(study.get("special_tokens")):
        figures = [path for view in VIEWS.values() for path in view.draw_study(study, out_dir)]
        written = [*figures, *(path.with_suffix(".pdf") for path in figures)]
        for stem, text in study_tables(study).items():
            written.append(atomic_write_text(out_dir / f"{stem}.md", own_tokens(text, markdown=True)))
    return written


def study_tables(study: dict[str, Any]) -> dict[str, str]:
    """The study's Markdown tables by file stem: ``findings`` always; with tasks, each view's
    tables and ``headline_by_task``."""
    tables = {"findings": "".join(f"- {finding['text']}\n" for finding in study["findings"].values())}
    if not study["tasks"]:
        return tables
    for view in VIEWS.values():
        tables.update(view.study_tables(study))
    headline = list(dict.fromkeys(name for entry in study["tasks"].values() for name in entry["headline"]))
    tables["headline_by_task"] = metric_table(study, headline)
    return tables
