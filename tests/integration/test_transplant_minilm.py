"""The attention transplant and the representations' CKA on the real MiniLM and real RTE dev.

The second checkpoint is MiniLM with layer 6's query and key re-drawn (see conftest): every other
weight is MiniLM's. Given the first model's attention in layer 6, it *is* the first model, so its
predictions must be the first model's exactly; given it anywhere else, nothing changes; its
hidden states and maps equal the first model's in layers 1-5 (CKA and cosine 1) and differ in 6.
"""

import numpy as np
import pytest

from harness.analyses.cka import RepresentationChange
from harness.analyses.transplant import Transplant
from harness.config import AnalysisConfig
from harness.inputs.sources import SourceContext
from harness.inputs.sources.dev import AblationSource
from harness.model.forward import forward
from harness.model.loading import Checkpoint
from harness.results.checkpoints import FINETUNED, MAIN_PAIR, PRETRAINED
from harness.results.store import ResultStore
from harness.run.engine import analyse
from harness.views.transplant import family_rows, stored_predictions, variant_count
from tasks.loading import load_examples
from tasks.registry import get_task
from tests.fixtures import GLUE_DIR
from tests.integration.conftest import CHANGED_LAYER, glue_batches, run_on

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not GLUE_DIR.is_dir(), reason=f"real GLUE data not found at {GLUE_DIR}"),
]
EXAMPLES = 24
MAX_LENGTH = 48  # tokens: the sweep's passes cost as their inputs' length; what is checked does not depend on it


def rte_sources(tokenizer) -> SourceContext:
    """The first `EXAMPLES` of RTE dev in the split's order, as the transplant's source samples them."""
    rte = get_task("rte")
    examples = load_examples(rte, "dev", GLUE_DIR)
    return SourceContext(
        tokenizer,
        AnalysisConfig(eval_batch_size=8, ablation_examples=EXAMPLES),
        tokenizer_name="minilm",
        max_length=MAX_LENGTH,
        task=rte,
        task_examples=examples[:EXAMPLES],
        task_identity={"split": "dev"},
        eval_examples={"dev": examples},
        eval_identity={"dev": "RTE dev"},
    )


@pytest.fixture(scope="module")
def transplanted(minilm, tmp_path_factory):
    checkpoints = [
        Checkpoint(name, model, {"model": name}, {"trained": name == FINETUNED})
        for name, model in minilm["models"].items()
    ]
    store = ResultStore(tmp_path_factory.mktemp("transplant_minilm"))
    sources = rte_sources(minilm["tokenizer"])
    return analyse([Transplant], checkpoints, [(PRETRAINED, FINETUNED)], sources, store)["transplant"]


def test_the_changed_layer_given_back_its_attention_is_the_first_model(transplanted, minilm):
    result = transplanted["result"]["per_pair"][MAIN_PAIR]
    predictions = stored_predictions(result["predictions"])
    assert result["examples"] == EXAMPLES and predictions.shape == (variant_count(6, 12), EXAMPLES)
    alone, rest = result["layers"]["alone"], result["layers"]["all_but"]
    assert np.all(np.asarray(result["heads"]["delta"])[:CHANGED_LAYER] == 0)  # layers 1-5: the same maps
    assert all(delta == 0 for delta in alone["delta"][:CHANGED_LAYER])
    assert rest["delta"][CHANGED_LAYER] == 0  # all layers but the changed one: nothing changes
    first = minilm["models"][PRETRAINED]
    batches = AblationSource(rte_sources(minilm["tokenizer"])).stream().batches
    own = np.concatenate([forward(first, encoded).logits.argmax(-1).numpy() for encoded in batches])
    for family in ("alone", "from"):  # layer 6 alone, and every layer: the first model exactly
        given = predictions[family_rows(family, 6, 12).start + (CHANGED_LAYER if family == "alone" else 0)]
        assert np.array_equal(given, own), family


def test_hidden_states_and_maps_are_the_same_below_the_changed_layer(minilm):
    tokenizer = minilm["tokenizer"]
    result = run_on(RepresentationChange, minilm["models"], tokenizer, glue_batches(tokenizer, "rte", 16))
    pair = result["per_pair"][MAIN_PAIR]
    for kind in ("tokens", "cls"):
        assert np.allclose(pair[kind]["per_layer"][:CHANGED_LAYER], 1.0, atol=1e-5), kind
        assert pair[kind]["per_layer"][CHANGED_LAYER] < 0.999, kind
        assert max(pair[kind]["chance_per_layer"]) < 0.9, kind
    assert np.allclose(pair["attention_cosine_per_layer"][:CHANGED_LAYER], 1.0, atol=1e-5)
    assert pair["attention_cosine_per_layer"][CHANGED_LAYER] < 0.99
