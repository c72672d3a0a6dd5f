"""The real MiniLM in two different slots: as shipped, and with its last layer's attention re-drawn.

Re-initialising layer 6's query and key projections (seeded) changes where layer 6 attends
and nothing before it, so every per-layer statistic must be identical in layers 1-5 and
differ in layer 6: an equality check that can fail both ways, without a minutes-long fine-tune.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from transformers import PreTrainedModel

from harness.analyses.base import Analysis
from harness.inputs.encoding import batched
from harness.model.forward import use_harness_attention
from harness.model.loading import load_sequence_classifier, load_tokenizer
from harness.results.checkpoints import FINETUNED, PRETRAINED
from tasks.loading import load_examples
from tasks.registry import get_task
from tests.fixtures import GLUE_DIR, analysis_context, finish, stream

CHANGED_LAYER = 5  # 0-indexed: MiniLM's sixth and last layer


def with_last_layer_redrawn(model: PreTrainedModel, seed: int = 0) -> PreTrainedModel:
    attention = model.bert.encoder.layer[CHANGED_LAYER].attention.self
    with torch.random.fork_rng(), torch.no_grad():
        torch.manual_seed(seed)
        for projection in (attention.query, attention.key):
            projection.weight.normal_(0.0, 0.2)
    return model


@pytest.fixture(scope="session")
def minilm() -> dict[str, Any]:
    """The tokenizer, and the two MiniLM checkpoints (``pretrained`` as shipped, ``finetuned``
    changed), their attention routed through the harness as every analysis's models are, so a
    test's own `forward` on them does not depend on an earlier test having analysed them."""
    task = get_task("rte")
    return {
        "tokenizer": load_tokenizer("minilm"),
        "models": {
            PRETRAINED: use_harness_attention(load_sequence_classifier("minilm", task, head_seed=0)).eval(),
            FINETUNED: use_harness_attention(
                with_last_layer_redrawn(load_sequence_classifier("minilm", task, head_seed=0))
            ).eval(),
        },
    }


def run_on(
    analysis_cls: type[Analysis], models: dict[str, PreTrainedModel], tokenizer: Any, batches, **settings: Any
) -> dict[str, Any]:
    """Stream ``batches`` through ``models`` into one analysis; its summary-shaped result."""
    config = next(iter(models.values())).config
    analysis = analysis_cls(
        analysis_context(models, config.num_hidden_layers, config.num_attention_heads, tokenizer, **settings)
    )
    for batch in stream(models, batches, tokenizer, analysis_cls.needs):
        analysis.update(batch)
    return finish(analysis)


def glue_batches(tokenizer: Any, task_name: str, count: int, batch_size: int = 8):
    task = get_task(task_name)
    return batched(tokenizer, load_examples(task, "dev", GLUE_DIR)[:count], batch_size, 128, pair=task.is_pair)
