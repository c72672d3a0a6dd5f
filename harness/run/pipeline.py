"""``harness run``: config -> fine-tune -> checkpoints -> sources -> forward -> analyses ->
results store -> summary -> MLflow -> figures.

`harness.run.plan` does everything cheap first, so bad input fails before any model work;
the run folder's ``summary.json`` gathers every analysis computed under that key (an earlier, fuller run is
kept when a later one asks for fewer analyses), and the figures are drawn from it alone.
Results live in the shared store ``<output_dir>/store/`` (see `harness.results.store`), so an
interrupted run resumes with only the missing work, and results that do not depend on the
task (the pre-trained model on the treebank) are computed once per model.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from transformers import PreTrainedTokenizerBase

from harness.analyses import ANALYSES
from harness.analyses.evaluation import Evaluation
from harness.config import DATASET_FLAGS, RunConfig
from harness.config_files import RUN_SETTINGS, settings_file
from harness.inputs.sampling import sample
from harness.inputs.sources import SourceContext
from harness.model.finetune import FineTuneResult, finetune
from harness.model.loading import (
    Checkpoint,
    load_finetuned,
    load_sequence_classifier,
    load_tokenizer,
    prepare,
    pretrained_identity,
)
from harness.present.redraw import redraw
from harness.results.checkpoints import (
    BASELINE_PAIRS,
    BASELINES,
    FINETUNED,
    PAIRS,
    PRETRAINED,
)
from harness.results.entries import AnyEntry
from harness.results.locking import exclusive
from harness.results.run_record import RunSection, RunSummary
from harness.results.store import CheckpointIdentity, ResultStore, Settings, SourceIdentity, read_json, write_json
from harness.results.summary import SUMMARY, flatten, seal, stored_summary
from harness.run.engine import analyse
from harness.run.plan import RunPlan, plan_run, run_device
from harness.run.provenance import code_version, data_provenance, model_provenance
from harness.run.tracking import (
    CHECKPOINT_TAG,
    PARENT_TAG,
    SKIPPED_TAG,
    TRAIN_SECONDS,
    Tracker,
    check_store,
    seconds_metric,
    timed_along,
    training_curve,
)
from harness.run.trajectory import PREFIX as TRAJECTORY_PREFIX
from harness.run.trajectory import step_name, trajectory, trajectory_metrics
from harness.views.metrics import Metric, values
from harness.views.summary import headline_records, summary_records
from harness.views.titles import checkpoint_title
from harness.views.trajectory import step_charts
from tasks.collector import frozen_heap
from tasks.errors import InputError
from tasks.files import DiskFull
from tasks.spec import is_spec_path

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
CHECKPOINT_ARTIFACT = "checkpoint"  # the fine-tuned model in MLflow (weights, config with label names, tokenizer)
VARIED = ("task.", "finetune.")  # the groups of settings logged as MLflow params (`varied_settings`)
VARIED_ALONE = ("environment.precision", "analysis.analyses")
TIMINGS = ".timings.json"  # the seconds of the sources streamed so far, until they are on the MLflow run
HEADLINE = "headline"  # MLflow's charts group metrics by the prefix before "/": the short list is one section


def run_dtype(config: RunConfig) -> torch.dtype:
    """The precision a run's checkpoints are analysed in: the run's on a GPU, fp32 on a CPU."""
    return DTYPES[config.environment.precision] if run_device(config).type == "cuda" else torch.float32


def trained_checkpoint(config: RunConfig, name: str, result: FineTuneResult) -> Checkpoint:
    """A trained checkpoint of ``config``'s model (``result``: the fine-tune or a baseline) under
    ``name``, on the run's device and precision, identified by its fine-tune key."""
    return Checkpoint(
        name,
        prepare(load_finetuned(result.checkpoint_dir), run_device(config), run_dtype(config)),
        {"model": config.task.model, "finetune_key": result.key, "layout": result.layout},
        {"trained": True},
    )


def along_the_way(config: RunConfig, tuned: FineTuneResult) -> list[Checkpoint]:
    """The checkpoints kept part-way through the fine-tuning of ``tuned`` (``--trajectory``),
    earliest first, each named and identified by its step."""
    return [
        Checkpoint(
            step_name(record["step"]),
            prepare(load_finetuned(folder), run_device(config), run_dtype(config)),
            {"model": config.task.model, "finetune_key": tuned.key, "layout": tuned.layout, "step": record["step"]},
            {"trained": True, "step": record["step"]},
        )
        for record, folder in zip(tuned.trajectory, tuned.trajectory_dirs())
    ]


def load_checkpoints(
    plan: RunPlan, tuned: FineTuneResult, baselines: dict[str, FineTuneResult] | None = None
) -> list[Checkpoint]:
    """The pre-trained encoder (with the seeded, untrained head that was evaluated before
    fine-tuning), the fine-tuned checkpoint and any trained ``baselines`` ({name: result}),
    named, on the run's device and precision."""
    config = plan.config
    seed = config.finetune.seed
    pretrained = load_sequence_classifier(config.task.model, plan.data.task, head_seed=seed)
    return [
        Checkpoint(
            PRETRAINED,
            prepare(pretrained, run_device(config), run_dtype(config)),
            pretrained_identity(config.task.model, plan.hashes),
            {"trained": False, "seed": seed, "labels": plan.data.task.num_labels},
        ),
        trained_checkpoint(config, FINETUNED, tuned),
        *(trained_checkpoint(config, name, result) for name, result in (baselines or {}).items()),
    ]


def train_baselines(plan: RunPlan) -> dict[str, FineTuneResult]:
    """Kovaleva et al.'s baselines with the run's recipe (cached like the fine-tune), when asked for."""
    if not plan.config.finetune.baselines:
        return {}
    return {name: finetune(plan.config, plan.data, name) for name in BASELINES}


def evaluation_entry(
    plan: RunPlan, checkpoints: list[Checkpoint], sources: SourceContext, store: ResultStore
) -> AnyEntry:
    """The ``evaluation`` entry of every checkpoint, baselines included, with the baseline pairs
    (stored results of any checkpoint are reused)."""
    pairs = PAIRS + [pair for pair in BASELINE_PAIRS if pair[0] in {c.name for c in checkpoints}]
    return analyse([Evaluation], checkpoints, pairs, sources, store)[Evaluation.name]


def run_description(
    plan: RunPlan,
    tuned: FineTuneResult,
    checkpoints: list[Checkpoint],
    dev_sample: list,
    tokenizer: PreTrainedTokenizerBase,
) -> RunSection:
    """The ``run`` part of summary.json: what was fine-tuned and compared (the dev scores are
    the ``evaluation`` analysis's entry), the model's id and revision (``provenance``), its own
    special tokens by role (``special_tokens``, which the figures and tables name), and the
    analyses left out (``skipped``)."""
    config = plan.config
    model_config = checkpoints[0].model.config
    return {
        "task": config.task.name,
        "model": config.task.model,
        "provenance": {**model_provenance(config.task.model), **data_provenance(plan.data.task)},
        "seed": config.finetune.seed,
        "key": plan.key,
        "finetune_key": plan.finetune_key,
        "num_layers": model_config.num_hidden_layers,
        "num_heads": model_config.num_attention_heads,
        "eval_split": plan.data.task.main_eval_split,
        "num_eval_examples": len(dev_sample),
        "train_examples": tuned.train_examples,
        "recipe": asdict(config.finetune),
        "precision": config.environment.precision,
        "checkpoints": {c.name: c.identity for c in checkpoints},
        "pairs": [list(pair) for pair in PAIRS],
        "special_tokens": {"[CLS]": tokenizer.cls_token, "[SEP]": tokenizer.sep_token},
        "skipped": plan.skipped,
    }


def merged_analyses(previous: RunSummary | None, entries: dict[str, AnyEntry]) -> dict[str, AnyEntry]:
    """Entries computed now, plus those an earlier run under the same key stored (current
    versions only), each with what it says together with the others (`Analysis.relate`)."""
    kept = {
        name: entry
        for name, entry in (previous["analyses"] if previous is not None else {}).items()
        if name in ANALYSES and entry.get("version") == ANALYSES[name].version
    }
    merged = {**kept, **entries}
    for name, entry in merged.items():
        entry.pop("related", None)
        related = ANALYSES[name].relate(entry, merged)
        if related is not None:
            entry["related"] = related
    return merged


def eval_identity(plan: RunPlan) -> SourceIdentity:
    """What each evaluation split is: ``{split: file and hash}``, or the hub dataset."""
    return {split: plan.data.identity.get(split, plan.data.identity) for split in plan.data.task.eval_splits}


def task_identity(plan: RunPlan, dev_sample: list) -> SourceIdentity:
    """What the task source's examples are: the dev data, the split, the sample size and seed."""
    split = plan.data.task.main_eval_split
    data = eval_identity(plan)[split]
    return {
        "task": plan.data.task.name,
        "split": split,
        "data": data,
        "examples": len(dev_sample),
        "sample_seed": plan.config.analysis.analysis_seed,
    }


@dataclass
class Finished:
    """A finished run: its folder, the summary written there, the wall seconds of each phase
    (fine-tuning, each source streamed, the rest), the MLflow run's page (`Tracker.page`) and the
    compare view of its checkpoints' child runs (`Tracker.compare_page`)."""

    run_dir: Path
    summary: RunSummary
    phases: dict[str, float]
    page: str
    compare: str


def run(config: RunConfig, tags: dict[str, str] | None = None) -> Finished:
    """The whole ``harness run`` of ``config`` (`run_planned` of its `plan_run`)."""
    return run_planned(plan_run(config), tags)


def run_planned(plan: RunPlan, tags: dict[str, str] | None = None) -> Finished:
    """The whole ``harness run`` of a plan; ``tags`` go on the MLflow run besides task, model
    and seed (a study's name and parent run).

    An identical command started meanwhile waits on the run's lock file (in the cache
    folder) and then finds everything done; the MLflow run ends KILLED on Ctrl-C or
    SIGTERM (see `harness.cli`), FAILED on an error, FINISHED otherwise.
    """
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        raise InputError(
            "harness run is one process; train on several with `torchrun ... -m harness finetune` "
            "(or accelerate launch), then run `harness run` with the same flags to analyse"
        )
    config = plan.config
    tokenizer = load_tokenizer(config.task.model)  # an unreachable model fails here, before any work
    check_store(config.environment.tracking_uri)
    with exclusive(config.environment.cache_dir / "locks" / f"run-{plan.key}.lock", f"the run {plan.run_dir.name}"):
        tracker = Tracker(
            config.environment.tracking_uri,
            plan.key,
            plan.run_dir.name,
            {"task": config.task.name, "model": config.task.model, "seed": str(config.finetune.seed), **(tags or {})},
        )
        try:
            with frozen_heap():  # what the run holds from here on is not rescanned by each collection
                summary, phases, children = analyse_and_log(plan, tokenizer, tracker)
        except KeyboardInterrupt:
            end_run(tracker, "KILLED")
            raise
        except BaseException:
            end_run(tracker, "FAILED")
            raise
        tracker.finish()
    return Finished(plan.run_dir, summary, phases, tracker.page(), tracker.compare_page(children))


def end_run(tracker: Tracker, status: str) -> None:
    """End the MLflow run of a run that stopped; when the store's own disk is full the run stays
    RUNNING (the rerun reopens it) and the error that stopped the run is the one reported."""
    try:
        tracker.finish(status)
    except DiskFull:
        pass


def analyse_and_log(
    plan: RunPlan, tokenizer: PreTrainedTokenizerBase, tracker: Tracker
) -> tuple[RunSummary, dict[str, float], list[str]]:
    """Fine-tune (or reuse), analyse both checkpoints, write summary.json and figures, log to
    MLflow (the run, and a child run per checkpoint); returns the summary, the seconds of each
    phase and the checkpoints' child run ids."""
    config = plan.config
    start = time.perf_counter()
    tuned = finetune(config, plan.data)
    baselines = train_baselines(plan)
    trained_now = tuned.trained_now or any(result.trained_now for result in baselines.values())
    phases = {"fine-tuning" if trained_now else "cached checkpoint": time.perf_counter() - start}
    checkpoints = load_checkpoints(plan, tuned, baselines)
    compared = [checkpoint for checkpoint in checkpoints if checkpoint.name in {PRETRAINED, FINETUNED}]
    pretrained, finetuned = compared  # in that order, as load_checkpoints loads them
    sources = source_context(plan, tokenizer)
    store = results_store(config)
    timings = Timings(plan.run_dir / TIMINGS)
    # With baselines the dev evaluation measures every checkpoint, so it is its own pass over dev.
    analyses = [analysis for analysis in plan.analyses if not (baselines and analysis is Evaluation)]
    entries = analyse(analyses, compared, PAIRS, sources, store, timings.record)
    if baselines:
        entries = {Evaluation.name: evaluation_entry(plan, checkpoints, sources, store), **entries}
    way = (
        trajectory(
            plan.along,
            pretrained,
            finetuned,
            along_the_way(config, tuned),
            tuned,
            sources,
            store,
            lambda source, seconds: timings.record(timed_along(source), seconds),
        )
        if tuned.trajectory
        else None
    )
    write_json(plan.run_dir / RUN_SETTINGS, recorded_settings(config))  # `harness run --config` takes it back
    summary_path = plan.run_dir / SUMMARY
    summary: RunSummary = {
        "schema": 2,
        "run": run_description(plan, tuned, checkpoints, sources.task_examples, tokenizer),
        "analyses": merged_analyses(stored_summary(summary_path), entries),
    }
    if way is not None:
        summary["trajectory"] = way
    write_json(summary_path, summary)
    seal(plan.run_dir, summary)
    phases |= timings
    environment, figures = config.environment, []
    if not environment.no_figures:
        start = time.perf_counter()
        formats, processes = environment.figure_formats, environment.figure_processes
        figures = redraw(summary, plan.run_dir / "figures", formats=formats, processes=processes)
        phases["figures"] = time.perf_counter() - start
    start = time.perf_counter()
    children = log_run(tracker, plan, tuned, summary, summary_path, figures, timings.logged)
    timings.path.unlink(missing_ok=True)  # on the MLflow run now
    return summary, {**phases, "MLflow": time.perf_counter() - start}, children


class Timings(dict[str, float]):
    """Each source's seconds in this attempt (printed), kept in the run folder as each source
    finishes (`TIMINGS`) with those of an earlier attempt that was killed, so that the resumed
    run's MLflow record gets the seconds of the sources streamed before the kill (`logged`)."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        earlier = read_json(path, note_damage=False)
        self.earlier: dict[str, float] = earlier if isinstance(earlier, dict) else {}

    def record(self, source: str, seconds: float) -> None:
        """The engine's ``on_source_done``."""
        self[source] = seconds
        write_json(self.path, self.logged)

    @property
    def logged(self) -> dict[str, float]:
        """The seconds of every source streamed for this run, in this attempt or a killed one before it."""
        return {**self.earlier, **self}


def recorded_settings(config: RunConfig) -> Settings:
    """The run's settings as its config.json keeps them: for a task of a spec file, the --dataset
    flags (which it does not take) say what the spec says, not the flags' defaults."""
    settings = settings_file(config)
    if config.task.dataset is None and is_spec_path(config.task.task):
        task = config.task.definition
        settings |= {
            "text_fields": [name for name in task.text_fields if name is not None],
            "label_field": task.label_field,
            "label_kind": task.label_kind,
            "train_split": task.train_split,
            "eval_split": list(task.eval_splits),
            **({"dataset_config": task.config} if task.config else {}),
        }
    return settings


def source_context(plan: RunPlan, tokenizer: PreTrainedTokenizerBase) -> SourceContext:
    """What the run's sources read: the seeded dev sample the analyses compare, and the whole
    evaluation splits."""
    config = plan.config
    dev = plan.data.dev[plan.data.task.main_eval_split]
    dev_sample = sample(dev, config.analysis.max_eval_examples, config.analysis.analysis_seed)
    return SourceContext(
        tokenizer,
        config.analysis,
        tokenizer_name=config.task.model,
        max_length=config.task.max_length,
        task=plan.data.task,
        task_examples=dev_sample,
        task_identity=task_identity(plan, dev_sample),
        eval_examples=plan.data.dev,
        eval_identity=eval_identity(plan),
        hashes=plan.hashes,
    )


def results_store(config: RunConfig) -> ResultStore:
    """The results store shared by every run under the output folder."""
    return ResultStore(config.environment.output_dir / "store")


def dev_evaluation(
    plan: RunPlan, tuned: FineTuneResult, baselines: dict[str, FineTuneResult] | None = None
) -> AnyEntry:
    """The ``evaluation`` entry of every checkpoint (for ``harness finetune``), stored where
    ``harness run`` with the same flags finds and reuses it."""
    tokenizer = load_tokenizer(plan.config.task.model)
    return evaluation_entry(
        plan, load_checkpoints(plan, tuned, baselines), source_context(plan, tokenizer), results_store(plan.config)
    )


def log_run(
    tracker: Tracker,
    plan: RunPlan,
    tuned: FineTuneResult,
    summary: RunSummary,
    summary_path: Path,
    figures: list[Path],
    timings: dict[str, float],
) -> list[str]:
    """The run's MLflow record: as params the settings a researcher varies (`varied_settings`), as
    tags what identifies the data, code and model (`run_identity`), the training curve, every
    metric of the summary and its headline, with --trajectory the headline and per-layer cosine
    at each kept step (`trajectory_metrics`: MLflow charts them over the steps), and the summary,
    every setting (config.json) and the figures as artifacts (the fine-tuned checkpoint too with
    ``--log-checkpoint``: it is in the checkpoint cache anyway); then its checkpoints' child runs
    (`log_checkpoint_runs`), whose ids it returns."""
    described = summary["run"]
    tracker.log_params(varied_settings(plan.config))
    # tags, not params: the rerun with the corpora present adds their analyses under the same key
    tracker.set_tags({**run_identity(plan, described), SKIPPED_TAG: ", ".join(plan.skipped) or "none"})
    tracker.log_artifact(plan.run_dir / RUN_SETTINGS)
    timing_metrics = [(seconds_metric(timed), seconds, 0) for timed, seconds in timings.items()]
    records, headline = summary_records(summary), headline_records(summary)
    tracker.log_metrics(
        training_curve(tuned.log_history)
        + timing_metrics
        + [(name, value, 0) for name, value in values(records).items()]
        + [(f"{HEADLINE}/{name}", value, 0) for name, value in values(headline).items()]
        + [(TRAIN_SECONDS, tuned.train_seconds, 0)]
        + trajectory_metrics(summary, [metric.name for metric in headline])
    )
    tracker.log_images_once(f"{TRAJECTORY_PREFIX}/cosine_per_layer", step_charts(summary))
    tracker.log_artifact(summary_path)
    for figure in figures:
        tracker.log_artifact(figure, "figures")
    if plan.config.environment.log_checkpoint:
        tracker.log_folder_once(tuned.checkpoint_dir, CHECKPOINT_ARTIFACT)
    return log_checkpoint_runs(tracker, plan, described["checkpoints"], records, headline)


def varied_settings(config: RunConfig) -> dict[str, str]:
    """The settings a researcher varies between runs, as MLflow params (the axes its compare view
    offers): the task and model (the --dataset flags where they define the task), the fine-tuning
    recipe, the precision and the analyses asked for. Every other setting is in the run's config.json
    artifact."""
    flat = flatten("", config)
    unused = {f"task.{name}" for name in DATASET_FLAGS} if config.task.dataset is None else set()
    return {
        name: value
        for name, value in flat.items()
        if (name.startswith(VARIED) or name in VARIED_ALONE) and name not in unused
    }


def run_identity(plan: RunPlan, described: RunSection) -> dict[str, str]:
    """What identifies the run's inputs, as MLflow tags: the data's files and hashes, the code's
    version and commit, the model's id, revision and weights, and the examples counted."""
    return {
        **flatten("data", plan.data.identity),
        **code_version(),
        **model_provenance(plan.config.task.model),
        **data_provenance(plan.data.task),
        "model.weights_sha256": described["checkpoints"][PRETRAINED]["weights_sha256"],
        "examples.compared": str(described["num_eval_examples"]),
        "examples.trained": str(described["train_examples"]),
    }


def checkpoint_metrics(metrics: list[Metric], checkpoint: str) -> dict[str, float]:
    """One checkpoint's metrics (the records of that checkpoint: not a pair's, nor a reference's)
    under names without it (``dev_accuracy_pretrained`` -> ``dev_accuracy``): the same names for
    every checkpoint and every task, so MLflow's compare view sets them side by side."""
    return {
        metric.unowned_name: metric.value
        for metric in metrics
        if metric.checkpoint == checkpoint and metric.value is not None
    }


def log_checkpoint_runs(
    tracker: Tracker,
    plan: RunPlan,
    identities: dict[str, CheckpointIdentity],
    metrics: list[Metric],
    headline: list[Metric],
) -> list[str]:
    """A child run per compared checkpoint under the run's MLflow run, with that checkpoint's
    ``metrics`` and ``headline`` metrics (`checkpoint_metrics`, the headline's under ``headline/``)
    and its identity (``identities``: the summary's, by checkpoint); returns their run ids,
    pre-trained first."""
    config = plan.config
    ids = []
    for checkpoint in (PRETRAINED, FINETUNED):
        child = Tracker(
            config.environment.tracking_uri,
            f"{plan.key}-{checkpoint}",
            f"{plan.run_dir.name} {checkpoint_title(checkpoint)}",
            {
                PARENT_TAG: tracker.run_id,
                CHECKPOINT_TAG: checkpoint,
                "task": config.task.name,
                "model": config.task.model,
                "seed": str(config.finetune.seed),
            },
        )
        child.log_params({"checkpoint": checkpoint, "task": config.task.name, "model": config.task.model})
        child.set_tags(flatten("identity", identities[checkpoint]))
        own = checkpoint_metrics(metrics, checkpoint)
        own_headline = checkpoint_metrics(headline, checkpoint)
        child.log_metrics(
            [(name, value, 0) for name, value in own.items()]
            + [(f"{HEADLINE}/{name}", value, 0) for name, value in own_headline.items()]
        )
        child.finish()
        ids.append(child.run_id)
    return ids
