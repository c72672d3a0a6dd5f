"""Head disabling, importance and the cross-fitted pruning on tiny BERTs; the paired statistics behind
them, and the verdicts they give (disabling helps after Holm; importance against random and oracle orders)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.stats import beta

from harness.analyses.ablation import Ablation
from harness.analyses.ablation_masks import (
    PRUNING_FRACTIONS,
    RANDOM_ORDERS,
    cross_fitted_orders,
    cross_fitting_halves,
    pruned_counts,
    pruning_masks,
    pruning_orders,
    single_variants,
)
from harness.analyses.ablation_statistics import (
    area_comparisons,
    family,
    gain_bounds,
    held_out_predictions,
    normalised_per_layer,
    within_one_point,
)
from harness.analyses.significance import (
    bootstrap_differences,
    holm,
    mcnemar_p_values,
    metric_rows,
    paired_differences,
    simultaneous_intervals,
)
from harness.config import AnalysisConfig
from harness.inputs.encoding import encode_examples
from harness.model.forward import Capture, Interventions, forward, forward_variants, use_harness_attention
from harness.results.checkpoints import FINETUNED, PRETRAINED
from harness.results.store import ResultStore
from harness.run.engine import analyse
from harness.views.ablation import AblationView
from harness.views.ablation_evidence import disabling_gain
from harness.views.ablation_results import MODES
from harness.views.base import per_checkpoint_results
from tasks.examples import Example
from tasks.loading import load_examples
from tasks.metrics import score_predictions
from tasks.registry import get_task
from tests.fixtures import as_checkpoints, snapshot, tiny_bert, tiny_dev_sources

PAIRS = [(PRETRAINED, FINETUNED)]
PAIR_EXAMPLES = [
    Example("1", "the cat sat on the mat .", "the dog ran .", 0),
    Example("2", "he is not happy", "it sat", 1),
    Example("3", "a dog", "she sat .", 1),
]


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
    first = pruning_orders(np.arange(24.0).reshape(2, 12), np.zeros((2, 12)), seed=0)
    second = pruning_orders(-np.arange(24.0).reshape(2, 12), np.zeros((2, 12)), seed=0)
    assert set(first) == {"oracle", "importance", *(f"random{index + 1}" for index in range(RANDOM_ORDERS))}
    assert RANDOM_ORDERS >= 20  # enough random orders to resample their mean
    assert first["importance"] == list(range(24)) and first["random1"] != first["random2"]
    assert second["importance"] == list(range(24))[::-1] and second["random1"] == first["random1"]
    orders = {name: [first[name], second[name]] for name in first}  # each order ranked on each half
    where, gates = pruning_masks(orders, 2, 12)
    counts = pruned_counts(24)
    assert counts == [0, 2, 5, 7, 10, 12, 14, 17, 19, 22, 24] and len(PRUNING_FRACTIONS) == 11
    assert len(where) == len(orders) * 2 * (len(counts) - 1)
    for order, half, step, index in where:
        mask = gates[index].flatten()
        assert (mask == 0).sum() == counts[step] and set((mask == 0).nonzero().flatten().tolist()) == set(
            orders[order][half][: counts[step]]
        )
    # a random order is the same on both halves, the oracle of all-zero deltas is the first half's importance
    # order, and every order's last step (all heads) is one mask: each distinct mask is scored once
    distinct = {
        tuple(sorted(ranked[half][:pruned])) for ranked in orders.values() for half in (0, 1) for pruned in counts[1:]
    }
    assert (
        len(gates) == len({tuple(g.flatten().tolist()) for g in gates}) == len(distinct) <= (RANDOM_ORDERS + 2) * 9 + 1
    )


def test_the_halves_are_disjoint_seeded_and_cover_every_example():
    first, second = cross_fitting_halves(11, seed=3)
    assert len(first) == 5 and len(second) == 6 and not set(first) & set(second)
    assert sorted([*first, *second]) == list(range(11)) and (np.diff(first) > 0).all()
    again = cross_fitting_halves(11, seed=3)
    assert all(np.array_equal(a, b) for a, b in zip(again, (first, second)))
    assert not np.array_equal(cross_fitting_halves(11, seed=4)[0], first)


def test_each_order_is_ranked_on_its_half_only():
    """Half A's examples say head 0 matters least and disabling head 3 helps; half B's the opposite."""
    halves = (np.array([0, 2, 4]), np.array([1, 3, 5]))
    gates = np.ones((6, 1, 4))
    gates[halves[0], 0, 0] = 0.1
    gates[halves[1], 0, 3] = 0.1
    labels = np.ones(6, dtype=int)
    intact = np.array([1, 1, 0, 0, 1, 1])  # wrong on examples 2 (half A) and 3 (half B)
    zero_heads = np.tile(intact, (4, 1))
    zero_heads[3, 2] = 1  # disabling head 3 puts example 2 right
    zero_heads[0, 3] = 1  # disabling head 0 puts example 3 right
    orders = cross_fitted_orders(halves, gates, zero_heads, intact, labels, "accuracy", seed=0)
    assert [ranked[0] for ranked in orders["importance"]] == [0, 3]
    assert [ranked[0] for ranked in orders["oracle"]] == [3, 0]
    assert orders["random1"][0] == orders["random1"][1]
    assert np.allclose(np.linalg.norm(normalised_per_layer(gates[halves[0]].mean(axis=0)), axis=1), 1.0)


def test_each_example_is_scored_under_the_masks_ranked_on_the_other_half():
    halves = (np.array([0, 1, 4]), np.array([2, 3, 5]))
    where = [("importance", half, step, 10 * half + step) for half in (0, 1) for step in (1, 2)]
    predictions = np.arange(20)[:, None] * 100 + np.arange(6)  # mask index * 100 + example
    intact = -np.ones(6, dtype=int)
    held_out = held_out_predictions(where, predictions, halves, intact, steps=3)["importance"]
    assert held_out[0].tolist() == [-1] * 6  # step 0: the intact model
    for step in (1, 2):
        scored_by_first = held_out[step, halves[1]] // 100  # half B's examples: masks ranked on half A (0)
        scored_by_second = held_out[step, halves[0]] // 100
        assert set(scored_by_first) == {step} and set(scored_by_second) == {10 + step}
        assert (held_out[step] % 100 == np.arange(6)).all()


def hand_made_curves(importance_correct: list[int], random_correct: list[int], count: int = 200) -> dict:
    """Held-out predictions of labels all 1: at each step, the first ``k`` examples right for each order."""

    def order(correct: list[int]) -> np.ndarray:
        return np.stack([(np.arange(count) < k).astype(int) for k in correct])

    return {
        "importance": order(importance_correct),
        "oracle": order(importance_correct),
        **{f"random{i}": order(random_correct) for i in range(1, 6)},
    }


def test_importance_beats_random_by_the_area_under_its_curve_with_a_paired_interval():
    steps = len(PRUNING_FRACTIONS)
    kept = [200 - 4 * step for step in range(steps)]  # importance loses 2 points a step
    dropped = [200 - 16 * step for step in range(steps)]  # random orders 8 points a step
    compared = area_comparisons("accuracy", hand_made_curves(kept, dropped), np.ones(200, dtype=int), PRUNING_FRACTIONS)
    assert compared["areas"]["importance"] == pytest.approx(0.9) and compared["areas"]["random1"] == pytest.approx(0.6)
    beats = compared["importance_vs_random"]
    assert beats["value"] == pytest.approx(0.3) and beats["verdict"] == "holds"
    assert 0 < beats["interval"][0] < 0.3 < beats["interval"][1]
    assert (beats["unit"], beats["n"]) == ("dev examples", 200)
    assert "random orders (ours; the orders resampled too)" in beats["statistic"]
    tie = compared["importance_vs_oracle"]  # the same curve: a tie is a tie
    assert (tie["value"], tie["interval"], tie["verdict"]) == (0.0, [0.0, 0.0], "unclear")


def test_importance_no_better_than_random_on_noise_is_unclear():
    generator = np.random.default_rng(1)
    noisy = {
        name: (generator.random((len(PRUNING_FRACTIONS), 200)) < 0.7).astype(int)
        for name in ("importance", "oracle", *(f"random{i}" for i in range(1, 6)))
    }
    compared = area_comparisons("accuracy", noisy, np.ones(200, dtype=int), PRUNING_FRACTIONS)
    low, high = compared["importance_vs_random"]["interval"]
    assert low < 0 < high and compared["importance_vs_random"]["verdict"] == "unclear"


def sweep(gained: list[int], lost: list[int], count: int = 200, seed: int = 0) -> dict:
    """A fine-tuned result of 2 x 4 heads (uniform mode) whose disabling puts ``gained[h]`` wrong examples right
    and ``lost[h]`` right ones wrong, with the real paired statistics."""
    generator = np.random.default_rng(seed)
    labels = generator.integers(0, 2, count)
    intact = np.where(np.arange(count) < 0.7 * count, labels, 1 - labels)  # right on the first 70%
    rows = []
    for gains, losses in zip(gained, lost):
        row = intact.copy()
        wrong, right = np.flatnonzero(row != labels), np.flatnonzero(row == labels)
        for chosen in (generator.choice(wrong, gains, replace=False), generator.choice(right, losses, replace=False)):
            row[chosen] = 1 - row[chosen]
        rows.append(row)
    rows = np.stack(rows)
    grids = family(
        paired_differences("accuracy", rows, intact, labels), (2, 4), gain_bounds("accuracy", rows, intact, labels)
    )
    return {"examples": count, "heads": {"uniform": grids}}


def test_disabling_helps_only_where_a_gain_survives_holm_over_the_family():
    large = sweep([40, 3, 2, 0, 1, 3, 2, 1], [0, 2, 3, 1, 1, 2, 3, 2])  # head 1-1 puts 40 wrong examples right
    evidence = disabling_gain(large, "heads", "uniform")
    assert evidence["verdict"] == "holds" and evidence["where"] == "1-1"
    assert evidence["value"] == pytest.approx(0.2) and evidence["p_holm"] < 0.05 and evidence["n"] == 200
    assert evidence["text"].startswith("layer-head 1-1: +20.0 points [") and "Holm-adjusted p" in evidence["text"]
    assert "(simultaneous, 99.38% each)" in evidence["text"]  # 1 - 0.05 / 8: the level of the Holm test beside it

    noise = sweep([3, 2, 4, 1, 2, 3, 2, 4], [2, 3, 2, 2, 1, 2, 3, 3])
    evidence = disabling_gain(noise, "heads", "uniform")
    assert evidence["verdict"] == "unclear" and evidence["value"] > 0  # the best of 8 noisy changes is a gain ...
    assert evidence["text"].startswith("no head's gain is significant after Holm over 8 heads")  # ... not a finding

    borderline = sweep([12, 3, 2, 0, 1, 3, 2, 1], [2, 2, 3, 1, 1, 2, 3, 2])  # 12 gains against 2: p 0.013 alone
    grids = borderline["heads"]["uniform"]
    assert grids["p"][0][0] < 0.05 < grids["p_holm"][0][0]  # raw p would call it a gain; Holm over 8 heads does not
    assert disabling_gain(borderline, "heads", "uniform")["verdict"] == "unclear"

    hurts = sweep([0] * 8, [40] * 8)
    evidence = disabling_gain(hurts, "heads", "uniform")
    assert evidence["verdict"] == "fails"  # every head's disabling loses 20 points: each gain shown below 0.1 point
    assert evidence["text"].startswith("every one of the 8 heads gains less than 0.1 point")
    assert evidence["members_below_margin"] == 8

    one_unclear = sweep([0] * 7 + [1], [40] * 7 + [2])  # one head changes three examples: its gain may be a point
    assert disabling_gain(one_unclear, "heads", "uniform")["verdict"] == "unclear"

    unchanged = sweep([0] * 8, [0] * 8)  # no head changes a prediction of 200: each may still flip 1.8% elsewhere
    assert disabling_gain(unchanged, "heads", "uniform")["verdict"] == "unclear"


def test_the_equivalence_bound_of_accuracy_is_exact_where_the_bootstrap_is_degenerate():
    """A head that changes none of 200 predictions has a bootstrap interval of [0, 0]; what the
    sample shows is only that it flips under about 3.7 / 200 of the examples, so its gain may
    be 1.8 points: Clopper-Pearson, not the bootstrap, bounds it."""
    labels = np.ones(200, dtype=int)
    intact = np.ones(200, dtype=int)
    same = intact[None].copy()
    (bound,) = gain_bounds("accuracy", same, intact, labels)
    assert bound == pytest.approx(beta.ppf(1 - 0.0125, 1, 200), abs=1e-12) and 0.018 < bound < 0.022
    _, interval = bootstrap_differences("accuracy", same, intact, labels)
    assert interval.tolist() == [[0.0, 0.0]]  # what a percentile interval would have claimed
    lost = intact[None].copy()
    lost[0, :30] = 0  # 30 losses, no gain: shown below the margin
    (bound,) = gain_bounds("accuracy", lost, intact, labels)
    assert bound < 0.001


def test_simultaneous_intervals_are_wider_than_each_members_and_at_bonferronis_level():
    rows = sweep([3, 2, 4, 1, 2, 3, 2, 4], [2, 3, 2, 2, 1, 2, 3, 3])["heads"]["uniform"]
    low, high = np.asarray(rows["low"]), np.asarray(rows["high"])
    low_all, high_all = np.asarray(rows["low_simultaneous"]), np.asarray(rows["high_simultaneous"])
    assert (low_all <= low).all() and (high_all >= high).all() and ((low_all < low) | (high_all > high)).any()
    assert rows["simultaneous_level"] == pytest.approx(1 - 0.05 / 8)
    generator = np.random.default_rng(3)
    labels = generator.integers(0, 2, 300)
    reference = labels.copy()
    predictions = np.where(generator.random((40, 300)) < 0.1, 1 - labels, labels)  # 40 variants, each ~10% wrong
    # under Bonferroni's level the intervals cover the true changes (-0.1 each) all at once about 95% of
    # the time: here each one covers it, which a 95% interval of each would do for about 0.95^40 = 13% of samples
    intervals = simultaneous_intervals("accuracy", predictions, reference, labels)
    assert ((intervals[:, 0] <= -0.1) & (-0.1 <= intervals[:, 1])).all()


def test_a_score_counts_the_steps_before_its_first_drop_of_more_than_one_point():
    assert within_one_point([0.60, 0.605, 0.595, 0.58, 0.61], 0.60) == 2
    assert within_one_point([0.60, 0.50, 0.60], 0.60) == 0


def test_stacked_variants_in_chunks_equal_one_variant_at_a_time(tiny_tokenizer):
    model = use_harness_attention(tiny_bert(3))
    encoded = encode_examples(tiny_tokenizer, PAIR_EXAMPLES, max_length=32, pair=True)
    _, variants = single_variants(2, 4)
    intact = torch.ones(1, 2, 4)  # a variant that changes nothing: the intact logits
    variants = Interventions(
        torch.cat([variants.head_gates, intact]), torch.cat([variants.uniform_heads, intact.bool().logical_not()])
    )
    # 2 variants of 3 rows per pass: many passes; layer-2 variants start from the intact pass's layer 1
    stacked = forward_variants(model, encoded, variants, max_rows=7)
    size = len(encoded.items)
    assert len(stacked) == 2 * 2 * (4 + 1) + 1
    assert torch.equal(stacked[-1], forward(model, encoded).logits)
    for index in range(len(stacked)):
        one = Interventions(
            variants.head_gates[index].expand(size, 2, 4), variants.uniform_heads[index].expand(size, 2, 4)
        )
        assert torch.allclose(stacked[index], forward(model, encoded, interventions=one).logits, atol=1e-6)


@pytest.fixture(scope="module")
def ablated(tiny_tokenizer, tiny_data, tmp_path_factory):
    """The ablation of a tiny 'fine-tuned' BERT (and its untrained 'pre-trained' partner) on the tiny RTE dev set."""
    rte = get_task("rte")
    examples = load_examples(rte, "dev", tiny_data / "glue")
    settings = AnalysisConfig(eval_batch_size=4)
    sources = tiny_dev_sources(tiny_tokenizer, rte, examples, settings)
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


def test_pruning_ranks_on_one_half_and_scores_the_other_with_the_model_itself(ablated, tiny_tokenizer):
    entry, checkpoints, _, _, examples = ablated
    pruning = per_checkpoint_results(entry)[FINETUNED]["pruning"]
    position = {example.guid: index for index, example in enumerate(examples)}
    halves = [np.asarray([position[guid] for guid in half]) for half in pruning["halves"]]
    assert not set(halves[0]) & set(halves[1]) and sorted([*halves[0], *halves[1]]) == list(range(len(examples)))
    model = checkpoints[1].model
    encoded = encode_examples(tiny_tokenizer, examples, max_length=64, pair=True)
    labels = torch.tensor([example.label for example in examples])
    gates = forward(model, encoded, capture=Capture(gate_grad=True), targets=labels).gate_grads.abs().double().numpy()
    for half, ranked_on in enumerate(halves):
        importance = normalised_per_layer(gates[ranked_on].mean(axis=0)).ravel()
        ranked = np.asarray(pruning["orders"]["importance"][half])
        assert (np.diff(importance[ranked]) >= -1e-6).all()  # increasing importance on this half's examples
    step = 1
    pruned = pruned_counts(2 * 4)[step]
    masks = torch.ones(len(examples), 2 * 4)
    for half in range(len(halves)):
        scored = torch.as_tensor(halves[1 - half])
        masks[scored[:, None], torch.as_tensor(pruning["orders"]["importance"][half][:pruned])] = 0.0
    predictions = forward(model, encoded, interventions=Interventions(head_gates=masks.view(-1, 2, 4))).logits
    accuracy = (predictions.argmax(-1) == labels).double().mean().item()
    assert pruning["curves"]["importance"][step] == pytest.approx(accuracy)
    assert pruning["importance_vs_random"]["verdict"] in ("holds", "fails", "unclear")
    assert AblationView.claims["importance_beats_random"].judge(entry) == pruning["importance_vs_random"]


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
    assert mcnemar_p_values(np.stack([reference, worse]), reference, labels) == pytest.approx([1.0, 2 * 0.5**10])
    assert holm(np.array([0.01, 0.04, 0.03, 0.005])).tolist() == pytest.approx([0.03, 0.06, 0.06, 0.02])
    truth = np.r_[np.ones(15, dtype=int), np.zeros(15, dtype=int)]
    differences = paired_differences("f1", np.stack([truth, 1 - truth]), truth, truth)
    assert differences.differences.tolist() == pytest.approx([0.0, -1.0])
    assert differences.p_values[0] == 1.0 and differences.p_values[1] < 1e-3
    assert differences.intervals[1, 1] < 0
