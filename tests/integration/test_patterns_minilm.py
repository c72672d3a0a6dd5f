"""The shipped pattern CNN on real MiniLM attention over real MRPC dev pairs."""

import pytest

from harness.analyses.base import AnalysisContext
from harness.analyses.patterns import AttentionPatterns
from harness.attention import stream_attention
from harness.encoding import batched
from harness.models import load_sequence_classifier, load_tokenizer
from tasks import get_task, load_examples
from tests.conftest import GLUE_DIR

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not GLUE_DIR.is_dir(), reason=f"real GLUE data not found at {GLUE_DIR}")]


def test_minilm_patterns_match_what_the_labels_show():
    task = get_task("mrpc")
    tokenizer = load_tokenizer("minilm")
    model = load_sequence_classifier("minilm", task).eval()
    same = {"pretrained": model, "finetuned": model}
    analysis = AttentionPatterns(AnalysisContext(6, 12, tokenizer, same, task.name))
    for batch in stream_attention(same, batched(tokenizer, load_examples(task, "dev", GLUE_DIR)[:16], 8, 128)):
        analysis.update(batch)
    result = analysis.result()
    shares = result["pattern_proportions"]["pretrained"]
    assert shares == result["pattern_proportions"]["finetuned"] and result["pattern_changed_heads"] == []
    assert abs(sum(shares.values()) - 1) < 1e-9
    # labelled maps of MiniLM are 37% vertical, the most frequent class
    assert max(shares, key=shares.get) == "vertical"
    # layer 1 head 3 attends to the token itself in every labelled map of it
    assert result["pattern_per_head"]["pretrained"][0][2] == "diagonal"
