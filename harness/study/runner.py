"""``harness study``: one set of flags over every task and seed, and what holds across them.

Each (task, seed) is a plain `harness run` (`harness.run.pipeline.run`): its own run folder,
stored results and MLflow run, here a child of the study's parent run (tags task, seed,
model, study). A (task, seed) whose summary holds every analysis asked for and whose MLflow
run is FINISHED is not run again, so the same command after a stop does only what is
missing; one that fails is reported at the end while the others go on; a task without
data is named and skipped before any work.

What the study says is computed from the runs' stored summaries only (`aggregate`): every
scalar metric as mean and spread over the seeds of each task, cosine per layer and head,
[CLS]/[SEP] attention per layer, and the findings with the seeds and tasks they hold for.
It is written to ``<output_dir>/studies/<name>/study.json``; the cross-task figures and
tables (`harness.present.study_figures`) are drawn from that file, and the parent MLflow run gets
its headline means once every (task, seed) has finished.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from harness.analyses.cosine import CosineSimilarity
from harness.analyses.evaluation import Evaluation
from harness.analyses.surface import Surface
from harness.config import RunConfig, StudyConfig
from harness.study.executors import Job, run_inline, run_on_ray
from harness.run.locking import exclusive
from harness.results.checkpoints import FINETUNED, PRETRAINED
from harness.run.pipeline import RunPlan, headline_names, plan_run, stored_summary, summary_metrics
from harness.results.checkpoints import PAIRS
from harness.results.store import key_of, write_json
from harness.present.study_figures import draw_study
from harness.run.tracking import Tracker, flatten, is_finished
from tasks.errors import InputError
from tasks.glue_tsv import split_path
from tasks.registry import get_task

STUDIES = "studies"
PARENT_TAG = "mlflow.parentRunId"  # MLflow's UI nests a run under the run this tag names
PAIR = f"{PAIRS[0][0]}->{PAIRS[0][1]}"
SPECIAL_TOKENS = ("cls", "sep")
LAST_LAYERS = 2  # Kovaleva et al.: "the last two layers change most"


@dataclass
class StudyPlan:
    """The (task, seed) runs planned, the tasks skipped (no data) and the runs that failed their
    checks (bad input: reported at the end like a run that fails), the study's key and name."""

    settings: StudyConfig
    runs: list[RunPlan]
    skipped: dict[str, str]
    failed: dict[str, str]
    key: str
    name: str

    @property
    def folder(self) -> Path:
        return self.runs[0].config.environment.output_dir / STUDIES / self.name

    @property
    def model(self) -> str:
        return self.runs[0].config.task.model


def missing_data(config: RunConfig) -> str | None:
    """Why ``config``'s task cannot run from its GLUE folder (a split file missing), else None
    (GLUE from the hub is found or not when the run reads it)."""
    if config.task.data_dir is None:
        return None
    task = get_task(config.task.task)
    try:
        for split in ("train", *task.eval_splits):
            split_path(config.task.data_dir, task, split)
    except InputError as error:
        return str(error).split(":")[0]
    return None


def shared_flags(config: RunConfig) -> dict[str, str]:
    """The flags every run of a study shares: its settings without the task and the seed."""
    return {name: value for name, value in flatten("", config).items() if name not in ("task.task", "finetune.seed")}


def plan_study(settings: StudyConfig, configs: list[RunConfig]) -> StudyPlan:
    """Every (task, seed) run planned (data read and checked, run keys), tasks without data set
    aside; the study's key is made of its tasks, seeds and shared flags: the same command is
    the same study (its parent MLflow run is found again), other settings another."""
    skipped = {config.task.task: why for config in configs if (why := missing_data(config))}
    plans, failed = [], {}
    for config in configs:
        if config.task.task in skipped:
            continue
        try:
            plans.append(plan_run(config))
        except InputError as error:  # a malformed file of one task: its runs fail, the others go on
            failed[run_label(config)] = str(error)
    if not plans:
        raise InputError("no (task, seed) of the study can run: "
                         + "; ".join([*(f"{t}: {why}" for t, why in skipped.items()), *failed.values()]))
    key = key_of({"tasks": settings.tasks, "seeds": settings.seeds, "flags": shared_flags(configs[0])})
    name = settings.name or f"study-{plans[0].config.model_name}-{key[:8]}"
    return StudyPlan(settings, plans, skipped, failed, key, name)


def is_done(plan: RunPlan) -> bool:
    """Whether the (task, seed) of ``plan`` is finished: a whole summary with every analysis
    asked for at its current version, and a FINISHED MLflow run."""
    summary = stored_summary(plan.run_dir / "summary.json")
    if summary is None:
        return False
    entries = summary["analyses"]
    whole = all(analysis.name in entries and entries[analysis.name]["version"] == analysis.version
                for analysis in plan.analyses)
    return whole and is_finished(plan.config.environment.tracking_uri, plan.key)


def run_label(config: RunConfig) -> str:
    """How a study names one of its runs (progress, failures): ``rte seed 42``."""
    return f"{config.task.task} seed {config.finetune.seed}"


def run_all(plan: StudyPlan, child_tags: dict[str, str]) -> dict[str, str]:
    """Every unfinished (task, seed) of the study on its engine, under one progress bar;
    returns ``{run label: error}`` of those that failed (the rest went on)."""
    jobs = [Job(run_label(run.config), run.config, child_tags) for run in plan.runs if not is_done(run)]
    with tqdm(total=len(plan.runs), initial=len(plan.runs) - len(jobs), desc=f"study {plan.name}", unit="run",
              position=0) as bar:
        if not jobs:
            return dict(plan.failed)
        ran = run_on_ray(jobs, plan.settings, bar) if plan.settings.engine == "ray" else run_inline(jobs, bar)
    return {**plan.failed, **ran}


def study(plan: StudyPlan) -> tuple[dict[str, Any], list[Path], str]:
    """Run the study (see the module's docstring); returns the aggregate written to
    ``study.json``, the figure and table files and the parent MLflow run's page.

    A second identical study started meanwhile waits on the study's lock and then finds every
    run done; the parent run ends KILLED on Ctrl-C or SIGTERM, FAILED when a (task, seed)
    failed (the same command again retries it), FINISHED otherwise.
    """
    environment = plan.runs[0].config.environment
    with exclusive(environment.cache_dir / "locks" / f"study-{plan.key}.lock", f"the study {plan.name}"):
        parent = Tracker(environment.tracking_uri, f"study-{plan.key}", plan.name,
                         {"study": plan.name, "model": plan.model, "harness.kind": "study"})
        try:
            failures = run_all(plan, {"study": plan.name, PARENT_TAG: parent.run_id})
            aggregated = aggregate(plan, failures)
            write_json(plan.folder / "study.json", aggregated)
            files = draw_study(aggregated, plan.folder / "figures")
            log_study(parent, plan, aggregated, files)
        except KeyboardInterrupt:
            parent.finish("KILLED")
            raise
        except BaseException:
            parent.finish("FAILED")
            raise
        parent.finish("FAILED" if failures else "FINISHED")
    return aggregated, files, parent.page()


def spread(values: list[float]) -> dict[str, Any]:
    """Mean and spread of one quantity over seeds: the sample standard deviation (0 for one
    seed), the range and the values themselves."""
    array = np.asarray(values, dtype=float)
    return {"mean": float(array.mean()), "std": float(array.std(ddof=1)) if len(array) > 1 else 0.0,
            "min": float(array.min()), "max": float(array.max()), "n": len(array), "values": array.tolist()}


def elementwise(arrays: list[Any]) -> dict[str, Any]:
    """Mean and sample standard deviation, element by element, of same-shaped nested lists
    (per layer, or layers x heads) over seeds."""
    stacked = np.asarray(arrays, dtype=float)
    std = stacked.std(axis=0, ddof=1) if len(stacked) > 1 else np.zeros(stacked.shape[1:])
    return {"mean": stacked.mean(axis=0).tolist(), "std": std.tolist(), "n": len(stacked)}


def task_aggregate(summaries: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """One task over its seeds (``{seed: summary}``): every metric's spread, the headline
    names, cosine per layer and head, [CLS]/[SEP] attention per layer, dev scores."""
    metrics = {seed: summary_metrics(summary) for seed, summary in summaries.items()}
    names = sorted(set.intersection(*(set(values) for values in metrics.values())))
    first = next(iter(summaries.values()))
    entry: dict[str, Any] = {
        "seeds": sorted(summaries),
        "run_keys": {str(seed): summary["run"]["key"] for seed, summary in summaries.items()},
        "metrics": {name: spread([metrics[seed][name] for seed in summaries]) for name in names},
        "headline": headline_names(first, metrics[next(iter(summaries))]),
        "main_metric": main_metric(first),
        "num_layers": first["run"]["num_layers"], "num_heads": first["run"]["num_heads"],
    }
    if all(CosineSimilarity.name in s["analyses"] for s in summaries.values()):
        pair = [s["analyses"][CosineSimilarity.name]["result"]["per_pair"][PAIR] for s in summaries.values()]
        entry["cosine"] = {"per_layer": elementwise([p["per_layer"] for p in pair]),
                           "per_head": elementwise([p["per_head"] for p in pair])}
    if all(Surface.name in s["analyses"] for s in summaries.values()):
        entry["special_tokens"] = {
            checkpoint: {token: elementwise([s["analyses"][Surface.name]["result"]["per_checkpoint"][checkpoint]
                                             ["per_layer"][token] for s in summaries.values()])
                         for token in SPECIAL_TOKENS}
            for checkpoint in (PRETRAINED, FINETUNED)}
    return entry


def main_metric(summary: dict[str, Any]) -> str:
    """The task's main dev metric as a metric-name stem (``dev_accuracy``)."""
    name = summary["analyses"][Evaluation.name]["result"]["per_pair"][PAIR]["main_metric"]
    return name.replace("/", "_")


def aggregate(plan: StudyPlan, failures: dict[str, str]) -> dict[str, Any]:
    """The study from its runs' stored summaries (finished runs only)."""
    by_task: dict[str, dict[int, dict[str, Any]]] = {}
    for run_plan in plan.runs:
        summary = stored_summary(run_plan.run_dir / "summary.json")
        if summary is not None and run_label(run_plan.config) not in failures:
            by_task.setdefault(run_plan.config.task.task, {})[run_plan.config.finetune.seed] = summary
    tasks = {task: task_aggregate(summaries) for task, summaries in by_task.items()}
    return {
        "schema": 1, "name": plan.name, "key": plan.key, "model": plan.model,
        "tasks_asked": plan.settings.tasks, "seeds_asked": plan.settings.seeds,
        "recipes": {run.config.task.task: {k: v for k, v in asdict(run.config.finetune).items() if k != "seed"}
                    for run in plan.runs},
        "skipped": plan.skipped, "failed": failures,
        "runs": [{"task": r.config.task.task, "seed": r.config.finetune.seed, "key": r.key,
                  "folder": r.run_dir.name} for r in plan.runs],
        "tasks": tasks,
        "findings": findings(by_task, tasks),
    }


def beats_majority(summary: dict[str, Any]) -> bool | None:
    """Whether the fine-tuned model is above the majority class on dev (`Evaluation`'s test)."""
    return summary["analyses"][Evaluation.name]["result"]["per_pair"][PAIR]["learned"]


def last_layers_change_most(summary: dict[str, Any]) -> bool | None:
    """Whether the last two layers have the two lowest per-layer cosines (None without cosine)."""
    entry = summary["analyses"].get(CosineSimilarity.name)
    if entry is None:
        return None
    per_layer = entry["result"]["per_pair"][PAIR]["per_layer"]
    lowest = sorted(range(len(per_layer)), key=per_layer.__getitem__)[:LAST_LAYERS]
    return set(lowest) == set(range(len(per_layer) - LAST_LAYERS, len(per_layer)))


CLAIMS = {
    "beats_majority": ("the fine-tuned model beats the majority class on dev", beats_majority),
    "last_layers_change_most": ("the last two layers change most (the two lowest per-layer cosines)",
                                last_layers_change_most),
}
# Changes whose direction is a finding (metric: what it measures), stated in the direction of
# their mean over every run.
SIGNED_CHANGES = {
    "pattern_change_vertical": "the share of vertical attention maps",
    "pattern_change_diagonal": "the share of diagonal attention maps",
    "pattern_change_vertical_diagonal": "the share of vertical+diagonal attention maps",
    "pattern_change_block": "the share of block attention maps",
    "pattern_change_heterogeneous": "the share of heterogeneous attention maps",
    "sinks_change_raw_share_cls": "the share of attention on [CLS]",
    "sinks_change_raw_share_sep": "the share of attention on [SEP]",
    "coref_all_change": "the best head's coreference antecedent accuracy",
    "syntax_change_all": "the best heads' dependency accuracy",
    "probes_uas_change_attn": "the attention probe's UAS",
}


def support(claim: str, holds: dict[str, list[bool]]) -> dict[str, Any]:
    """A finding with the seeds it holds for on each task: ``{task: [holds per seed]}``."""
    per_task = {task: {"holds": sum(map(bool, values)), "seeds": len(values)} for task, values in holds.items()}
    everywhere = [task for task, counts in per_task.items() if counts["holds"] == counts["seeds"]]
    seed_counts = {counts["seeds"] for counts in per_task.values()}
    seed_words = f"{max(seed_counts)}/{max(seed_counts)} seeds" if len(seed_counts) == 1 else "every seed"
    detail = ", ".join(f"{task} {c['holds']}/{c['seeds']}" for task, c in per_task.items())
    return {"claim": claim, "per_task": per_task, "tasks_every_seed": len(everywhere), "tasks": len(per_task),
            "text": f"{claim}: {seed_words} on {len(everywhere)}/{len(per_task)} tasks (per task: {detail})"}


def findings(by_task: dict[str, dict[int, dict[str, Any]]], tasks: dict[str, Any]) -> dict[str, Any]:
    """Each claim with its support over seeds and tasks (only where every run can judge it),
    from the runs' summaries (``{task: {seed: summary}}``) and their per-task aggregates."""
    result: dict[str, Any] = {}
    for name, (claim, judge) in CLAIMS.items():
        verdicts = {task: [judge(s) for s in summaries.values()] for task, summaries in by_task.items()}
        if verdicts and all(v is not None for values in verdicts.values() for v in values):
            result[name] = support(claim, verdicts)
    for name, what in SIGNED_CHANGES.items():
        if not tasks or any(name not in entry["metrics"] for entry in tasks.values()):
            continue  # a task's metrics hold only the names every one of its runs has
        values = {task: entry["metrics"][name]["values"] for task, entry in tasks.items()}
        rises = bool(np.mean([v for runs in values.values() for v in runs]) > 0)
        verdicts = {task: [(v > 0) == rises and v != 0 for v in runs] for task, runs in values.items()}
        result[name] = support(f"{what} {'rises' if rises else 'falls'} with fine-tuning", verdicts)
    return result


def log_study(parent: Tracker, plan: StudyPlan, aggregated: dict[str, Any], files: list[Path]) -> None:
    """The parent MLflow run: the study's settings as params, and, once every (task, seed)
    finished, each task's headline metrics as ``<task>/<metric>`` (mean over seeds) and
    ``<task>/<metric>_std``, with study.json and the figures as artifacts."""
    per_task = {"finetune.epochs", "finetune.learning_rate"}  # a recipe may differ by task: logged per task
    parent.log_params({"study.tasks": ",".join(plan.settings.tasks), "study.seeds": str(plan.settings.seeds),
                       "study.skipped": ",".join(plan.skipped) or "-",
                       **{k: v for k, v in shared_flags(plan.runs[0].config).items() if k not in per_task},
                       **{f"recipe.{run.config.task.task}":
                          f"lr {run.config.finetune.learning_rate:g}, epochs {run.config.finetune.epochs:g}"
                          for run in plan.runs}})
    parent.log_artifact(plan.folder / "study.json")
    for path in files:
        parent.log_artifact(path, "figures")
    if aggregated["failed"]:
        return  # logged once, from the whole study, when the same command has finished every run
    metrics = []
    for task, entry in aggregated["tasks"].items():
        for name in entry["headline"]:
            values = entry["metrics"][name]
            metrics += [(f"{task}/{name}", values["mean"], 0), (f"{task}/{name}_std", values["std"], 0)]
    parent.log_metrics(metrics)
