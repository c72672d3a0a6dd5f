"""What a study says, from its runs' stored summaries only: every scalar metric as mean and
spread over the seeds of each task, the series each analysis's view keeps over seeds (cosine
per layer and head, [CLS]/[SEP] attention per layer), and the findings: each view's claims
judged on every run, and the direction of each signed change it declares, with the seeds
and tasks they hold for. Nothing here imports torch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from harness.views import VIEWS
from harness.views.base import View
from harness.views.evaluation import EvaluationView
from harness.views.seeds import spread
from harness.views.summary import headline_names, summary_metrics

Summaries = dict[str, dict[int, dict[str, Any]]]  # {task: {seed: summary}}


def entries_of(view: type[View], summaries: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """The view's analysis entry of every summary (current version), or None when a run lacks it."""
    entries = [summary["analyses"].get(view.name) for summary in summaries]
    if any(entry is None or entry.get("version") != view.version for entry in entries):
        return None
    return entries


def task_aggregate(summaries: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """One task over its seeds (``{seed: summary}``): every metric's spread, the headline
    names, each view's series over seeds (`View.across_seeds`), the main dev metric."""
    metrics = {seed: summary_metrics(summary) for seed, summary in summaries.items()}
    names = sorted(set.intersection(*(set(values) for values in metrics.values())))
    first = next(iter(summaries.values()))
    entry: dict[str, Any] = {
        "seeds": sorted(summaries),
        "run_keys": {str(seed): summary["run"]["key"] for seed, summary in summaries.items()},
        "metrics": {name: spread([metrics[seed][name] for seed in summaries]) for name in names},
        # a seed's run that holds more analyses than the others (an earlier run under its key) has
        # headline metrics the others lack: only those every seed has are the task's headline
        "headline": [name for name in headline_names(first, metrics[next(iter(summaries))]) if name in names],
        "main_metric": EvaluationView.main_metric(first["analyses"][EvaluationView.name]),
        "num_layers": first["run"]["num_layers"], "num_heads": first["run"]["num_heads"],
    }
    for view in VIEWS.values():
        entries = entries_of(view, list(summaries.values()))
        if entries is not None:
            entry.update(view.across_seeds(entries))
    return entry


def support(claim: str, holds: dict[str, list[bool]]) -> dict[str, Any]:
    """A finding with the seeds it holds for on each task: ``{task: [holds per seed]}``."""
    per_task = {task: {"holds": sum(map(bool, values)), "seeds": len(values)} for task, values in holds.items()}
    everywhere = [task for task, counts in per_task.items() if counts["holds"] == counts["seeds"]]
    detail = ", ".join(f"{task} {c['holds']} of {c['seeds']}" for task, c in per_task.items())
    return {"claim": claim, "per_task": per_task, "tasks_every_seed": len(everywhere), "tasks": len(per_task),
            "text": f"{claim}: holds on every seed of {len(everywhere)} of {len(per_task)} tasks "
                    f"(seeds where it holds: {detail})"}


def claim_findings(view: type[View], by_task: Summaries) -> dict[str, Any]:
    """The view's claims, each judged on every run of every task (only when every run has the analysis)."""
    entries = {task: entries_of(view, list(summaries.values())) for task, summaries in by_task.items()}
    if not entries or any(found is None for found in entries.values()):
        return {}
    found = {}
    for name, claim in view.claims.items():
        verdicts = {task: [claim.judge(entry) for entry in task_entries] for task, task_entries in entries.items()}
        if all(verdict is not None for values in verdicts.values() for verdict in values):
            found[name] = support(claim.text, verdicts)
    return found


def change_findings(view: type[View], by_task: Summaries, tasks: dict[str, Any]) -> dict[str, Any]:
    """The direction of each signed change the view declares, over every run (only when every
    run has the analysis; then a declared metric that no run gives is an error, not a skip)."""
    if not by_task or any(entries_of(view, list(summaries.values())) is None for summaries in by_task.values()):
        return {}
    found = {}
    for name, what in view.signed_changes.items():
        missing = [task for task, entry in tasks.items() if name not in entry["metrics"]]
        if missing:
            raise KeyError(f"the {view.name} view declares the signed change {name!r}, but the runs of "
                           f"{', '.join(missing)} have no such metric: rename it where the view declares it")
        values = {task: entry["metrics"][name]["values"] for task, entry in tasks.items()}
        rises = bool(np.mean([v for runs in values.values() for v in runs]) > 0)
        verdicts = {task: [(v > 0) == rises and v != 0 for v in runs] for task, runs in values.items()}
        found[name] = support(f"{what} {'rises' if rises else 'falls'} with fine-tuning", verdicts)
    return found


def findings(by_task: Summaries, tasks: dict[str, Any]) -> dict[str, Any]:
    """Every view's claims, then its signed changes, with their support over seeds and tasks,
    from the runs' summaries and their per-task aggregates (`task_aggregate`)."""
    found: dict[str, Any] = {}
    for view in VIEWS.values():
        found.update(claim_findings(view, by_task))
    for view in VIEWS.values():
        found.update(change_findings(view, by_task, tasks))
    return found
