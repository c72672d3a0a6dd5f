"""Kovaleva's feature attention on real RTE dev inputs tagged by the real spaCy model, with the
real MiniLM in two slots (the second with its last layer's attention re-drawn, see conftest)."""

import numpy as np
import pytest

from harness.analyses.features import NAMES
from harness.analyses.features_task import TaskFeatures
from tasks.registry import get_task
from tests.fixtures import GLUE_DIR
from tests.integration.conftest import CHANGED_LAYER, glue_batches, run_on

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not GLUE_DIR.is_dir(), reason=f"real GLUE data not found at {GLUE_DIR}"),
]
EXAMPLES = 24


@pytest.fixture(scope="module")
def result(minilm):
    tokenizer = minilm["tokenizer"]
    return run_on(
        TaskFeatures, minilm["models"], tokenizer, glue_batches(tokenizer, "rte", EXAMPLES), task=get_task("rte")
    )["per_checkpoint"]


def test_the_tagger_finds_the_features_of_real_sentence_pairs(result):
    present = result["pretrained"]["inputs_with_feature"]
    assert present["nouns"] == present["verbs"] == present["[CLS]"] == present["[SEP]"] == EXAMPLES
    assert 0 < present["pronouns"] < EXAMPLES and present["negation"] < EXAMPLES / 2
    assert result["pretrained"]["inputs_counted"]["negation"] == present["negation"]  # the one feature skipped


def test_features_match_before_the_changed_layer_and_differ_in_it(result):
    for name in NAMES:
        before, after = (np.asarray(result[c]["per_head"][name]) for c in ("pretrained", "finetuned"))
        assert np.allclose(before[:CHANGED_LAYER], after[:CHANGED_LAYER], atol=1e-5), name
        assert not np.allclose(before[CHANGED_LAYER], after[CHANGED_LAYER], atol=1e-4), name
    cls_before, cls_after = (np.asarray(result[c]["cls_last_layer"]["nouns"]) for c in ("pretrained", "finetuned"))
    assert not np.allclose(cls_before, cls_after, atol=1e-4)  # §5 reads the changed last layer


def test_feature_weights_are_small_next_to_cls_in_the_middle_layers(result):
    """Kovaleva et al.'s finding, in MiniLM's layers 2-5."""
    per_layer = result["pretrained"]["per_layer"]
    for name in ("nouns", "verbs", "pronouns", "subjects", "objects"):
        assert max(per_layer[name][1:5]) < min(per_layer["[CLS]"][1:5]) / 4, name
