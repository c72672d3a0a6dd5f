"""Linear CKA against an independent implementation (Kornblith et al.'s kernel form on small arrays),
its resamples, the analysis on tiny BERTs against a direct computation, and the findings on
depth and out-of-domain inputs, each able to hold and to fail."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from harness.analyses.cka import (
    RepresentationChange,
    RepresentationChangeText,
    block_grams,
    chance_cka,
    sampled_tokens,
    similarity,
)
from harness.analyses.cosine import CosineSimilarity
from harness.inputs.encoding import encode_examples
from harness.model.forward import Capture, forward, use_harness_attention
from harness.results.checkpoints import FINETUNED, MAIN_PAIR, PRETRAINED
from harness.views.cka import (
    TOKENS_PER_EXAMPLE,
    CkaTextView,
    CkaView,
    against_other_inputs,
    cka_change,
    cka_of,
    example_blocks,
    half_way_layer,
    layer_intervals,
)
from harness.views.evidence import UnitSums, interval_of, resample_weights
from tasks.examples import Example
from tests.fixtures import SENTENCES, run_analysis, tiny_bert


def independent_cka(x: np.ndarray, y: np.ndarray) -> float:
    """Kornblith et al.'s linear CKA through the n x n kernels: HSIC(K, L) / sqrt(HSIC(K, K) HSIC(L, L)),
    HSIC(K, L) = tr(K H L H), H the centring matrix."""
    n = len(x)
    centring = np.eye(n) - np.ones((n, n)) / n
    kernels = [a @ a.T for a in (x, y)]
    hsic = lambda a, b: np.trace(a @ centring @ b @ centring)  # noqa: E731
    return float(hsic(*kernels) / np.sqrt(hsic(kernels[0], kernels[0]) * hsic(kernels[1], kernels[1])))


def grams_of(x: np.ndarray, y: np.ndarray, blocks: np.ndarray) -> np.ndarray:
    """The analysis's grams of one layer (1, 3, G, G) from numpy rows."""
    found = block_grams(torch.from_numpy(x), torch.from_numpy(y), torch.from_numpy(blocks), int(blocks.max()) + 1)
    return found.numpy()[None]


def test_the_independent_cka_is_one_for_the_same_representation_up_to_rotation_and_scale_and_near_zero_for_noise():
    generator = np.random.default_rng(0)
    x = generator.normal(size=(60, 5))
    rotation, _ = np.linalg.qr(generator.normal(size=(5, 5)))
    assert independent_cka(x, x) == pytest.approx(1.0)
    assert independent_cka(x, 3.0 * x @ rotation) == pytest.approx(1.0)
    noise = generator.normal(size=(500, 4)), generator.normal(size=(500, 4))
    assert independent_cka(*noise) < 0.03


def test_the_grams_give_the_independent_cka_and_that_of_any_resample_of_the_groups():
    generator = np.random.default_rng(1)
    x = generator.normal(size=(90, 6))
    y = x @ generator.normal(size=(6, 4)) + 0.8 * generator.normal(size=(90, 4))
    blocks = example_blocks(90, seed=3)
    groups = int(blocks.max()) + 1
    grams = grams_of(x, y, blocks)
    assert cka_of(grams, np.ones((1, blocks.max() + 1)))[0, 0] == pytest.approx(independent_cka(x, y), rel=1e-5)
    rotation, _ = np.linalg.qr(generator.normal(size=(4, 4)))
    assert cka_of(grams_of(x, x, blocks), np.ones((1, groups)))[0, 0] == pytest.approx(1.0, rel=1e-6)
    assert cka_of(grams_of(y, 2 * y @ rotation, blocks), np.ones((1, groups)))[0, 0] == pytest.approx(1.0, rel=1e-6)
    # a resample of the groups: the rows of each group repeated as often as it is drawn, centred as the
    # whole sample was (exactly the grams' value), close to the resample's own centring (O(1/n))
    weights = generator.multinomial(groups, np.full(groups, 1 / groups)).astype(float)
    counts = weights[blocks].astype(int)
    rows = np.repeat(np.arange(90), counts)
    centred = (x - x.mean(axis=0))[rows], (y - y.mean(axis=0))[rows]
    cross = np.linalg.norm(centred[0].T @ centred[1]) ** 2
    fixed = cross / (np.linalg.norm(centred[0].T @ centred[0]) * np.linalg.norm(centred[1].T @ centred[1]))
    assert cka_of(grams, weights[None])[0, 0] == pytest.approx(fixed, rel=1e-5)
    assert cka_of(grams, weights[None])[0, 0] == pytest.approx(independent_cka(x[rows], y[rows]), abs=0.02)
    order = torch.randperm(90, generator=torch.Generator().manual_seed(1))
    shuffled = chance_cka(torch.from_numpy(x), torch.from_numpy(y), seed=1)
    assert shuffled == pytest.approx(independent_cka(x, y[order.numpy()]), rel=1e-5) and shuffled < 0.3


def test_the_groups_are_seeded_and_even():
    blocks = example_blocks(103, seed=0)
    assert np.bincount(blocks).tolist() == [3] * 23 + [2] * 17 and np.array_equal(blocks, example_blocks(103, 0))
    assert sorted(example_blocks(7, seed=0).tolist()) == list(range(7))  # fewer inputs than groups: one each


def test_the_sampled_tokens_are_ordinary_real_and_at_most_the_count(tiny_tokenizer):
    examples = [Example(str(i), text, None, 0) for i, text in enumerate(SENTENCES)]
    encoded = encode_examples(tiny_tokenizer, examples, max_length=32, pair=False)
    rows, positions = sampled_tokens(encoded, tiny_tokenizer.all_special_ids, 3, torch.Generator().manual_seed(0))
    ids = encoded.input_ids[rows, positions]
    assert not torch.isin(ids, torch.tensor(tiny_tokenizer.all_special_ids)).any() and (positions > 0).all()
    assert (positions < encoded.lengths[rows]).all()
    counts = torch.bincount(rows, minlength=len(examples))
    assert (counts == torch.clamp(encoded.lengths - 2, max=3)).all()  # [CLS] and [SEP] left out
    assert (rows.diff() >= 0).all()


PAIR_EXAMPLES = [Example(str(i), a, b, i % 2) for i, (a, b) in enumerate(zip(SENTENCES, reversed(SENTENCES)))]


def test_the_analysis_equals_a_direct_computation_and_a_model_against_itself_is_one(tiny_tokenizer):
    models = {PRETRAINED: tiny_bert(0), FINETUNED: tiny_bert(1)}
    result = run_analysis(RepresentationChange, models, tiny_tokenizer, PAIR_EXAMPLES * 3, batch_size=5)
    pair = result["per_pair"][MAIN_PAIR]
    encoded = encode_examples(tiny_tokenizer, PAIR_EXAMPLES * 3, max_length=32, pair=True)
    states = [
        forward(use_harness_attention(model), encoded, capture=Capture(hidden_states=True)).hidden_states
        for model in models.values()
    ]
    for layer in range(2):
        direct = independent_cka(*(state[:, layer, 0].double().numpy() for state in states))
        assert pair["cls"]["per_layer"][layer] == pytest.approx(direct, rel=1e-4)
        assert (
            pair["cls"]["low_per_layer"][layer]
            <= pair["cls"]["per_layer"][layer]
            <= pair["cls"]["high_per_layer"][layer]
        )
    assert pair["num_examples"] == 24 and pair["tokens"]["rows"] <= 24 * TOKENS_PER_EXAMPLE
    cosine = run_analysis(CosineSimilarity, models, tiny_tokenizer, PAIR_EXAMPLES * 3, batch_size=5)
    assert pair["attention_cosine_per_layer"] == pytest.approx(cosine["per_pair"][MAIN_PAIR]["per_layer"])
    same = run_analysis(
        RepresentationChange, {PRETRAINED: tiny_bert(1), FINETUNED: tiny_bert(1)}, tiny_tokenizer, PAIR_EXAMPLES, 4
    )["per_pair"][MAIN_PAIR]
    for kind in ("tokens", "cls"):
        assert same[kind]["per_layer"] == pytest.approx([1.0, 1.0], abs=1e-5)
        assert same[kind]["chance_per_layer"][0] < 0.99
    assert same["attention_cosine_per_layer"] == pytest.approx([1.0, 1.0])


def synthetic_pair(
    representation_noise: list[float], attention_cosine: list[float], count: int = 120, seed: int = 0
) -> dict:
    """A stored pair whose layer l's second states are the first plus noise of scale
    ``representation_noise[l]``, and each input's attention cosine per layer about ``attention_cosine``."""
    generator = torch.Generator().manual_seed(seed)
    layers = len(representation_noise)
    first = torch.randn(count, layers, 8, generator=generator, dtype=torch.float64)
    scales = torch.tensor(representation_noise, dtype=torch.float64)[None, :, None]
    second = first + scales * torch.randn(count, layers, 8, generator=generator, dtype=torch.float64)
    blocks = example_blocks(count, seed)
    stored = similarity(first, second, torch.from_numpy(blocks), int(blocks.max()) + 1)
    cosines = np.asarray(attention_cosine)[None] + 0.01 * np.random.default_rng(seed).normal(size=(count, layers))
    return {
        "tokens": stored,
        "cls": stored,
        "attention_cosine_per_layer": cosines.mean(axis=0).tolist(),
        "units": UnitSums.of(cosines, np.ones(count), "dev examples").stored(),
        "num_examples": count,
        "blocks": blocks.tolist(),
    }


def as_entry(pair: dict) -> dict:
    return {"result": {"per_pair": {MAIN_PAIR: pair}}, "pairs": [[PRETRAINED, FINETUNED]]}


def test_representation_change_follows_attention_change_or_not():
    claim = CkaView.claims["representation_change_follows_attention_change"].judge
    rising = synthetic_pair([0.1, 0.3, 0.6, 1.0], [0.95, 0.9, 0.8, 0.6])
    evidence = claim(as_entry(rising))
    assert evidence["verdict"] == "holds" and evidence["value"] == pytest.approx(1.0)
    against = synthetic_pair([0.1, 0.3, 0.6, 1.0], [0.6, 0.8, 0.9, 0.95])
    assert claim(as_entry(against))["verdict"] == "fails"
    assert claim(as_entry(synthetic_pair([0.1, 0.2], [0.9, 0.8]))) is None  # two layers: nothing to rank


def test_the_half_way_layer_and_the_claim_that_representations_change_lower():
    assert half_way_layer(np.array([[1.0, 1, 1, 1], [4, 0, 0, 0], [0, 0, 0, 4], [0, 1, 3, 0]])) == pytest.approx(
        [2.0, 0.5, 3.5, 2 + 1 / 3]
    )
    claim = CkaView.claims["representations_change_lower_than_attention"].judge
    lower = synthetic_pair([1.0, 1.0, 1.0, 1.0], [0.99, 0.99, 0.9, 0.5])  # attention changes in the last layers
    assert claim(as_entry(lower))["verdict"] == "holds"
    higher = synthetic_pair([0.05, 0.05, 0.3, 1.5], [0.6, 0.6, 0.6, 0.6])
    evidence = claim(as_entry(higher))
    assert evidence["verdict"] == "fails" and evidence["value"] < 0


def test_less_change_on_running_text_is_judged_per_measure_and_can_fail():
    task = synthetic_pair([0.5, 0.8, 1.2], [0.7, 0.6, 0.5])
    text = synthetic_pair([0.1, 0.2, 0.3], [0.95, 0.9, 0.85], count=90, seed=1)
    found = against_other_inputs(text, task)
    assert found["representations"]["verdict"] == "holds" and found["attention"]["verdict"] == "holds"
    assert len(found["attention"]["per_layer"]) == 3 and found["attention"]["per_layer"][0] == pytest.approx(
        0.25, abs=0.01
    )
    reversed_found = against_other_inputs(task, text)
    assert reversed_found["representations"]["verdict"] == "fails"
    entry = {"result": {"per_pair": {MAIN_PAIR: text}}}  # the running-text entry, related to the task's
    relation = RepresentationChangeText.relate(entry, {"cka": {"result": {"per_pair": {MAIN_PAIR: task}}}})
    judged = CkaTextView.claims["attention_changes_less_out_of_domain"].judge({**entry, "related": relation})
    assert judged["verdict"] == "holds"
    assert RepresentationChangeText.relate(entry, {}) is None


def test_the_change_between_seeds_is_paired_over_the_same_groups():
    near = synthetic_pair([0.2, 0.2], [0.9, 0.9], seed=0)
    far = synthetic_pair([0.8, 1.6], [0.9, 0.9], seed=0)
    found = cka_change(far, near)  # seeds closer to each other than pre-trained to fine-tuned
    assert found["direction"] == ["rises", "rises"] and found["value"][1] > found["value"][0] > 0


def test_a_small_cka_lies_inside_its_interval_where_a_bootstrap_of_the_groups_lies_above_it():
    """Independent states (a CKA near its chance level): a bootstrap of the 40 groups draws some
    twice and raises the CKA, so its percentile interval lies above the sample's CKA; the jackknife
    over the groups (`layer_intervals`), leaving each out once, holds it."""
    generator = torch.Generator().manual_seed(0)
    first, second = (torch.randn(400, 1, 24, generator=generator, dtype=torch.float64) for _ in range(2))
    blocks = torch.as_tensor(example_blocks(400, 0))
    stored = similarity(first, second, blocks, 40)
    grams = np.stack([block_grams(first[:, 0], second[:, 0], blocks, 40).numpy()])
    (value,), (low,), (high,) = layer_intervals(grams)
    assert value == pytest.approx(independent_cka(first[:, 0].numpy(), second[:, 0].numpy()), rel=1e-9)
    assert low < value < high and (stored["low_per_layer"][0], stored["high_per_layer"][0]) == (low, high)
    bootstrap_low, _ = np.asarray(interval_of(cka_of(grams, resample_weights(40)))).ravel()
    assert bootstrap_low > value  # the percentile interval the jackknife replaced
