"""Vig's head behaviours on the real MiniLM and real RTE dev.

The second checkpoint is MiniLM with its last layer's attention re-drawn (see conftest), so
every share must match in layers 1-5 and differ in layer 6; MiniLM must also show the
behaviours Vig saw in BERT-base, far above their chance levels: a previous-token head, a
next-token head, and a head that links the two sentences through identical words.
"""

import numpy as np
import pytest

from harness.analyses.vig import VigBehaviours
from harness.views.vig import STATISTICS
from tests.fixtures import GLUE_DIR
from tests.integration.conftest import CHANGED_LAYER, glue_batches, run_on

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not GLUE_DIR.is_dir(), reason=f"real GLUE data not found at {GLUE_DIR}"),
]
LAST = CHANGED_LAYER
EXAMPLES = 16


@pytest.fixture(scope="module")
def result(minilm):
    tokenizer = minilm["tokenizer"]
    return run_on(VigBehaviours, minilm["models"], tokenizer, glue_batches(tokenizer, "rte", EXAMPLES))


def test_shares_match_before_the_changed_layer_and_differ_in_it(result):
    checkpoints = result["per_checkpoint"]
    for statistic in STATISTICS:
        before, after = (np.asarray(checkpoints[c]["per_head"][statistic]) for c in ("pretrained", "finetuned"))
        assert np.allclose(before[:LAST], after[:LAST], atol=1e-5), statistic
        assert not np.allclose(before[LAST], after[LAST], atol=1e-3), statistic
    assert checkpoints["pretrained"]["chance"] == checkpoints["finetuned"]["chance"]  # the inputs' alone
    changes = result["per_pair"]["pretrained->finetuned"]
    assert all(change["layer"] == LAST + 1 for change in changes["label_changes"])
    assert np.allclose(np.asarray(changes["per_head"]["previous"])[:LAST], 0.0, atol=1e-5)


def test_minilm_has_vigs_heads_far_above_chance(result):
    pretrained = result["per_checkpoint"]["pretrained"]
    assert pretrained["examples"]["other_segment_identical"] == EXAMPLES  # every RTE pair shares a word
    assert pretrained["examples"]["same_word_pieces"] >= EXAMPLES // 2
    chance = pretrained["chance"]
    assert max(chance.values()) < 0.1 and chance["next"] < 0.03  # RTE pairs are long
    for statistic in ("previous", "next", "other_segment_identical"):
        assert pretrained["label_counts"][statistic] >= 1, statistic
        assert pretrained["strongest"][statistic]["value"] > 10 * chance[statistic], statistic
    assert pretrained["strongest"]["previous"]["value"] > 0.9  # an almost pure previous-token head
    for layer, row in enumerate(pretrained["labels"]):  # every labelled head is at least 5 times chance
        for head, labels in enumerate(row):
            assert all(pretrained["per_head"][label][layer][head] > 5 * chance[label] for label in labels)
