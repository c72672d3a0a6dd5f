"""The coreference analysis on real LitBank documents with the real MiniLM.

No fine-tuning here (too slow for a test): the "fine-tuned" side is a randomly initialised
model of the same shape, whose attention knows nothing about coreference, so the pre-trained
model's best head must beat it clearly.
"""

import pytest
from transformers import AutoModelForSequenceClassification

from harness.analyses.base import AnalysisContext
from harness.analyses.coreference import Coreference, encoded_documents
from harness.attention import stream_attention
from harness.models import load_sequence_classifier, load_tokenizer
from tasks import get_task
from tasks.coreference import read_coreference
from tests.conftest import SHARED_DATA

LITBANK = SHARED_DATA / "litbank" / "conll"


@pytest.mark.slow
@pytest.mark.skipif(not LITBANK.is_dir(), reason="needs ../shared/data/litbank")
def test_minilm_heads_track_coreference_on_litbank():
    tokenizer = load_tokenizer("minilm")
    pretrained = load_sequence_classifier("minilm", get_task("rte"))
    random_init = AutoModelForSequenceClassification.from_config(pretrained.config).eval()
    checkpoints = {"pretrained": pretrained.eval(), "finetuned": random_init}
    documents = read_coreference(LITBANK)[:16]
    context = AnalysisContext(pretrained.config.num_hidden_layers, pretrained.config.num_attention_heads,
                              tokenizer, checkpoints, "rte", options={"max_tokens": 128})
    analysis = Coreference(context)
    for batch in stream_attention(checkpoints, encoded_documents(tokenizer, documents, 8, 128)):
        analysis.update(batch)
    result = analysis.result()["coreference"]

    mentions = result["mentions"]
    assert result["documents"] == result["documents_cut"] == 16  # every excerpt is longer than 128 tokens
    assert result["mentions_cut"] > 1000
    assert 80 < mentions["all"] == mentions["pronoun"] + mentions["proper"] + mentions["nominal"]
    grid = result["accuracy_per_head"]["pretrained"]["all"]
    assert len(grid) == 6 and len(grid[0]) == 12
    best = result["best_head"]["pretrained"]["all"]
    random_best = result["best_head"]["finetuned"]["all"]
    # Seen: 0.65 (head 3-5) against 0.07 for the random model (16 documents, 114 mentions).
    assert best["accuracy"] > random_best["accuracy"] + 0.3
    assert result["change"]["at_pretrained_best_head"]["all"] < -0.3
    # The baselines do not depend on the model and are proper fractions.
    assert 0 < result["baselines"]["nearest"]["all"] < 1 and 0 < result["baselines"]["head_match"]["all"] < 1
