"""``harness run``: fine-tune, stream attention of both checkpoints through the analyses,
store ``summary.json``, log everything to MLflow and draw the figures.

Interrupted runs resume: the fine-tuned checkpoint is cached (and Trainer checkpoints
resume mid-training), and each analysis's result is written to
``<run_dir>/results/<key>/<analysis>.json`` as soon as its source is done, so a re-run
computes only what is missing.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import time
from collections import defaultdict
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm
from transformers import PreTrainedModel

from harness.analyses import ANALYSES, Analysis, AnalysisContext
from harness.attention import FINETUNED, PRETRAINED, stream_attention
from harness.config import RunConfig
from harness.errors import HarnessError
from harness.figures import redraw
from harness.finetune import FineTuneResult, finetune, sample
from harness.models import load_finetuned, load_sequence_classifier, load_tokenizer
from harness.sources import SOURCES, SourceContext
from harness.tracking import Tracker, flatten, training_curve, write_json
from tasks import GlueTask, get_task, load_examples

log = logging.getLogger(__name__)
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def select_analyses(names: list[str] | None) -> list[type[Analysis]]:
    if names is None:
        return list(ANALYSES.values())
    unknown = [name for name in names if name not in ANALYSES]
    if unknown:
        raise HarnessError(f"unknown analysis {', '.join(unknown)}; valid: {', '.join(ANALYSES)}")
    return [ANALYSES[name] for name in names]


def device_of(config: RunConfig) -> torch.device:
    if config.device:
        return torch.device(config.device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def prepare(model: PreTrainedModel, config: RunConfig) -> PreTrainedModel:
    """Evaluation mode on the run's device, in bf16/fp16 only where asked (GPU)."""
    device = device_of(config)
    dtype = DTYPES[config.precision] if device.type == "cuda" else torch.float32
    return model.to(device=device, dtype=dtype).eval()


def load_checkpoints(config: RunConfig, task: GlueTask, tuned: FineTuneResult) -> dict[str, PreTrainedModel]:
    pretrained = load_sequence_classifier(config.model, task)
    finetuned = load_finetuned(tuned.checkpoint_dir)
    return {PRETRAINED: prepare(pretrained, config), FINETUNED: prepare(finetuned, config)}


def results_key(config: RunConfig) -> str:
    """Results are reused only for the same fine-tuned weights and the same analysis inputs."""
    payload = {"finetune": config.finetune.cache_key(config.model, config.task, config.precision),
               "analysis": {k: str(v) for k, v in asdict(config.analysis).items() if k != "analyses"}}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:12]


def run_analyses(config: RunConfig, task: GlueTask, checkpoints: dict[str, PreTrainedModel],
                 dev_sample: list, results_dir: Path) -> tuple[dict[str, Any], dict[str, float]]:
    """Stream each needed source once through both checkpoints; returns summary keys and timings."""
    tokenizer = load_tokenizer(config.model)
    model_config = checkpoints[PRETRAINED].config
    context = AnalysisContext(
        num_layers=model_config.num_hidden_layers, num_heads=model_config.num_attention_heads,
        tokenizer=tokenizer, checkpoints=checkpoints, task_name=task.name, seed=config.finetune.seed,
        options={**asdict(config.analysis), "model": config.model},
    )
    summary: dict[str, Any] = {"source_notes": {}}
    pending: dict[str, list[type[Analysis]]] = defaultdict(list)
    for analysis in select_analyses(config.analysis.analyses):
        stored = results_dir / f"{analysis.name}.json"
        notes = results_dir / "sources" / f"{analysis.source}.json"
        if stored.is_file() and notes.is_file():
            summary.update(json.loads(stored.read_text()))
            summary["source_notes"][analysis.source] = json.loads(notes.read_text())
        else:
            pending[analysis.source].append(analysis)

    timings: dict[str, float] = {}
    for source, classes in pending.items():
        if source not in SOURCES:
            raise HarnessError(f"analysis {classes[0].name!r} reads unknown source {source!r}")
        start = time.perf_counter()
        stream = SOURCES[source](SourceContext(tokenizer, config.analysis, dev_sample, config.finetune.seed))
        analyses = [cls(context) for cls in classes]
        with tqdm(total=stream.num_items, desc=f"{source}: {', '.join(a.name for a in analyses)}",
                  unit="ex") as progress:
            for batch in stream_attention(checkpoints, stream.batches):
                for analysis in analyses:
                    analysis.update(batch)
                progress.update(len(batch.items))
        summary["source_notes"][source] = stream.notes
        write_json(stream.notes, results_dir / "sources" / f"{source}.json")
        for analysis in analyses:
            result = analysis.result()
            write_json(result, results_dir / f"{analysis.name}.json")
            summary.update(result)
        timings[source] = time.perf_counter() - start
    return summary, timings


def run(config: RunConfig) -> dict[str, Any]:
    """The whole ``harness run``; returns the summary written to ``<run_dir>/summary.json``."""
    task = get_task(config.task)
    dev = load_examples(task, task.main_eval_split, config.data_dir)  # fail on missing data before training
    select_analyses(config.analysis.analyses)
    load_tokenizer(config.model)  # an unreachable model fails here, before any work
    torch.manual_seed(config.finetune.seed)

    tracker = Tracker(config, run_key=f"{config.run_name}-{results_key(config)}")
    try:
        tuned = finetune(config, task)
        checkpoints = load_checkpoints(config, task, tuned)
        dev_sample = sample(dev, config.analysis.max_eval_examples, config.finetune.seed)
        results_dir = config.run_dir / "results" / results_key(config)
        results, timings = run_analyses(config, task, checkpoints, dev_sample, results_dir)
        summary = {
            "task": task.name, "model": config.model, "seed": config.finetune.seed,
            "num_layers": checkpoints[PRETRAINED].config.num_hidden_layers,
            "num_heads": checkpoints[PRETRAINED].config.num_attention_heads,
            "eval_split": task.main_eval_split, "num_eval_examples": len(dev_sample),
            "train_examples": tuned.train_examples,
            "dev_metrics": tuned.dev_metrics, **results,
        }
        summary_path = write_json(summary, config.run_dir / "summary.json")
        figures = redraw(summary, config.run_dir / "figures")
        log_run(tracker, config, tuned, summary_path, results_dir, figures, timings)
    except BaseException:
        tracker.finish("FAILED")
        raise
    tracker.finish()
    return summary


def log_run(tracker: Tracker, config: RunConfig, tuned: FineTuneResult, summary_path: Path,
            results_dir: Path, figures: list[Path], timings: dict[str, float]) -> None:
    tracker.log_params(flatten("", config))
    dev_metrics = [(f"dev_{checkpoint}_{name}", value, 0)
                   for checkpoint, scores in tuned.dev_metrics.items() for name, value in scores.items()]
    timing_metrics = [(f"seconds_{source}", seconds, 0) for source, seconds in timings.items()]
    tracker.log_metrics(training_curve(tuned.log_history) + dev_metrics + timing_metrics
                        + [("train_seconds", tuned.train_seconds, 0)])
    tracker.log_artifact(summary_path)
    summary = json.loads(summary_path.read_text())
    tracker.log_metrics((name, value, 0) for analysis in ANALYSES.values() if analysis.stored_in(summary)
                        for name, value in analysis.metrics(summary) if not math.isnan(value))
    for result in sorted(results_dir.glob("*.json")):  # one file per analysis, as computed
        tracker.log_artifact(result, "analyses")
    for figure in figures:
        tracker.log_artifact(figure, "figures")
