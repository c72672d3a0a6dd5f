"""The speed paths keep the results: bf16 mixed-precision training against fp32 training
(both with the harness attention and fast dropout on a CPU), on the real MiniLM and RTE, and
the SDPA kernel against eager.

Stated tolerances (the fine-tunes differ by rounding only, so their attention and dev
metrics must agree closely): dev accuracy within 0.03 (8 of 277 examples), the cosine
similarity of every head within 0.02, each layer's mean within 0.005.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from harness.cli import main
from harness.inputs.encoding import batched
from harness.model.loading import load_sequence_classifier, load_tokenizer
from harness.results.store import read_json
from harness.run.plan import native_bf16
from harness.views.evaluation import dev_metrics
from tasks.loading import load_examples
from tasks.registry import get_task
from tests.fixtures import GLUE_DIR, harness_arguments

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not GLUE_DIR.is_dir(), reason="needs ../shared/data/glue")]


def finetuned_summary(root, precision: str) -> dict:
    root = root / precision
    argv = harness_arguments(
        "run",
        "minilm",
        GLUE_DIR,
        root,
        *("--max-train-examples", "256", "--epochs", "1", "--learning-rate", "1e-4"),
        *("--analyses", "cosine", "--max-eval-examples", "64", "--precision", precision),
    )
    assert main(argv) == 0
    (path,) = (root / "out").glob("*/summary.json")
    return read_json(path)


@pytest.mark.skipif(not native_bf16(torch.device("cpu")), reason="this CPU has no native bf16 (AVX512-BF16/AMX)")
def test_bf16_training_keeps_dev_metrics_and_attention_within_tolerance(tmp_path):
    fp32, bf16 = finetuned_summary(tmp_path, "fp32"), finetuned_summary(tmp_path, "bf16")
    accuracy = [dev_metrics(s["analyses"]["evaluation"])["finetuned"]["dev/accuracy"] for s in (fp32, bf16)]
    assert abs(accuracy[0] - accuracy[1]) <= 0.03
    cosine = [s["analyses"]["cosine"]["result"]["per_pair"]["pretrained->finetuned"] for s in (fp32, bf16)]
    assert np.abs(np.array(cosine[0]["per_head"]) - np.array(cosine[1]["per_head"])).max() <= 0.02
    assert np.abs(np.array(cosine[0]["per_layer"]) - np.array(cosine[1]["per_layer"])).max() <= 0.005
    assert fp32["run"]["finetune_key"] != bf16["run"]["finetune_key"]  # two checkpoints, not one reused


def test_sdpa_and_eager_give_the_same_logits():
    task = get_task("rte")
    tokenizer = load_tokenizer("minilm")
    examples = load_examples(task, "dev", GLUE_DIR)[:16]
    (encoded,) = batched(tokenizer, examples, 16, 128, task.is_pair)
    logits = []
    for attention in ("eager", "sdpa"):
        model = load_sequence_classifier("minilm", task, head_seed=0, attention=attention).eval()
        with torch.inference_mode():
            logits.append(model(**encoded.model_inputs(torch.device("cpu"))).logits)
    torch.testing.assert_close(logits[0], logits[1], rtol=1e-4, atol=1e-5)
