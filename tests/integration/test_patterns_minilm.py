"""The shipped pattern CNN on real MiniLM attention over real MRPC dev pairs."""

import pytest

from harness.analyses.patterns import AttentionPatterns
from tests.fixtures import GLUE_DIR
from tests.integration.conftest import CHANGED_LAYER, glue_batches, run_on

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not GLUE_DIR.is_dir(), reason=f"real GLUE data not found at {GLUE_DIR}"),
]


def test_minilm_patterns_match_what_the_labels_show(minilm):
    result = run_on(
        AttentionPatterns, minilm["models"], minilm["tokenizer"], glue_batches(minilm["tokenizer"], "mrpc", 16)
    )
    pretrained, changed = (result["per_checkpoint"][c] for c in ("pretrained", "finetuned"))
    shares = pretrained["proportions"]
    assert abs(sum(shares.values()) - 1) < 1e-9
    # labelled maps of MiniLM are 37% vertical, the most frequent class
    assert max(shares, key=shares.get) == "vertical"
    # layer 1 head 3 attends to the token itself in every labelled map of it
    assert pretrained["per_head"][0][2] == "diagonal"
    # only the re-drawn layer can change its patterns
    assert pretrained["per_head"][:CHANGED_LAYER] == changed["per_head"][:CHANGED_LAYER]
    changes = result["per_pair"]["pretrained->finetuned"]["changed_heads"]
    assert changes and all(change["layer"] == CHANGED_LAYER + 1 for change in changes)
