import math

import numpy as np
import pytest
import torch
from scipy.spatial.distance import jensenshannon

from harness.analyses.clustering import Clustering, embed, pairwise_js, sample_rows
from harness.views.clustering import ClusteringView
from tasks.examples import Example
from tests.fixtures import run_analysis, tiny_bert


def test_pairwise_js_of_hand_built_heads_is_exact():
    n = 4
    first = torch.zeros(2, n)
    first[:, 0] = 1.0  # every row on token 1
    second = torch.zeros(2, n)
    second[:, 1] = 1.0  # every row on token 2
    uniform = torch.full((2, n), 1 / n)
    distances = pairwise_js(torch.stack([first, first.clone(), second, uniform]))
    assert distances.shape == (4, 4)
    assert torch.allclose(distances.diagonal(), torch.zeros(4, dtype=torch.float64), atol=1e-7)
    assert distances[0, 1].item() == pytest.approx(0.0, abs=1e-7)  # identical heads
    assert distances[0, 2].item() == pytest.approx(2 * math.log(2), rel=1e-6)  # disjoint: ln 2 per row, 2 rows
    one_row = jensenshannon(first[0].numpy(), uniform[0].numpy()) ** 2
    assert distances[0, 3].item() == pytest.approx(2 * one_row, rel=1e-5)
    assert torch.allclose(distances, distances.T)


def test_pairwise_js_chunking_does_not_change_the_result(monkeypatch):
    torch.manual_seed(0)
    rows = torch.softmax(torch.randn(7, 3, 5), dim=-1)
    whole = pairwise_js(rows)
    monkeypatch.setattr("harness.analyses.clustering.CHUNK_ELEMENTS", 1)
    assert torch.allclose(whole, pairwise_js(rows))


def test_sample_rows_stays_within_each_example_and_is_seeded():
    lengths = torch.tensor([3, 10])
    examples, positions = sample_rows(lengths, 4, torch.Generator().manual_seed(0))
    assert examples.tolist().count(0) == 3 and examples.tolist().count(1) == 4
    assert all(p < lengths[e] for e, p in zip(examples.tolist(), positions.tolist()))
    again = sample_rows(lengths, 4, torch.Generator().manual_seed(0))
    assert torch.equal(again[1], positions)


def test_mds_keeps_identical_heads_together_and_far_heads_apart():
    distances = np.array([[0, 0, 2, 2], [0, 0, 2, 2], [2, 2, 0, 0], [2, 2, 0, 0]], dtype=float)
    coordinates, _ = embed(distances, seed=0)
    assert np.linalg.norm(coordinates[0] - coordinates[1]) < 1e-3
    assert np.linalg.norm(coordinates[0] - coordinates[2]) > 1.0


EXAMPLES = [
    Example("1", "the cat sat on the mat .", "the dog ran .", 0),
    Example("2", "he is not happy", "it sat", 1),
    Example("3", "a dog", "she sat .", 1),
]


def run_clustering(models, tokenizer, pairs=(("pretrained", "finetuned"),)):
    return run_analysis(Clustering, models, tokenizer, EXAMPLES, 2, pairs, clustering_tokens_per_example=3)


def test_identical_weights_give_zero_change_and_coinciding_points(tiny_tokenizer, tmp_path):
    result = run_clustering({"pretrained": tiny_bert(0), "finetuned": tiny_bert(0)}, tiny_tokenizer)
    assert result["tokens_used"] == 9 and result["num_items"] == 3
    assert np.allclose(result["per_pair"]["pretrained->finetuned"]["between_versions"], 0.0, atol=1e-6)
    points = np.asarray(result["mds"]).reshape(2, 8, 2)
    assert np.allclose(points[0], points[1], atol=1e-3)
    distances = np.asarray(result["js_divergence"])
    assert distances.shape == (16, 16) and (distances[:8, :8] > 0).sum() == 8 * 7
    entry = {"pairs": [["pretrained", "finetuned"]], "result": result}
    files = ClusteringView.draw(entry, {"model": "tiny", "task": "test"}, tmp_path)
    assert len(files) == 2 and all(path.stat().st_size > 0 for path in files)


def test_different_models_move_heads(tiny_pair, tiny_tokenizer):
    change = np.asarray(
        run_clustering(tiny_pair, tiny_tokenizer)["per_pair"]["pretrained->finetuned"]["between_versions"]
    )
    assert change.shape == (2, 4) and (change > 1e-3).all() and (change <= math.log(2) + 1e-6).all()


def test_three_checkpoints_share_one_space(tiny_tokenizer, tmp_path):
    models = {"a": tiny_bert(0), "b": tiny_bert(1), "c": tiny_bert(0)}
    result = run_clustering(models, tiny_tokenizer, pairs=(("a", "b"), ("a", "c")))
    assert np.asarray(result["js_divergence"]).shape == (24, 24) and len(result["mds"]) == 24
    assert np.allclose(result["per_pair"]["a->c"]["between_versions"], 0.0, atol=1e-6)
    assert (np.asarray(result["per_pair"]["a->b"]["between_versions"]) > 1e-3).all()
    entry = {"pairs": [["a", "b"], ["a", "c"]], "result": result}
    files = ClusteringView.draw(entry, {"model": "tiny", "task": "test"}, tmp_path)
    assert [f.name for f in files] == [
        "clustering_mds.png",
        "clustering_between_versions.png",
        "clustering_between_versions_a_c.png",
    ]
