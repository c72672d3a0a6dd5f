import torch

from harness.analyses.cosine import CosineSimilarity, cosine_per_example
from tasks.examples import Example
from tests.conftest import run_analysis

EXAMPLES = [Example("1", "the cat sat on the mat .", "the dog ran .", 0),
            Example("2", "he is not happy", "it sat", 1),
            Example("3", "a dog", "she sat", 1)]


def run_cosine(checkpoints, tokenizer, batch_size=2):
    return run_analysis(CosineSimilarity, checkpoints, tokenizer, EXAMPLES, batch_size)


def test_model_against_itself_gives_one_everywhere(tiny_pair, tiny_tokenizer):
    same = {"pretrained": tiny_pair["pretrained"], "finetuned": tiny_pair["pretrained"]}
    result = run_cosine(same, tiny_tokenizer)
    assert torch.allclose(torch.tensor(result["cosine_per_head"]), torch.ones(2, 4), atol=1e-5)
    assert torch.allclose(torch.tensor(result["cosine_per_head_std"]), torch.zeros(2, 4), atol=1e-3)
    assert result["cosine_num_examples"] == 3


def test_different_models_are_below_one_and_in_range(tiny_pair, tiny_tokenizer):
    result = run_cosine(tiny_pair, tiny_tokenizer)
    per_head = torch.tensor(result["cosine_per_head"])
    assert per_head.shape == (2, 4)
    assert (per_head <= 1 + 1e-6).all() and (per_head >= -1 - 1e-6).all() and (per_head < 0.9999).any()
    assert torch.allclose(torch.tensor(result["cosine_per_layer"]), per_head.mean(dim=1))


def test_padding_does_not_change_the_result(tiny_pair, tiny_tokenizer):
    one_at_a_time = run_cosine(tiny_pair, tiny_tokenizer, batch_size=1)
    padded = run_cosine(tiny_pair, tiny_tokenizer, batch_size=3)
    assert torch.allclose(torch.tensor(one_at_a_time["cosine_per_head"]),
                          torch.tensor(padded["cosine_per_head"]), atol=1e-5)


def test_cosine_crops_to_real_tokens():
    first = torch.zeros(1, 1, 1, 3, 3)
    second = torch.zeros(1, 1, 1, 3, 3)
    first[0, 0, 0, :2, 0] = 1.0
    second[0, 0, 0, :2, 0] = 1.0
    second[0, 0, 0, 2, :] = 5.0  # padding row: must be ignored
    assert abs(cosine_per_example(first, second, torch.tensor([2])).item() - 1.0) < 1e-6
