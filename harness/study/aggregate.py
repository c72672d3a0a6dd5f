"""What a study says, from its runs' stored summaries only: every scalar metric as mean and
spread over the seeds of each task, the series each analysis's view keeps over seeds (cosine
per layer and head, [CLS]/[SEP] attention per layer), which tasks the fine-tuned models
learned, and the findings: each view's claims judged on every run of the tasks learned, and
the direction of each signed change it declares, with the seeds and tasks they hold for and
what the papers found on the same point beside them. An analysis that ran on some seeds only
(the ablation on a CPU: one seed per task) is aggregated and judged over those seeds, and
says how many. Nothing here imports torch.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from harness.views import VIEWS
from harness.views.base import Failures, PaperPoint, View, attempt
from harness.views.evaluation import EvaluationView
from harness.views.seeds import spread
from harness.views.summary import headline_names, summary_metrics

Summaries = dict[str, dict[int, dict[str, Any]]]  # {task: {seed: summary}}
LEARNED = "beats_majority"  # the evaluation's claim that decides whether a task's findings are judged


def entries_of(view: type[View], summaries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The view's analysis entry (current version) of every summary that has one; the ablation,
    run on one seed of a CPU study, has fewer entries than seeds."""
    entries = [summary["analyses"].get(view.name) for summary in summaries]
    return [entry for entry in entries if entry is not None and entry.get("version") == view.version]


def task_aggregate(summaries: dict[int, dict[str, Any]], failures: Failures | None = None) -> dict[str, Any]:
    """One task over its seeds (``{seed: summary}``): every metric's spread over the seeds that
    have it (its ``n``), the headline names, each view's series over the seeds it ran on
    (`View.across_seeds`; one that fails is recorded in ``failures`` and left out), the main dev
    metric."""
    failures = {} if failures is None else failures
    metrics = {seed: summary_metrics(summary) for seed, summary in summaries.items()}
    names = sorted(set().union(*metrics.values()))
    first = next(iter(summaries.values()))
    entry: dict[str, Any] = {
        "seeds": sorted(summaries),
        "run_keys": {str(seed): summary["run"]["key"] for seed, summary in summaries.items()},
        "metrics": {name: spread([values[name] for values in metrics.values() if name in values]) for name in names},
        "headline": headline_names(first, metrics[next(iter(summaries))]),
        "main_metric": EvaluationView.main_metric(first["analyses"][EvaluationView.name]),
        "num_layers": first["run"]["num_layers"], "num_heads": first["run"]["num_heads"],
    }
    for view in VIEWS.values():
        entries = entries_of(view, list(summaries.values()))
        if entries:
            task = first["run"]["task"]
            entry.update(attempt(failures, f"{view.name} over the seeds of {task}",
                                 partial(view.across_seeds, entries), {}))
    return entry


def learning(by_task: Summaries) -> dict[str, dict[str, Any]]:
    """Per task, the harness's learning check on each seed: whether its fine-tuned model is
    clearly above the majority class on dev (a seed without a dev evaluation did not show it)."""
    judge = EvaluationView.claims[LEARNED].judge
    checked = {}
    for task, summaries in by_task.items():
        seeds = {}
        for seed, summary in summaries.items():
            entries = entries_of(EvaluationView, [summary])
            seeds[str(seed)] = bool(entries and judge(entries[0]))
        checked[task] = {"seeds": seeds, "learned": sum(seeds.values()), "of": len(seeds),
                         "every_seed": all(seeds.values())}
    return checked


def judged_tasks(checked: dict[str, dict[str, Any]], findings_from: str) -> tuple[list[str], dict[str, str]]:
    """The tasks the findings are judged on, and, in the study's words, why each other task is not."""
    if findings_from == "all":
        return list(checked), {}
    kept_out = {task: f"its fine-tuned model is clearly above the majority class on {c['learned']} of {c['of']} "
                      "seeds: its attention changes are not what learning the task does, so no finding counts it"
                for task, c in checked.items() if not c["every_seed"]}
    return [task for task in checked if task not in kept_out], kept_out


def support(claim: str, holds: dict[str, list[bool]]) -> dict[str, Any]:
    """A finding with the seeds it holds for on each task: ``{task: [holds per seed]}``."""
    per_task = {task: {"holds": sum(map(bool, values)), "seeds": len(values)} for task, values in holds.items()}
    everywhere = [task for task, counts in per_task.items() if counts["holds"] == counts["seeds"]]
    detail = ", ".join(f"{task} {c['holds']} of {c['seeds']}" for task, c in per_task.items())
    return {"claim": claim, "per_task": per_task, "tasks_every_seed": len(everywhere), "tasks": len(per_task),
            "text": f"{claim}: holds on every seed of {len(everywhere)} of {len(per_task)} tasks "
                    f"(seeds where it holds: {detail})"}


def beside_paper(paper: PaperPoint, agrees: dict[str, list[bool]]) -> dict[str, Any]:
    """What the paper found, and whether the study agrees: ``agrees`` holds, per task the paper
    has an expectation for, whether each seed went the paper's way. ``agrees`` on every seed of
    every such task; ``disagrees`` where under half of their seeds do; ``partly`` between; ``not
    compared`` where the paper measured no such thing (or none of its tasks ran)."""
    verdict, detail = "not compared", ""
    seeds = [value for values in agrees.values() for value in values]
    if seeds:
        every = [task for task, values in agrees.items() if all(values)]
        verdict = ("agrees" if len(every) == len(agrees) else
                   "disagrees" if sum(seeds) < len(seeds) / 2 else "partly")
        detail = f"the paper's way on every seed of {len(every)} of {len(agrees)} tasks"
    return {"source": paper.source, "says": paper.says, "verdict": verdict, "detail": detail}


def claim_findings(view: type[View], by_task: Summaries) -> dict[str, Any]:
    """The view's claims, each judged on every run of every task that has the analysis."""
    entries = {task: found for task, summaries in by_task.items()
               if (found := entries_of(view, list(summaries.values())))}
    found = {}
    for name, claim in view.claims.items():
        verdicts = {task: [claim.judge(entry) for entry in task_entries] for task, task_entries in entries.items()}
        if entries and all(verdict is not None for values in verdicts.values() for verdict in values):
            found[name] = support(claim.text, verdicts)
            if name in view.papers:
                paper = view.papers[name]
                found[name]["paper"] = beside_paper(paper, {task: values for task, values in verdicts.items()
                                                            if paper.expectation(task) == "holds"})
    return found


def went(changes: list[float], rises: bool) -> list[bool]:
    """Per seed, whether its change went the given way (a change of exactly 0 went neither)."""
    return [(change > 0) == rises and change != 0 for change in changes]


def undefined(claim: str, tasks: list[str]) -> dict[str, Any]:
    """A finding none of ``tasks`` defines (a cross-sentence share on single-sentence tasks only)."""
    return {"claim": claim, "per_task": {}, "tasks_every_seed": 0, "tasks": 0, "undefined_on": tasks,
            "text": f"{claim}: not defined on these tasks ({', '.join(tasks)})"}


def change_findings(view: type[View], by_task: Summaries, tasks: dict[str, Any]) -> dict[str, Any]:
    """The direction of each signed change the view declares, over every task whose runs have
    the analysis and give the metric. A task where it is undefined (a cross-sentence share of a
    single-sentence task) is not judged; where no task defines it the finding says so. That
    each declared name is one the view's metrics give is the views' tests' to check
    (tests/unit/run/test_pipeline.py, on a run of a pair task), not a study's to find out at its end."""
    ran = [task for task, summaries in by_task.items() if entries_of(view, list(summaries.values()))]
    if not ran:
        return {}
    found = {}
    for name, what in view.signed_changes.items():
        values = {task: tasks[task]["metrics"][name]["values"] for task in ran if name in tasks[task]["metrics"]}
        if not values:
            found[name] = undefined(f"{what} with fine-tuning", ran)
            continue
        rises = bool(np.mean([v for runs in values.values() for v in runs]) > 0)
        verdicts = {task: went(runs, rises) for task, runs in values.items()}
        found[name] = support(f"{what} {'rises' if rises else 'falls'} with fine-tuning", verdicts)
        if name in view.papers:
            paper = view.papers[name]
            expected = {task: paper.expectation(task) for task in ran}
            found[name]["paper"] = beside_paper(paper, {task: went(runs, expected[task] == "rises")
                                                        for task, runs in values.items()
                                                        if expected[task] in ("rises", "falls")})
    return found


def findings(by_task: Summaries, tasks: dict[str, Any], judged: list[str],
             failures: Failures | None = None) -> dict[str, Any]:
    """The learning check over every task, then every view's claims and signed changes over
    the ``judged`` tasks, with their support over seeds and tasks and the papers beside them,
    from the runs' summaries and their per-task aggregates (`task_aggregate`). A view whose
    findings fail is recorded in ``failures`` and the others go on."""
    failures = {} if failures is None else failures
    found = {name: finding for name, finding in claim_findings(EvaluationView, by_task).items() if name == LEARNED}
    kept = {task: by_task[task] for task in judged}
    for view in VIEWS.values():
        claims = attempt(failures, f"{view.name} claims", partial(claim_findings, view, kept), {})
        found.update({name: finding for name, finding in claims.items() if name != LEARNED})
    for view in VIEWS.values():
        found.update(attempt(failures, f"{view.name} changes", partial(change_findings, view, kept, tasks), {}))
    return found
