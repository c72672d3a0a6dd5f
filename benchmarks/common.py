"""What the benchmarks share: a run's checkpoints and dev sample, prepared exactly as
``harness run`` prepares them, and the bare model passes that analyses are measured against."""

from __future__ import annotations

import resource
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import BertConfig, BertForSequenceClassification

from harness.config import AnalysisConfig, EnvironmentConfig, FineTuneConfig, RunConfig, TaskConfig
from harness.inputs.batches import EncodedBatch
from harness.inputs.encoding import batched
from harness.inputs.sources import SourceContext
from harness.model.finetune import FineTuneResult, stored_result
from harness.model.forward import TASK_LOSS, summed_loss
from harness.model.loading import Checkpoint, load_tokenizer
from harness.model.source import resolve_model
from harness.run.pipeline import load_checkpoints, source_context
from harness.run.plan import RunPlan, plan_run
from tasks.examples import Example

# The tiny BERT the benchmarks' --tiny modes run on any machine (their tests, a CPU).
TINY_BERT_SHAPE = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 64}


@dataclass
class Bench:
    """A run's plan, both checkpoints, its dev sample, and what its sources read."""

    plan: RunPlan
    checkpoints: list[Checkpoint]
    dev: list[Example]
    sources: SourceContext
    finetuned: str


def run_config(
    task: str, model: str, examples: int, batch_size: int = 16, quick: bool = False, **finetune: object
) -> RunConfig:
    """A benchmark's run settings; ``quick`` caps every source as `harness run --quick` does."""
    return RunConfig(
        TaskConfig(task=task, model=model),
        FineTuneConfig(**finetune),
        AnalysisConfig(max_eval_examples=examples, eval_batch_size=batch_size, quick=quick),
        EnvironmentConfig(output_dir=Path("outputs/bench"), cache_dir=Path(".cache/checkpoints")),
    )


def prepare_bench(config: RunConfig, finetuned: str | None = None) -> Bench:
    """The run's checkpoints: the fine-tuned one from ``finetuned`` or the cache, else the
    pre-trained weights loaded a second time in its place (the same cost; said in ``finetuned``)."""
    plan = plan_run(config)
    cached = stored_result(plan.config, plan.data)
    path = Path(finetuned) if finetuned else cached.checkpoint_dir if cached else Path(resolve_model(config.task.model))
    described = str(path) if finetuned or cached else "pre-trained weights stand in (same cost)"
    checkpoints = load_checkpoints(plan, FineTuneResult(path, "bench", [], 0, 0.0, {}))
    sources = source_context(plan, load_tokenizer(config.task.model))
    return Bench(plan, checkpoints, sources.task_examples, sources, described)


def dev_batches(bench: Bench) -> list[EncodedBatch]:
    """The dev sample's batches, as the task source streams them."""
    settings = bench.plan.config
    return list(
        batched(
            bench.sources.tokenizer,
            bench.dev,
            settings.analysis.eval_batch_size,
            settings.task.max_length,
            bench.plan.data.task.is_pair,
        )
    )


def bare_model_seconds(bench: Bench, backward: bool = False) -> float:
    """Seconds of both checkpoints' plain passes (no capture) over the dev sample's batches:
    forward only, or with ``backward`` a forward and the backward pass to the input
    embeddings of the task loss (the least backward work that reaches every layer's
    attention, which gradient analyses need by definition)."""
    batches = dev_batches(bench)
    synchronise()
    start = time.perf_counter()
    for encoded in batches:
        for checkpoint in bench.checkpoints:
            inputs = encoded.model_inputs(checkpoint.model.device)
            if not backward:
                with torch.inference_mode():
                    checkpoint.model(**inputs)
                continue
            embedded = checkpoint.model.get_input_embeddings()(inputs.pop("input_ids")).detach().requires_grad_(True)
            logits = checkpoint.model(inputs_embeds=embedded, **inputs).logits
            labels = torch.tensor([item.label for item in encoded.items])
            torch.autograd.grad(summed_loss(logits, labels.to(logits.device), TASK_LOSS), embedded)
    synchronise()
    return time.perf_counter() - start


def random_bert_folder(folder: Path, config: BertConfig) -> Path:
    """A BERT classifier of ``config``'s shape with seeded random weights, saved with MiniLM's
    tokenizer (bert-base-uncased's WordPiece vocabulary) as a local model folder: any shape,
    with no download."""
    torch.manual_seed(0)
    BertForSequenceClassification(config).save_pretrained(folder)
    load_tokenizer("minilm").save_pretrained(folder)
    return folder


def synchronise() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def peak_memory_mb() -> dict[str, float | None]:
    """Peak resident memory of this process, and peak GPU memory allocated, in MB."""
    gpu = torch.cuda.max_memory_allocated() / 2**20 if torch.cuda.is_available() else None
    return {"peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "peak_gpu_mb": gpu}
