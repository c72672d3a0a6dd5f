"""Attention sinks and norm-weighted attention on the real MiniLM and real RTE dev.

The second checkpoint is MiniLM with layer 6's query and key re-drawn (see conftest): its value
and output projections are MiniLM's, so every ||f(x)|| must match in all six layers, every share
in layers 1-5, and the shares must differ in layer 6.
"""

import numpy as np
import pytest

from harness.analyses.sinks import AttentionSinks
from harness.views.sinks import KINDS
from tests.fixtures import GLUE_DIR
from tests.integration.conftest import CHANGED_LAYER, glue_batches, run_on

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not GLUE_DIR.is_dir(), reason=f"real GLUE data not found at {GLUE_DIR}"),
]
LAST = CHANGED_LAYER
SHARES = ("sink_share", "raw_share", "norm_share")


@pytest.fixture(scope="module")
def result(minilm):
    tokenizer = minilm["tokenizer"]
    return run_on(AttentionSinks, minilm["models"], tokenizer, glue_batches(tokenizer, "rte", 16))


def grids(result, statistic, kind):
    return (np.asarray(result["per_checkpoint"][c]["per_head"][statistic][kind]) for c in ("pretrained", "finetuned"))


def test_statistics_match_before_the_changed_layer_and_differ_in_it(result):
    for kind in KINDS:
        before, after = grids(result, "value_norm", kind)
        assert np.allclose(before, after, rtol=1e-5, atol=1e-5), kind  # W_V and W_O were not touched
        for statistic in SHARES:
            before, after = grids(result, statistic, kind)
            assert np.allclose(before[:LAST], after[:LAST], atol=1e-5), (statistic, kind)
        for statistic in ("raw_share", "norm_share"):
            before, after = grids(result, statistic, kind)
            assert not np.allclose(before[LAST], after[LAST], atol=1e-3), (statistic, kind)
    change = result["per_pair"]["pretrained->finetuned"]["per_layer"]
    assert np.allclose(np.asarray(change["raw_share"]["cls"][:LAST]), 0.0, atol=1e-5)
    assert abs(change["raw_share"]["cls"][LAST]) > 1e-3


def test_minilm_sinks_into_cls_whose_transformed_vectors_are_small(result):
    """MiniLM's no-op target is [CLS] (docs/surface.md): most middle-layer heads sink into it, and
    its small ||f(x)|| leaves it a small share of what the heads actually add (Kobayashi et al.)."""
    pretrained = result["per_checkpoint"]["pretrained"]
    layers = pretrained["per_layer"]
    middle = slice(1, 5)  # layers 2-5
    assert min(layers["sink_share"]["cls"][middle]) > 0.5 and max(layers["sink_share"]["sep"]) < 0.05
    raw, weighted = (np.asarray(layers[name]["cls"][middle]) for name in ("raw_share", "norm_share"))
    assert (weighted < raw / 3).all()
    norms = pretrained["overall"]["value_norm"]
    assert norms["cls"] < norms["other"] / 5
