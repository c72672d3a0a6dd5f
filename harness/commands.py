"""What each subcommand does, once its flags are valid (see `harness.cli`)."""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, replace

import transformers

from harness.analyses.ablation import Ablation, summary_lines
from harness.analyses.evaluation import Evaluation, dev_metrics, learning_warning
from harness.run.annotation import annotate as annotate_pool
from harness.config import (AnnotationConfig, DocsConfig, EnvironmentConfig, FineTuneConfig, ReportConfig, RunConfig,
                            StudyConfig, describe_recipe)
from harness.present.doc_tables import documents, rebuild, take_run
from harness.model.finetune import finetune as finetune_task
from harness.model.finetune import is_main_process, leave_process_group, stored_result
from harness.run.pipeline import evaluate, find_summary, plan_run, train_baselines
from harness.run.pipeline import run as run_pipeline
from harness.present.redraw import redraw
from harness.present.report import build_report
from harness.study.runner import plan_study
from harness.study.runner import study as run_study
from tasks.errors import InputError


def quiet_libraries(debug: bool) -> None:
    """Keep the terminal to progress bars and results unless ``--debug``."""
    if not debug:
        transformers.logging.set_verbosity_error()
        transformers.logging.disable_progress_bar()  # weight-loading bars; the harness shows its own
        logging.getLogger("mlflow").setLevel(logging.WARNING)


def recipe_line(settings: FineTuneConfig) -> str:
    """Which recipe the run trains with, first thing printed: the preset is chosen silently otherwise."""
    return f"fine-tuning recipe: {describe_recipe(asdict(settings))} (--recipe, --learning-rate, --epochs change it)"


def run(config: RunConfig) -> None:
    start = time.perf_counter()
    print(recipe_line(config.finetune))
    summary, phases, page = run_pipeline(config)
    print(f"done: {plan_run(config).run_dir / 'summary.json'}")
    print_dev_metrics(summary["analyses"][Evaluation.name])
    warning = learning_warning(summary["analyses"][Evaluation.name])
    if warning:
        print(f"  {warning}")
    cosine = summary["analyses"].get("cosine")
    if cosine:
        for pair, stats in cosine["result"]["per_pair"].items():
            print(f"  cosine per layer ({pair}): " + " ".join(f"{v:.3f}" for v in stats["per_layer"]))
    print_ablation(summary)
    if Ablation.name not in summary["analyses"] and config.analysis.ablation == "auto":
        print("  ablation (head disabling, importance, pruning) is off on the CPU: `python -m harness ablate` with "
              "the same flags runs it on the stored checkpoint (minutes), or pass --ablation on")
    print_mlflow_page(config.environment.tracking_uri, page)
    print_wall_time(phases, start)


def study(settings: StudyConfig, configs: list[RunConfig]) -> bool:
    """Every (task, seed) of the study, then what holds across them; False when a run failed."""
    start = time.perf_counter()
    plan = plan_study(settings, configs)
    for task, why in plan.skipped.items():
        print(f"skipped {task}: no data ({why})")
    tasks = list(dict.fromkeys(run.config.task.task for run in plan.runs))
    print(f"study {plan.name}: {len(plan.runs)} runs ({', '.join(tasks)}; {settings.seeds} seeds each)")
    aggregated, files, page = run_study(plan)
    print(f"done: {plan.folder / 'study.json'} ({len(files)} figures and tables in {plan.folder / 'figures'})")
    for finding in aggregated["findings"].values():
        print(f"  {finding['text']}")
    for label, error in aggregated["failed"].items():
        print(f"  failed: {label}: {error} (the same command again retries it)")
    print_mlflow_page(configs[0].environment.tracking_uri, page)
    print(f"  wall time: {time.perf_counter() - start:.1f} s")
    return not aggregated["failed"]


def print_mlflow_page(tracking_uri: str, page: str) -> None:
    print(f"  MLflow: http://127.0.0.1:5000/{page} while `mlflow ui --backend-store-uri {tracking_uri}` serves it")


def print_wall_time(phases: dict[str, float], start: float) -> None:
    print("  wall time: " + ", ".join(f"{phase} {seconds:.1f} s" for phase, seconds in phases.items())
          + f"; total {time.perf_counter() - start:.1f} s")


def print_ablation(summary: dict) -> None:
    entry = summary["analyses"].get(Ablation.name)
    for line in summary_lines(entry) if entry else []:
        print(f"  {line}")


def ablate(config: RunConfig) -> None:
    """Disabling, importance and pruning of the stored fine-tuned checkpoint of these flags,
    added to the run folder's summary (nothing else is recomputed)."""
    start = time.perf_counter()
    plan = plan_run(config)
    if stored_result(plan.config, plan.data) is None:
        raise InputError(f"no fine-tuned checkpoint for these flags under {config.environment.cache_dir}: run "
                         "`python -m harness run` (or `finetune`) with the same flags first")
    summary, phases, page = run_pipeline(replace(config, analysis=replace(config.analysis, analyses=[Ablation.name],
                                                                          ablation="on")))
    print(f"done: {plan.run_dir / 'summary.json'}")
    print_ablation(summary)
    print_mlflow_page(config.environment.tracking_uri, page)
    print_wall_time(phases, start)


def finetune(config: RunConfig) -> None:
    if is_main_process():
        print(recipe_line(config.finetune))
    plan = plan_run(config)
    result = finetune_task(plan.config, plan.data)
    baselines = train_baselines(plan)
    leave_process_group()
    if not is_main_process():
        return
    print(f"fine-tuned checkpoint: {result.checkpoint_dir}")
    for name, baseline in baselines.items():
        print(f"{name} baseline: {baseline.checkpoint_dir}")
    print_dev_metrics(evaluate(plan, result, baselines))


def print_dev_metrics(entry: dict) -> None:
    for checkpoint, scores in dev_metrics(entry).items():
        print(f"  dev {checkpoint}: " + ", ".join(f"{k} {v:.4f}" for k, v in scores.items()))


def figures(config: RunConfig) -> None:
    run_dir, summary = find_summary(config)
    for figure in redraw(summary, run_dir / "figures", force=True):
        print(figure)


def docs(settings: DocsConfig) -> bool:
    """Store the named runs' results (``--run``), then rebuild (or ``--check``) every table
    block of the README and docs; False when a check found differences."""
    for label, folder in settings.runs.items():
        print(f"stored {label}: {take_run(label, folder)}")
    differing = rebuild(documents(), check=settings.check)
    verb = "differs from its stored results" if settings.check else "rebuilt"
    for block in differing:
        print(f"{block}: {verb}")
    if not differing:
        print("every table agrees with its stored results")
    return not (settings.check and differing)


def annotate(config: RunConfig, annotation: AnnotationConfig) -> None:
    print(annotate_pool(config, annotation))


def report(settings: ReportConfig, environment: EnvironmentConfig) -> None:
    """One static HTML page of the stored study (or runs), with its figures copied beside it."""
    page, figures = build_report(settings, environment)
    print(f"report: {page} ({figures} figures in {page.parent / 'figures'}; open it in a browser, no server needed)")
