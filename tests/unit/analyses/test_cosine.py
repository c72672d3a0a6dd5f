import json

import numpy as np
import pytest
import torch

from harness.analyses.cosine import CosineSimilarity, cosine_per_example
from harness.results.checkpoints import FINETUNED, PRETRAINED
from harness.views.cosine import CosineView
from harness.views.evidence import UnitSums
from tasks.examples import Example
from tests.fixtures import run_analysis, tiny_bert

EXAMPLES = [
    Example("1", "the cat sat on the mat .", "the dog ran .", 0),
    Example("2", "he is not happy", "it sat", 1),
    Example("3", "a dog", "she sat", 1),
]
PAIR = "pretrained->finetuned"


def run_cosine(models, tokenizer, batch_size=2, pairs=((PRETRAINED, FINETUNED),)):
    return run_analysis(CosineSimilarity, models, tokenizer, EXAMPLES, batch_size, pairs)["per_pair"]


def test_a_model_against_an_identical_copy_gives_one_everywhere(tiny_tokenizer):
    result = run_cosine({PRETRAINED: tiny_bert(0), FINETUNED: tiny_bert(0)}, tiny_tokenizer)[PAIR]
    assert torch.allclose(torch.tensor(result["per_head"]), torch.ones(2, 4), atol=1e-5)
    assert torch.allclose(torch.tensor(result["per_head_std"]), torch.zeros(2, 4), atol=1e-3)
    assert result["num_examples"] == 3


def test_different_models_are_below_one_and_in_range(tiny_pair, tiny_tokenizer):
    result = run_cosine(tiny_pair, tiny_tokenizer)[PAIR]
    per_head = torch.tensor(result["per_head"])
    assert per_head.shape == (2, 4)
    assert (per_head <= 1 + 1e-6).all() and (per_head >= -1 - 1e-6).all() and (per_head < 0.9999).any()
    assert torch.allclose(torch.tensor(result["per_layer"]), per_head.mean(dim=1))


def test_padding_does_not_change_the_result(tiny_pair, tiny_tokenizer):
    one_at_a_time = run_cosine(tiny_pair, tiny_tokenizer, batch_size=1)[PAIR]
    padded = run_cosine(tiny_pair, tiny_tokenizer, batch_size=3)[PAIR]
    assert torch.allclose(torch.tensor(one_at_a_time["per_head"]), torch.tensor(padded["per_head"]), atol=1e-5)


def test_each_examples_mean_cosine_per_layer_is_kept_and_averages_to_the_per_layer_means(tiny_pair, tiny_tokenizer):
    result = json.loads(json.dumps(run_cosine(tiny_pair, tiny_tokenizer)[PAIR]))  # as stored
    units = UnitSums.read(result["units"])
    assert (units.unit, units.numerators.shape) == ("dev examples", (3, 2)) and (units.denominators == 1).all()
    assert np.allclose(units.ratios(np.ones((1, 3)))[0], result["per_layer"], atol=1e-6)
    claim = CosineView.claims["last_layers_change_most"]
    assert claim.judge({"result": {"per_pair": {PAIR: result}}}) is None  # two layers: none but the last two


def stored_cosines(layer_means: list[float], spread: float, examples: int = 200) -> dict:
    """A cosine entry whose examples' mean cosines per layer scatter by ``spread`` around ``layer_means``."""
    per_example = np.random.default_rng(0).normal(layer_means, spread, size=(examples, len(layer_means)))
    units = UnitSums.of(per_example, np.ones(examples), "dev examples")
    return json.loads(
        json.dumps(
            {"result": {"per_pair": {PAIR: {"per_layer": per_example.mean(axis=0).tolist(), "units": units.stored()}}}}
        )
    )


@pytest.mark.parametrize(
    ("layer_means", "spread", "verdict"),
    [
        ([0.9, 0.85, 0.5, 0.4], 0.1, "holds"),  # the last two layers far below the others
        ([0.4, 0.85, 0.5, 0.9], 0.1, "fails"),  # the first layer changes most, the last least
        ([0.9, 0.6, 0.6, 0.4], 0.3, "unclear"),  # layers 2 and 3 alike: which is lower is the sample's chance
    ],
)
def test_the_last_two_layers_change_most_is_judged_on_resamples_of_the_examples(layer_means, spread, verdict):
    evidence = CosineView.claims["last_layers_change_most"].judge(stored_cosines(layer_means, spread))
    assert (evidence["verdict"], evidence["unit"], evidence["n"]) == (verdict, "dev examples", 200)
    per_layer = np.asarray(stored_cosines(layer_means, spread)["result"]["per_pair"][PAIR]["per_layer"])
    margin = per_layer[:2].min() - per_layer[2:].max()  # the last two layers' smaller change minus the largest other
    assert evidence["statistic"].endswith(f": {margin:+.3g}") and evidence["holds"] == (margin > 0)
    assert (evidence["support"] >= 0.975) == (verdict == "holds") and (evidence["support"] <= 0.025) == (
        verdict == "fails"
    )


def test_three_checkpoints_compare_every_declared_pair(tiny_tokenizer):
    models = {"a": tiny_bert(0), "b": tiny_bert(1), "c": tiny_bert(0)}
    result = run_cosine(models, tiny_tokenizer, pairs=(("a", "b"), ("a", "c"), ("b", "c")))
    assert set(result) == {"a->b", "a->c", "b->c"}
    assert torch.allclose(torch.tensor(result["a->c"]["per_head"]), torch.ones(2, 4), atol=1e-5)  # same weights
    assert torch.allclose(
        torch.tensor(result["a->b"]["per_head"]), torch.tensor(result["b->c"]["per_head"]), atol=1e-6
    )  # cosine is symmetric and c == a


def test_cosine_crops_to_real_tokens():
    first = torch.zeros(1, 1, 1, 3, 3)
    second = torch.zeros(1, 1, 1, 3, 3)
    first[0, 0, 0, :2, 0] = 1.0
    second[0, 0, 0, :2, 0] = 1.0
    second[0, 0, 0, 2, :] = 5.0  # padding row: must be ignored
    assert abs(cosine_per_example(first, second, torch.tensor([2])).item() - 1.0) < 1e-6
