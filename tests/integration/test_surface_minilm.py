"""Clark's surface analyses, gradients and clustering on the real MiniLM and real RTE dev.

Both checkpoints are the same pre-trained MiniLM, so every statistic must match between
them and the heads must not move; MiniLM must also show behaviours Clark found in BERT.
"""

import numpy as np
import pytest
import torch

from harness.analyses.base import AnalysisContext
from harness.analyses.clustering import Clustering
from harness.analyses.gradients import UNTRAINED_TASK, GradientImportance
from harness.analyses.surface import Surface
from harness.attention import stream_attention
from harness.config import AnalysisConfig
from harness.models import load_sequence_classifier, load_tokenizer
from harness.sources import SOURCES, SourceContext
from tasks import get_task, load_examples
from tests.conftest import GLUE_DIR

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not GLUE_DIR.is_dir(), reason=f"real GLUE data not found at {GLUE_DIR}")]


@pytest.fixture(scope="module")
def minilm_results():
    task = get_task("rte")
    tokenizer = load_tokenizer("minilm")
    model = load_sequence_classifier("minilm", task).eval()
    checkpoints = {"pretrained": model, "finetuned": model}
    dev = load_examples(task, "dev", GLUE_DIR)[:16]
    context = AnalysisContext(6, 12, tokenizer, checkpoints, "rte",
                              options={"clustering_tokens_per_example": 4})
    analyses = [Surface(context), Clustering(context), GradientImportance(context)]
    stream = SOURCES["corpus"](SourceContext(tokenizer, AnalysisConfig(eval_batch_size=8), dev, 0))
    for batch in stream_attention(checkpoints, stream.batches):
        for analysis in analyses:
            analysis.update(batch)
    results = {}
    for analysis in analyses:
        results.update(analysis.result())
    return results, tokenizer, checkpoints, dev


def test_same_checkpoint_twice_changes_nothing(minilm_results):
    results, *_ = minilm_results
    surface = results["surface"]
    assert surface["num_items"] == 16 and surface["label_changes"] == []
    assert surface["checkpoints"]["pretrained"] == surface["checkpoints"]["finetuned"]
    clustering = results["clustering"]
    assert clustering["tokens_used"] == 64
    assert np.allclose(clustering["between_versions"], 0.0, atol=1e-6)
    gradients = results["gradients"]["checkpoints"]
    assert gradients["pretrained"]["loss"] == UNTRAINED_TASK  # MiniLM ships without its MLM head
    assert np.allclose(gradients["pretrained"]["per_head"]["sep"], gradients["finetuned"]["per_head"]["sep"])


def test_minilm_shows_clarks_behaviours(minilm_results):
    results, *_ = minilm_results
    surface = results["surface"]
    per_head = surface["checkpoints"]["pretrained"]["per_head"]
    assert np.max(per_head["previous"]) > 0.5  # a previous-token head, as in BERT
    assert np.max(per_head["cls"]) > 0.6  # a [CLS] head
    entropy = np.asarray(per_head["entropy"])
    assert entropy.shape == (6, 12) and (entropy < surface["uniform_entropy"]).all()
    blocks = results["clustering"]["within_checkpoint"]["pretrained"]
    assert blocks["same_layer"] < blocks["other_layers"]  # Clark: heads of a layer cluster together
    assert (np.asarray(results["gradients"]["checkpoints"]["pretrained"]["per_layer"]["other"]) > 0).all()


def test_corpus_file_of_real_text_is_packed_and_analysed(minilm_results, tmp_path):
    _, tokenizer, checkpoints, dev = minilm_results
    corpus = tmp_path / "rte_paragraphs.txt"
    corpus.write_text("\n".join(example.text_a for example in dev) + "\n")
    stream = SOURCES["corpus"](SourceContext(tokenizer, AnalysisConfig(corpus=corpus, max_eval_examples=6), [], 0))
    context = AnalysisContext(6, 12, tokenizer, checkpoints, "rte")
    surface = Surface(context)
    for batch in stream_attention(checkpoints, stream.batches):
        assert (batch.lengths <= 128).all()
        assert ((batch.input_ids == tokenizer.sep_token_id).sum(dim=1) == 2).all()
        surface.update(batch)
    result = surface.result()["surface"]
    assert result["num_items"] == stream.num_items == stream.notes["segments"] >= 4
    assert stream.notes["truncated_segments"] >= 1  # RTE premises are long: pairs get trimmed to 128
    sep_to_sep = torch.tensor(result["checkpoints"]["pretrained"]["per_head"]["sep_to_sep"])
    assert sep_to_sep.shape == (6, 12) and (sep_to_sep > 0).all()
