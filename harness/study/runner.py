"""``harness study``: one set of flags over every task and seed, and what holds across them.

Each (task, seed) is a plain `harness run` (`harness.run.pipeline.run`): its own run folder,
stored results and MLflow run, here a child of the study's parent run (tags task, seed,
model, study). A (task, seed) whose summary holds every analysis asked for and whose MLflow
run is FINISHED is not run again, so the same command after a stop does only what is
missing; one that fails is reported at the end while the others go on; a task without
data is named and skipped before any work.

What the study says is computed from the runs' stored summaries only (`aggregate`, with
`harness.study.aggregate`), and the seconds each run spent from its MLflow record. It is
written to ``<output_dir>/studies/<name>/study.json``; the cross-task figures and tables
(`harness.present.study_figures`) are drawn from that file, and the parent MLflow run gets its
headline means once every (task, seed) has finished.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path

from harness.analyses import ANALYSES
from harness.analyses.base import INTERVENES
from harness.config import RunConfig, StudyConfig
from harness.inputs.sources import SOURCES
from harness.present.study_figures import draw_study
from harness.results.locking import exclusive
from harness.results.run_record import RunSummary
from harness.results.store import key_of, write_json
from harness.results.study_record import BetweenSeeds, Spread, StudyDescription, StudyFindings, StudyRecord
from harness.results.summary import STUDIES, STUDY, SUMMARY, flatten, seal, stored_summary
from harness.run.plan import Downloads, RunPlan, plan_run
from harness.run.tracking import (
    PARENT_TAG,
    TRAIN_SECONDS,
    Tracker,
    check_store,
    is_finished,
    seconds_metric,
    timed_along,
)
from harness.study.aggregate import findings, judged_tasks, learning, task_aggregate
from harness.study.between_seeds import between_seeds
from harness.study.executors import Job, run_inline, run_on_ray
from harness.views.base import Failures, attempt
from harness.views.seeds import spread
from tasks.errors import InputError
from tasks.glue_tsv import split_path
from tasks.progress import progress_bar

FINE_TUNING, ANALYSES_PHASE = "fine-tuning", "analyses"  # a study's phases besides each source read to intervene


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
        """``<output_dir>/studies/<name>``: study.json and the cross-task figures."""
        return self.runs[0].config.environment.output_dir / STUDIES / self.name

    @property
    def model(self) -> str:
        """The model every run of the study fine-tunes."""
        return self.runs[0].config.task.model


def missing_data(config: RunConfig) -> str | None:
    """Why ``config``'s GLUE task cannot run from its GLUE folder (a split file missing), else None
    (GLUE from the hub, and any other task, is found or not when the run reads it)."""
    task = config.task.definition
    if config.task.data_dir is None or task.glue is None:
        return None
    try:
        for split in ("train", *task.eval_splits):
            split_path(config.task.data_dir, task, split)
    except InputError as error:
        return str(error).split(":")[0]
    return None


def shared_flags(config: RunConfig) -> dict[str, str]:
    """The flags every run of a study shares: its settings without the task and the seed (and the
    processes that draw, which change no figure)."""
    left_out = ("task.task", "finetune.seed", "environment.figure_processes")
    return {name: value for name, value in flatten("", config).items() if name not in left_out}


def plan_study(settings: StudyConfig, configs: list[RunConfig]) -> StudyPlan:
    """Every (task, seed) run planned (data read and checked, run keys), tasks without data set
    aside; the study's key is made of its tasks, seeds and shared flags: the same command is
    the same study (its parent MLflow run is found again), other settings another."""
    skipped = {config.task.name: why for config in configs if (why := missing_data(config))}
    plans, failed, downloads = [], {}, Downloads()  # one Downloads: an unreachable corpus is tried once
    for config in configs:
        if config.task.name in skipped:
            continue
        try:
            plans.append(plan_run(config, downloads))
        except InputError as error:  # a malformed file of one task: its runs fail, the others go on
            failed[run_label(config)] = str(error)
    if not plans:
        raise InputError(
            "no (task, seed) of the study can run: "
            + "; ".join([*(f"{t}: {why}" for t, why in skipped.items()), *failed.values()])
        )
    key = key_of({"tasks": settings.tasks, "seeds": settings.seeds, "flags": shared_flags(configs[0])})
    name = settings.name or f"study-{plans[0].config.model_name}-{key[:8]}"
    return StudyPlan(settings, plans, skipped, failed, key, name)


def is_done(plan: RunPlan) -> bool:
    """Whether the (task, seed) of ``plan`` is finished: a whole summary with every analysis
    asked for at its current version, and a FINISHED MLflow run."""
    summary = stored_summary(plan.run_dir / SUMMARY)
    if summary is None:
        return False
    entries = summary["analyses"]
    whole = all(
        analysis.name in entries and entries[analysis.name]["version"] == analysis.version for analysis in plan.analyses
    )
    return whole and is_finished(plan.config.environment.tracking_uri, plan.key)


def run_label(config: RunConfig) -> str:
    """How a study names one of its runs (progress, failures): ``rte seed 42``."""
    return f"{config.task.name} seed {config.finetune.seed}"


def run_all(plan: StudyPlan, child_tags: dict[str, str]) -> dict[str, str]:
    """Every unfinished (task, seed) of the study on its engine, under one progress bar;
    returns ``{run label: error}`` of those that failed (the rest went on)."""
    jobs = [Job(run_label(run.config), run.config, child_tags) for run in plan.runs if not is_done(run)]
    with progress_bar(
        total=len(plan.runs), initial=len(plan.runs) - len(jobs), desc=f"study {plan.name}", unit="run", position=0
    ) as bar:
        if not jobs:
            return dict(plan.failed)
        ran = run_on_ray(jobs, plan.settings, bar) if plan.settings.engine == "ray" else run_inline(jobs, bar)
    return {**plan.failed, **ran}


def study(plan: StudyPlan) -> tuple[StudyRecord, list[Path], str, str]:
    """Run the study (see the module's docstring); returns the aggregate written to
    ``study.json``, the figure and table files, the parent MLflow run's page and the compare
    view of its (task, seed) runs.

    A second identical study started meanwhile waits on the study's lock and then finds every
    run done; the parent run ends KILLED on Ctrl-C or SIGTERM, FAILED when a (task, seed)
    failed (the same command again retries it), FINISHED otherwise.
    """
    environment = plan.runs[0].config.environment
    check_store(environment.tracking_uri)
    with exclusive(environment.cache_dir / "locks" / f"study-{plan.key}.lock", f"the study {plan.name}"):
        parent = Tracker(
            environment.tracking_uri,
            f"study-{plan.key}",
            plan.name,
            {"study": plan.name, "model": plan.model, "harness.kind": "study"},
        )
        try:
            failures = run_all(plan, {"study": plan.name, PARENT_TAG: parent.run_id})
            lost: Failures = {}
            finished = [run for run in plan.runs if run_label(run.config) not in failures]
            between: dict[str, BetweenSeeds] = attempt(lost, "between seeds", partial(between_seeds, finished), {})
            aggregated = aggregate(plan, failures, parent.children_seconds(timed_sources()), between, lost)
            write_study(plan.folder, aggregated)
            files = (
                []
                if environment.no_figures
                else draw_study(
                    aggregated,
                    plan.folder / "figures",
                    aggregated["aggregation_failed"],
                    environment.figure_formats,
                    environment.figure_processes,
                )
            )
            if aggregated["aggregation_failed"]:
                write_study(plan.folder, aggregated)  # with the figures that could not be drawn
            log_study(parent, plan, aggregated, files)
        except KeyboardInterrupt:
            parent.finish("KILLED")
            raise
        except BaseException:
            parent.finish("FAILED")
            raise
        parent.finish("FAILED" if failures or aggregated["aggregation_failed"] else "FINISHED")
    return aggregated, files, parent.page(), parent.compare_page(parent.children())


def write_study(folder: Path, aggregated: StudyRecord) -> None:
    """study.json in the study's folder, and its seal in the results store."""
    write_json(folder / STUDY, aggregated)
    seal(folder, aggregated)


def aggregate(
    plan: StudyPlan,
    failures: dict[str, str],
    seconds: dict[str, dict[str, float]],
    between: dict[str, BetweenSeeds] | None = None,
    lost: Failures | None = None,
) -> StudyRecord:
    """The study from its runs' stored summaries (finished runs only), with the seconds each
    run's MLflow record logged (``{run key: {metric: seconds}}``) and the cosine between its
    seeds' fine-tuned models (``between``, `harness.study.between_seeds`). What cannot be
    aggregated is named under ``aggregation_failed`` (with what ``lost`` already names) and the
    rest is kept: the study never ends without its study.json, whatever one analysis's code does."""
    by_task: dict[str, dict[int, RunSummary]] = {}
    for run_plan in plan.runs:
        summary = stored_summary(run_plan.run_dir / SUMMARY)
        if summary is not None and run_label(run_plan.config) not in failures:
            by_task.setdefault(run_plan.config.task.name, {})[run_plan.config.finetune.seed] = summary
    lost = {} if lost is None else lost
    nothing: StudyFindings = {
        "tasks": {},
        "special_tokens": None,
        "learning": {},
        "findings_from": plan.settings.findings_from,
        "judged_tasks": [],
        "kept_out_of_findings": {},
        "seconds": {},
        "findings": {},
    }
    said = attempt(
        lost, "the study's aggregation", partial(across_runs, plan, by_task, seconds, between or {}, lost), nothing
    )
    return {**described_study(plan, failures), **said, "aggregation_failed": lost}


def across_runs(
    plan: StudyPlan,
    by_task: dict[str, dict[int, RunSummary]],
    seconds: dict[str, dict[str, float]],
    between: dict[str, BetweenSeeds],
    lost: Failures,
) -> StudyFindings:
    """What the runs' summaries say across seeds and tasks (`aggregate`); a view that fails is named in ``lost``."""
    tasks = {
        task: task_aggregate(summaries, lost) | ({"between_seeds": between[task]} if task in between else {})
        for task, summaries in by_task.items()
    }
    checked = learning(by_task)
    judged, kept_out = judged_tasks(checked, plan.settings.findings_from)
    per_task: dict[str, dict[str, Spread]] = attempt(
        lost, "seconds per task", partial(task_seconds, plan, by_task, seconds), {}
    )
    return {
        "tasks": tasks,
        "special_tokens": next(
            (summary["run"].get("special_tokens") for seeds in by_task.values() for summary in seeds.values()), None
        ),
        "learning": checked,
        "findings_from": plan.settings.findings_from,
        "judged_tasks": judged,
        "kept_out_of_findings": kept_out,
        "seconds": per_task,
        "findings": findings(by_task, judged, lost, between),
    }


def described_study(plan: StudyPlan, failures: dict[str, str]) -> StudyDescription:
    """What the study is, whatever its runs hold: model, tasks and seeds asked, recipes, what was skipped or
    failed, its runs."""
    return {
        "schema": 2,
        "name": plan.name,
        "key": plan.key,
        "model": plan.model,
        "tasks_asked": plan.settings.tasks,
        "seeds_asked": plan.settings.seeds,
        "recipes": {
            run.config.task.name: {k: v for k, v in asdict(run.config.finetune).items() if k != "seed"}
            for run in plan.runs
        },
        "skipped": plan.skipped,
        "failed": failures,
        "analyses_skipped": {name: why for run in plan.runs for name, why in run.skipped.items()},
        "runs": [
            {"task": r.config.task.name, "seed": r.config.finetune.seed, "key": r.key, "folder": r.run_dir.name}
            for r in plan.runs
        ],
    }


def task_seconds(
    plan: StudyPlan, by_task: dict[str, dict[int, RunSummary]], seconds: dict[str, dict[str, float]]
) -> dict[str, dict[str, Spread]]:
    """Per task, over its finished seeds: the seconds of fine-tuning, of the analyses, and of each
    source read to intervene (the ablation's dev sample, named after it) over the seeds it ran on
    (a CPU study's ``harness ablate`` on one seed), each as a spread over those seeds."""
    timed, intervening = timed_sources(), intervening_sources()
    per_task: dict[str, dict[str, list[float]]] = {}
    for run in plan.runs:
        logged = seconds.get(run.key)
        if logged is None or run.config.finetune.seed not in by_task.get(run.config.task.name, {}):
            continue
        spent = per_task.setdefault(
            run.config.task.name, {FINE_TUNING: [], ANALYSES_PHASE: [], **{source: [] for source in intervening}}
        )
        spent[FINE_TUNING].append(logged.get(TRAIN_SECONDS, 0.0))
        phases = {ANALYSES_PHASE: 0.0}
        for name, value in logged.items():
            if name in timed:
                phase = timed[name] if timed[name] in intervening else ANALYSES_PHASE
                phases[phase] = phases.get(phase, 0.0) + value
        for phase, value in phases.items():
            spent[phase].append(value)
    return {
        task: {phase: spread(values) for phase, values in spent.items() if values} for task, spent in per_task.items()
    }


def timed_sources() -> dict[str, str]:
    """``{MLflow metric: source}`` of the seconds a run logs per source (`seconds_metric`), on the
    final checkpoints and along fine-tuning."""
    return {seconds_metric(timed): source for source in SOURCES for timed in (source, timed_along(source))}


def intervening_sources() -> list[str]:
    """The sources that analyses read only to intervene (the ablation's and the transplant's dev
    sample): a study times them apart from the analyses, being GPU work a CPU study runs on one seed."""
    return list(dict.fromkeys(analysis.source for analysis in ANALYSES.values() if INTERVENES in analysis.needs))


def log_study(parent: Tracker, plan: StudyPlan, aggregated: StudyRecord, files: list[Path]) -> None:
    """The parent MLflow run: the study's settings as params, and, once every (task, seed)
    finished, each task's headline metrics as ``<task>/<metric>`` (mean over seeds) and
    ``<task>/<metric>_std``, with study.json and the figures as artifacts."""
    per_task = {"finetune.epochs", "finetune.learning_rate"}  # a recipe may differ by task: logged per task
    parent.log_params(
        {
            "study.tasks": ",".join(plan.settings.tasks),
            "study.seeds": str(plan.settings.seeds),
            "study.skipped": ",".join(plan.skipped) or "-",
            **{k: v for k, v in shared_flags(plan.runs[0].config).items() if k not in per_task},
            **{
                f"recipe.{run.config.task.name}": (
                    f"lr {run.config.finetune.learning_rate:g}, epochs {run.config.finetune.epochs:g}"
                )
                for run in plan.runs
            },
        }
    )
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
