"""Head disabling, importance and pruning on tiny BERTs; the paired statistics behind them."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from harness.analyses.ablation import Ablation
from harness.analyses.ablation_masks import (
    PRUNING_FRACTIONS,
    pruned_counts,
    pruning_masks,
    pruning_orders,
    single_variants,
)
from harness.analyses.ablation_statistics import within_one_point
from harness.analyses.significance import holm, mcnemar_p_values, metric_rows, paired_differences
from harness.config import AnalysisConfig
from harness.inputs.encoding import encode_examples
from harness.inputs.sources import SourceContext
from harness.model.forward import Interventions, forward, forward_variants, use_harness_attention
from harness.results.checkpoints import FINETUNED, PRETRAINED
from harness.results.store import ResultStore
from harness.run.engine import analyse
from harness.views.ablation import MODES
from harness.views.base import per_checkpoint_results
from tasks.examples import Example
from tasks.loading import load_examples
from tasks.metrics import score_predictions
from tasks.registry import get_task
from tests.conftest import as_checkpoints, snapshot, tiny_bert

PAIRS = [(PRETRAINED, FINETUNED)]
PAIR_EXAMPLES = [Example("1", "the cat sat on the mat .", "the dog ran .", 0),
                 Example("2", "he is not happy", "it sat", 1), Example("3", "a dog", "she sat .", 1)]


def test_single_variants_disable_exactly_one_head_or_one_layer_each_way():
    described, variants = single_variants(2, 4)
    assert len(described) == len(MODES) * 2 * (4 + 1)
    for index, variant in enumerate(described):
        gated = (variants.head_gates[index] == 0).nonzero().tolist()
        uniform = variants.uniform_heads[index].nonzero().tolist()
        touched = gated if variant["mode"] == "zero" else uniform
        assert (uniform if variant["mode"] == "zero" else gated) == []
        heads = range(4) if variant["head"] is None else [variant["head"]]
        assert touched == [[variant["layer"], head] for head in heads]


def test_pruning_steps_cover_ten_percent_of_all_heads_and_share_identical_masks():
    orders = pruning_orders(np.arange(24.0).reshape(2, 12), np.zeros((2, 12)), seed=0)
    assert set(orders) == {"oracle", "importance", "random1", "random2", "random3", "random4", "random5"}
    assert orders["importance"] == list(range(24)) and orders["random1"] != orders["random2"]
    where, gates = pruning_masks(orders, 2, 12)
    counts = pruned_counts(24)
    assert counts == [0, 2, 5, 7, 10, 12, 14, 17, 19, 22, 24] and len(PRUNING_FRACTIONS) == 11
    for order, step, index in where:
        mask = gates[index].flatten()
        assert (mask == 0).sum() == counts[step] and set((mask == 0).nonzero().flatten().tolist()) == set(
            orders[order][:counts[step]])
    # the oracle of all-zero deltas and the importance order are the same order: their masks are shared,
    # and every order's last step (all heads) is one mask
    assert len(gates) == len({tuple(g.flatten().tolist()) for g in gates}) < len(where)


def test_a_score_counts_the_steps_before_its_first_drop_of_more_than_one_point():
    assert within_one_point([0.60, 0.605, 0.595, 0.58, 0.61], 0.60) == 2
    assert within_one_point([0.60, 0.50, 0.60], 0.60) == 0


def test_stacked_variants_in_chunks_equal_one_variant_at_a_time(tiny_tokenizer):
    model = use_harness_attention(tiny_bert(3))
    encoded = encode_examples(tiny_tokenizer, PAIR_EXAMPLES, max_length=32, pair=True)
    _, variants = single_variants(2, 4)
    intact = torch.ones(1, 2, 4)  # a variant that changes nothing: the intact logits
    variants = Interventions(torch.cat([variants.head_gates, intact]),
                             torch.cat([variants.uniform_heads, intact.bool().logical_not()]))
    # 2 variants of 3 rows per pass: many passes; layer-2 variants start from the intact pass's layer 1
    stacked = forward_variants(model, encoded, variants, max_rows=7)
    size = len(encoded.items)
    assert len(stacked) == 2 * 2 * (4 + 1) + 1
    assert torch.equal(stacked[-1], forward(model, encoded).logits)
    for index in range(len(stacked)):
        one = Interventions(variants.head_gates[index].expand(size, 2, 4),
                            variants.uniform_heads[index].expand(size, 2, 4))
        assert torch.allclose(stacked[index], forward(model, encoded, interventions=one).logits, atol=1e-6)


@pytest.fixture(scope="module")
def ablated(tiny_tokenizer, tiny_data, tmp_path_factory):
    """The ablation of a tiny 'fine-tuned' BERT (and its untrained 'pre-trained' partner) on the tiny RTE dev set."""
    rte = get_task("rte")
    examples = load_examples(rte, "dev", tiny_data / "glue")
    settings = AnalysisConfig(eval_batch_size=4)
    sources = SourceContext(tiny_tokenizer, settings, tokenizer_name="tiny", max_length=64, task=rte,
                            task_examples=examples, task_identity={"split": "dev"}, eval_examples={"dev": examples},
                            eval_identity={"dev": "tiny dev"})
    checkpoints = as_checkpoints({PRETRAINED: tiny_bert(0), FINETUNED: tiny_bert(1)})
    store = ResultStore(tmp_path_factory.mktemp("ablation_store"))
    entry = analyse([Ablation], checkpoints, PAIRS, sources, store)["ablation"]
    return entry, checkpoints, sources, store, examples


def test_the_fine_tuned_checkpoint_gets_every_delta_and_the_untrained_one_a_note(ablated):
    entry, _, _, _, examples = ablated
    results = per_checkpoint_results(entry)
    assert results[PRETRAINED]["trained"] is False
    assert "untrained" in results[PRETRAINED]["importance"]["skipped_because"]
    tuned = results[FINETUNED]
    assert tuned["examples"] == len(examples) and tuned["metric"] == "accuracy"
    for mode in MODES:
        heads, layers = tuned["heads"][mode], tuned["layers"][mode]
        assert np.asarray(heads["delta"]).shape == (2, 4) and len(layers["delta"]) == 2
        assert (np.asarray(heads["low"]) <= np.asarray(heads["delta"]) + 1e-12).all()
        assert (np.asarray(heads["p_holm"]) >= np.asarray(heads["p"])).all()
    assert tuned["pruning"]["curves"]["importance"][0] == tuned["intact"]
    assert len(tuned["pruning"]["curves"]["random1"]) == len(PRUNING_FRACTIONS)


def test_deltas_are_the_scores_of_the_disabled_models_scored_alone(ablated, tiny_tokenizer):
    entry, checkpoints, _, _, examples = ablated
    tuned = per_checkpoint_results(entry)[FINETUNED]
    model = checkpoints[1].model
    encoded = encode_examples(tiny_tokenizer, examples, max_length=64, pair=True)
    labels = np.array([example.label for example in examples])
    intact = forward(model, encoded).logits.argmax(-1).numpy()
    gates = torch.ones(len(examples), 2, 4)
    gates[:, 1, 2] = 0.0  # layer 2, head 3 gated to 0
    masked = forward(model, encoded, interventions=Interventions(head_gates=gates)).logits.argmax(-1).numpy()
    expected = (masked == labels).mean() - (intact == labels).mean()
    assert tuned["intact"] == pytest.approx((intact == labels).mean())
    assert tuned["heads"]["zero"]["delta"][1][2] == pytest.approx(expected)


def test_importance_is_non_negative_normalised_per_layer_and_reproducible(ablated, tmp_path):
    entry, checkpoints, sources, _, _ = ablated
    importance = per_checkpoint_results(entry)[FINETUNED]["importance"]
    normalised = np.asarray(importance["normalised"])
    assert (np.asarray(importance["raw"]) >= 0).all() and (np.asarray(importance["raw"]) > 0).any()
    assert np.allclose(np.linalg.norm(normalised, axis=1), 1.0)
    again = analyse([Ablation], checkpoints, PAIRS, sources, ResultStore(tmp_path))["ablation"]
    assert per_checkpoint_results(again)[FINETUNED]["importance"] == importance


def test_a_stored_ablation_is_reused_without_rewriting_it(ablated):
    entry, checkpoints, sources, store, _ = ablated
    before = snapshot(store.root)
    again = analyse([Ablation], checkpoints, PAIRS, sources, store)["ablation"]
    assert again["result"] == entry["result"] and snapshot(store.root) == before


def test_vectorised_metrics_equal_the_task_metrics():
    generator = np.random.default_rng(0)
    labels, predictions = generator.integers(0, 2, 40), generator.integers(0, 2, (3, 40))
    for task, metric in (("mrpc", "f1"), ("cola", "matthews"), ("rte", "accuracy")):
        expected = [score_predictions(get_task(task), row, labels, (metric,))[metric] for row in predictions]
        assert np.allclose(metric_rows(metric, predictions, labels), expected)
    scores = generator.random(40) * 5
    noisy = scores + generator.normal(size=(3, 40))
    for metric in ("pearson", "spearman"):
        expected = [score_predictions(get_task("stsb"), row, scores, (metric,))[metric] for row in noisy]
        assert np.allclose(metric_rows(metric, noisy, scores), expected)


def test_mcnemar_holm_and_the_permutation_test_on_known_cases():
    labels = np.zeros(30, dtype=int)
    reference = np.zeros(30, dtype=int)
    worse = reference.copy()
    worse[:10] = 1  # 10 examples lost, none gained: two-sided binomial p = 2 * 0.5 ** 10
    assert mcnemar_p_values(np.stack([reference, worse]), reference, labels) == pytest.approx([1.0, 2 * 0.5 ** 10])
    assert holm(np.array([0.01, 0.04, 0.03, 0.005])).tolist() == pytest.approx([0.03, 0.06, 0.06, 0.02])
    truth = np.r_[np.ones(15, dtype=int), np.zeros(15, dtype=int)]
    differences = paired_differences("f1", np.stack([truth, 1 - truth]), truth, truth)
    assert differences.differences.tolist() == pytest.approx([0.0, -1.0])
    assert differences.p_values[0] == 1.0 and differences.p_values[1] < 1e-3
    assert differences.intervals[1, 1] < 0
