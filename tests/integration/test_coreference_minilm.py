"""The coreference analysis on real LitBank documents with the real MiniLM.

No fine-tuning here (too slow for a test): the "fine-tuned" side is a randomly initialised
model of the same shape, whose attention knows nothing about coreference, so the pre-trained
model's best head must beat it clearly.
"""

import pytest
from transformers import AutoModelForSequenceClassification

from harness.analyses.coreference import Coreference
from harness.inputs.sources.coreference import encoded_documents
from harness.results.checkpoints import FINETUNED, PRETRAINED
from tasks.coreference import read_coreference
from tests.conftest import SHARED_DATA
from tests.integration.conftest import run_on

LITBANK = SHARED_DATA / "litbank" / "conll"


@pytest.mark.slow
@pytest.mark.skipif(not LITBANK.is_dir(), reason="needs ../shared/data/litbank")
def test_minilm_heads_track_coreference_on_litbank(minilm):
    tokenizer, pretrained = minilm["tokenizer"], minilm["models"][PRETRAINED]
    untrained = AutoModelForSequenceClassification.from_config(pretrained.config).eval()
    models = {PRETRAINED: pretrained, FINETUNED: untrained}
    documents = read_coreference(LITBANK)[:16]
    result = run_on(Coreference, models, tokenizer, encoded_documents(tokenizer, documents, 8, 128))
    pre, random_init = result["per_checkpoint"][PRETRAINED], result["per_checkpoint"][FINETUNED]

    mentions = pre["mentions"]
    assert pre["documents"] == pre["documents_cut"] == 16  # every excerpt is longer than 128 tokens
    assert pre["mentions_cut"] > 1000
    assert 80 < mentions["all"] == mentions["pronoun"] + mentions["proper"] + mentions["nominal"]
    grid = pre["accuracy_per_head"]["all"]
    assert len(grid) == 6 and len(grid[0]) == 12
    # Seen: 0.65 (head 3-5) against 0.07 for the random model (16 documents, 114 mentions).
    assert pre["best_head"]["all"]["accuracy"] > random_init["best_head"]["all"]["accuracy"] + 0.3
    assert result["per_pair"]["pretrained->finetuned"]["at_before_best_head"]["all"] < -0.3
    # The baselines do not depend on the model and are proper fractions.
    baselines = pre["baselines"]
    assert set(baselines) == {"nearest", "head_match", "nearest_preceding"}
    assert all(0 < baselines[name]["all"] < 1 for name in baselines)
    assert pre["baselines"] == random_init["baselines"]
    # Clark's Nearest looks both ways: a pronoun's nearest mention is often the one after it,
    # so it scores far below looking back only. Seen on these documents: pronouns 0.34 vs 0.67.
    assert baselines["nearest"]["pronoun"] < baselines["nearest_preceding"]["pronoun"] - 0.15
