"""The commands that plan runs and load models: run, study, finetune, ablate, figures, annotate, maps."""

from __future__ import annotations

import time
from dataclasses import asdict, replace

from harness.analyses.ablation import Ablation
from harness.analyses.transplant import Transplant
from harness.commands.stored import figures as redraw_folder
from harness.config import (
    AnnotationConfig,
    FiguresConfig,
    FineTuneConfig,
    MapsConfig,
    RunConfig,
    StudyConfig,
)
from harness.model.finetune import finetune as finetune_task
from harness.model.finetune import is_main_process, leave_process_group, stored_result
from harness.model.loading import load_tokenizer
from harness.present.maps import MAPS_FOLDER, PAGE, PREDICTED_BY
from harness.recipes import describe_recipe
from harness.results.run_record import RunSummary
from harness.results.summary import SUMMARY
from harness.run.annotation import annotate as annotate_pool
from harness.run.maps import typed_maps
from harness.run.pipeline import dev_evaluation, run_planned, train_baselines
from harness.run.plan import Downloads, find_run, plan_run, skipped_line
from harness.run.preview import dry_run_lines, trajectory_plan
from harness.study.runner import plan_study
from harness.study.runner import study as run_study
from harness.views import trajectory as trajectory_view
from harness.views.ablation import AblationSwitch
from harness.views.evaluation import EvaluationView
from harness.views.papers import paper_line
from harness.views.summary import printed_lines, summary_metrics
from harness.views.transplant import TransplantSwitch
from tasks.errors import InputError


def recipe_line(settings: FineTuneConfig) -> str:
    """Which recipe the run trains with, first thing printed: the preset is chosen silently otherwise."""
    return f"fine-tuning recipe: {describe_recipe(asdict(settings))} (--recipe, --learning-rate, --epochs change it)"


def dry_run(config: RunConfig) -> None:
    """``harness run --dry-run``: what the run would read, its key and folder and its cost, and nothing done."""
    for line in dry_run_lines(plan_run(config, Downloads(allowed=False))):
        print(line)


def run(config: RunConfig) -> None:
    """``harness run``: the whole run, then what each analysis says, the MLflow page and the wall time."""
    start = time.perf_counter()
    plan = plan_run(config)  # bad input is one line before anything is said of the run
    print(recipe_line(config.finetune))
    print_skipped(plan.skipped)
    along = trajectory_plan(plan, load_tokenizer(config.task.model))
    if along:
        print(along)
    finished = run_planned(plan)
    print(f"done: {finished.run_dir / SUMMARY}")
    if config.environment.no_figures:
        print(f"  figures: not drawn (--no-figures); `harness figures {finished.run_dir}` draws them")
    print_lines(finished.summary)
    if (
        Ablation.name not in finished.summary["analyses"]
        and AblationSwitch.of(config.analysis).ablation == "auto"
        and not plan.data.task.is_tagging
    ):
        print(
            "  ablation (head disabling, importance, pruning) is off on the CPU: `harness ablate` with "
            "the same flags runs it on the stored checkpoint (minutes), or pass --ablation on"
        )
    if (
        Transplant.name not in finished.summary["analyses"]
        and TransplantSwitch.of(config.analysis).transplant == "auto"
    ):
        print(
            "  transplant (the pre-trained attention in the fine-tuned model) is off on the CPU: the same "
            "command with --transplant on adds it, reusing the stored checkpoint and results (minutes)"
        )
    print_mlflow_page(config.environment.tracking_uri, finished.page)
    print(f"  MLflow, pre-trained and fine-tuned side by side: http://127.0.0.1:5000/{finished.compare}")
    print_wall_time(finished.phases, start)


def print_skipped(skipped: dict[str, str]) -> None:
    """The one line naming the analyses left out for want of their data, when there are any."""
    line = skipped_line(skipped)
    if line:
        print(line)


def print_lines(summary: RunSummary) -> None:
    """What each analysis says in the terminal (`harness.views.base.View.printed`), then the trajectory along
    fine-tuning, where the run kept one."""
    lines = printed_lines(summary)
    if trajectory_view.points_of(summary) and EvaluationView.name in summary["analyses"]:
        lines += trajectory_view.printed(
            summary, summary_metrics(summary), EvaluationView.main_score(summary["analyses"][EvaluationView.name])
        )
    for line in lines:
        print(f"  {line}")


def study(settings: StudyConfig, configs: list[RunConfig]) -> bool:
    """Every (task, seed) of the study, then what holds across them; False when a run failed or a part
    of the study could not be aggregated."""
    start = time.perf_counter()
    plan = plan_study(settings, configs)
    for task, why in plan.skipped.items():
        print(f"skipped {task}: no data ({why})")
    for line in dict.fromkeys(skipped_line(run.skipped) for run in plan.runs):  # each run's settings are the same
        if line:
            print(line)
    tasks = list(dict.fromkeys(run.config.task.name for run in plan.runs))
    print(f"study {plan.name}: {len(plan.runs)} runs ({', '.join(tasks)}; {settings.seeds} seeds each)")
    aggregated, files, page, compare = run_study(plan)
    drawn = (
        "figures not drawn: --no-figures"
        if configs[0].environment.no_figures
        else f"{len(files)} figures and tables in {plan.folder / 'figures'}"
    )
    print(f"done: {plan.folder / 'study.json'} ({drawn})")
    for finding in aggregated["findings"].values():
        print(f"  {finding['text']}" + (f"; {paper_line(finding['paper'])}" if "paper" in finding else ""))
    for task, why in aggregated["kept_out_of_findings"].items():
        print(f"  not in the findings: {task}: {why}")
    if aggregated["kept_out_of_findings"] and not aggregated["judged_tasks"]:
        print(
            "  no task was learned on every seed, so no finding is judged: fine-tune on more examples "
            "(--max-train-examples) or for more epochs (--epochs), or judge every task anyway, as an exploration "
            "(--findings-from all)"
        )
    for label, error in aggregated["failed"].items():
        print(f"  failed: {label}: {error} (the same command again retries it)")
    for what, error in aggregated["aggregation_failed"].items():
        print(f"  not aggregated: {what}: {error} (the runs are kept; the same command again aggregates anew)")
    print_mlflow_page(configs[0].environment.tracking_uri, page)
    print(f"  MLflow, every (task, seed) side by side: http://127.0.0.1:5000/{compare}")
    print(f"  wall time: {time.perf_counter() - start:.1f} s")
    return not aggregated["failed"] and not aggregated["aggregation_failed"]


def print_mlflow_page(tracking_uri: str, page: str) -> None:
    """Where the MLflow UI shows the run (or study) just made."""
    print(f"  MLflow: http://127.0.0.1:5000/{page} while `mlflow ui --backend-store-uri {tracking_uri}` serves it")


def print_wall_time(phases: dict[str, float], start: float) -> None:
    """The seconds of each phase and of the whole command since ``start``."""
    print(
        "  wall time: "
        + ", ".join(f"{phase} {seconds:.1f} s" for phase, seconds in phases.items())
        + f"; total {time.perf_counter() - start:.1f} s"
    )


def ablate(config: RunConfig) -> None:
    """Disabling, importance and pruning of the stored fine-tuned checkpoint of these flags,
    added to the run folder's summary (nothing else is recomputed)."""
    start = time.perf_counter()
    switched = asdict(AblationSwitch(ablation="on"))
    plan = plan_run(replace(config, analysis=replace(config.analysis, analyses=[Ablation.name], **switched)))
    if stored_result(plan.config, plan.data) is None:
        raise InputError(
            f"no fine-tuned checkpoint for these flags under {config.environment.cache_dir}: run "
            "`harness run` (or `finetune`) with the same flags first"
        )
    finished = run_planned(plan)
    print(f"done: {finished.run_dir / SUMMARY}")
    print_lines({**finished.summary, "analyses": {Ablation.name: finished.summary["analyses"][Ablation.name]}})
    print_mlflow_page(config.environment.tracking_uri, finished.page)
    print_wall_time(finished.phases, start)


def finetune(config: RunConfig) -> None:
    """``harness finetune``: the checkpoint (and baselines) only, then their dev scores; under several
    processes every rank trains and the main one alone prints."""
    plan = plan_run(config, Downloads(allowed=False))  # fine-tuning reads no corpus
    if is_main_process():
        print(recipe_line(config.finetune))
    result = finetune_task(plan.config, plan.data)
    baselines = train_baselines(plan)
    leave_process_group()
    if not is_main_process():
        return
    print(f"fine-tuned checkpoint: {result.checkpoint_dir}")
    for name, baseline in baselines.items():
        print(f"{name} baseline: {baseline.checkpoint_dir}")
    for line in EvaluationView.printed(dev_evaluation(plan, result, baselines)):
        print(f"  {line}")


def figures(config: RunConfig, settings: FiguresConfig) -> None:
    """The figures of the run these flags name (found by planning it), drawn again."""
    redraw_folder(replace(settings, run_folder=find_run(config)), config.environment)


def annotate(config: RunConfig, annotation: AnnotationConfig) -> None:
    """``harness annotate``: a labelling pool of attention maps, or its labels recorded."""
    print(annotate_pool(config, annotation))


def maps(config: RunConfig, settings: MapsConfig) -> None:
    """``harness maps``: a typed text (or pair) through the run's two checkpoints; where its maps
    and their page are, and which heads changed most on it."""
    plan = plan_run(config, Downloads(allowed=False))
    typed = typed_maps(plan, settings.text, settings.pair)
    folder = plan.run_dir / MAPS_FOLDER
    layers = " ".join(f"{value:.3f}" for value in typed.head_cosines().mean(axis=1))
    layer, head, cosine = typed.most_changed()
    cut = f" (cut to --max-length {config.task.max_length})" if typed.truncated else ""
    print(f"maps of {len(typed.tokens)} tokens{cut}: {folder / PAGE} (every input typed for this run)")
    print(f"  cosine per layer (pretrained->finetuned), mean over heads: {layers}")
    print(f"  most changed head on it: {layer}-{head}, cosine {cosine:.3f}")
    print(
        "  predicted: "
        + "; ".join(f"{PREDICTED_BY[name]} {prediction}" for name, prediction in typed.predictions.items())
    )
    print("  arrays from Python: harness.present.maps.run_inputs(run folder)")
