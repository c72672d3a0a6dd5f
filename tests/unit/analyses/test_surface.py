import math

import pytest
import torch

from harness.analyses.base import changed_heads
from harness.analyses.surface import SpecialIds, Surface, behaviour_labels, surface_statistics
from harness.views.surface import SurfaceView
from tasks.examples import Example
from tests.conftest import run_analysis, tiny_bert

N = 5  # real tokens: [CLS] cat . dog [SEP], then one padding position


def hand_built(tokenizer):
    """One example, one layer, five heads with known statistics, plus a garbage padding row."""
    input_ids = torch.tensor([tokenizer.convert_tokens_to_ids(["[CLS]", "cat", ".", "dog", "[SEP]", "[PAD]"])])
    attention = torch.zeros(1, 1, 5, N + 1, N + 1)
    for row in range(N):
        attention[0, 0, 0, row, min(row + 1, N - 1)] = 1.0  # next token (last row: itself)
        attention[0, 0, 1, row, :N] = 1.0 / N  # uniform
        attention[0, 0, 2, row, 0] = 1.0  # [CLS]
        attention[0, 0, 3, row, N - 1] = 1.0  # [SEP]
        attention[0, 0, 4, row, max(row - 1, 0)] = 1.0  # previous token (first row: itself)
    attention[0, 0, :, N, :] = 7.0  # padding row: must be ignored
    return attention, input_ids, torch.tensor([N])


def test_hand_built_heads_give_exact_statistics(tiny_tokenizer):
    attention, input_ids, lengths = hand_built(tiny_tokenizer)
    stats = {name: values[0, 0] for name, (values, _) in
             surface_statistics(attention, input_ids, lengths, SpecialIds.of(tiny_tokenizer)).items()}
    expected = {
        "next": [1.0, 1 / N, 0.0, 0.25, 0.0],
        "previous": [0.0, 1 / N, 0.25, 0.0, 1.0],
        "self": [1 / N, 1 / N, 1 / N, 1 / N, 1 / N],
        "cls": [0.0, 1 / N, 1.0, 0.0, 0.4],
        "sep": [0.4, 1 / N, 0.0, 1.0, 0.0],
        "period": [0.2, 1 / N, 0.0, 0.0, 0.2],
        "comma": [0.0] * 5,
        "sep_to_sep": [1.0, 1 / N, 0.0, 1.0, 0.0],
        "rest_to_sep": [0.25, 1 / N, 0.0, 1.0, 0.0],
        "entropy": [0.0, math.log(N), 0.0, 0.0, 0.0],
        "cls_entropy": [0.0, math.log(N), 0.0, 0.0, 0.0],
    }
    for name, values in expected.items():
        assert torch.allclose(stats[name], torch.tensor(values), atol=1e-6), name
    assert torch.allclose(stats["punct"], stats["period"] + stats["comma"])


def test_example_without_sep_is_not_counted_for_sep_rows(tiny_tokenizer):
    input_ids = torch.tensor([tiny_tokenizer.convert_tokens_to_ids(["[CLS]", "cat", "dog"])])
    attention = torch.full((1, 1, 1, 3, 3), 1 / 3)
    stats = surface_statistics(attention, input_ids, torch.tensor([3]), SpecialIds.of(tiny_tokenizer))
    assert not bool(stats["sep_to_sep"][1][0])
    assert bool(stats["rest_to_sep"][1][0]) and bool(stats["entropy"][1][0])


def test_behaviour_labels_use_clarks_thresholds_and_list_changes():
    per_head = {"entropy": [[3.9, 0.1]], "previous": [[0.0, 0.51]], "next": [[0.0, 0.5]],
                "cls": [[0.61, 0.0]], "sep": [[0.0, 0.6]], "punct": [[0.0, 0.0]]}
    labels = behaviour_labels(per_head)
    assert labels == [[["broad", "cls"], ["previous"]]]
    changes = changed_heads(labels, [[["broad", "cls"], []]])
    assert changes == [{"layer": 1, "head": 2, "before": ["previous"], "after": []}]


EXAMPLES = [Example("1", "the cat sat on the mat .", "the dog ran , he sat .", 0),
            Example("2", "he is not happy", "it sat", 1),
            Example("3", "a dog", "she sat .", 1)]


def run_surface(models, tokenizer, batch_size, pairs=(("pretrained", "finetuned"),)):
    return run_analysis(Surface, models, tokenizer, EXAMPLES, batch_size, pairs)


@pytest.mark.parametrize("statistic", ["previous", "sep", "entropy", "cls_entropy", "sep_to_sep"])
def test_tiny_bert_statistics_do_not_depend_on_padding(tiny_pair, tiny_tokenizer, statistic):
    alone = run_surface(tiny_pair, tiny_tokenizer, batch_size=1)["per_checkpoint"]
    padded = run_surface(tiny_pair, tiny_tokenizer, batch_size=3)["per_checkpoint"]
    for checkpoint in tiny_pair:
        assert torch.allclose(torch.tensor(alone[checkpoint]["per_head"][statistic]),
                              torch.tensor(padded[checkpoint]["per_head"][statistic]), atol=1e-5)


def test_tiny_bert_result_shapes_ranges_and_figures(tiny_pair, tiny_tokenizer, tmp_path):
    result = run_surface(tiny_pair, tiny_tokenizer, batch_size=2)
    pretrained, finetuned = result["per_checkpoint"]["pretrained"], result["per_checkpoint"]["finetuned"]
    assert pretrained["num_items"] == 3
    lengths = [len(tiny_tokenizer(e.text_a, e.text_b)["input_ids"]) for e in EXAMPLES]
    assert pretrained["uniform_entropy"] == pytest.approx(sum(math.log(n) for n in lengths) / 3)
    entropy = torch.tensor(pretrained["per_head"]["entropy"])
    assert entropy.shape == (2, 4) and (entropy >= 0).all() and (entropy <= pretrained["uniform_entropy"] + 1e-5).all()
    assert torch.allclose(torch.tensor(pretrained["per_layer"]["sep"]),
                          torch.tensor(pretrained["per_head"]["sep"]).mean(1))
    assert pretrained["per_head"]["cls"] != finetuned["per_head"]["cls"]
    entry = {"pairs": [["pretrained", "finetuned"]], "result": result}
    files = SurfaceView.draw(entry, {"model": "tiny", "task": "test"}, tmp_path)
    assert all(path.exists() and path.stat().st_size > 0 for path in files) and len(files) == 9
    assert SurfaceView.tables(entry, {"model": "tiny", "task": "test"})["surface_label_changes"].startswith("# Heads")


def test_three_checkpoints_each_get_statistics_and_each_pair_its_label_changes(tiny_tokenizer):
    models = {"a": tiny_bert(0), "b": tiny_bert(1), "c": tiny_bert(2)}
    pairs = (("a", "b"), ("b", "c"))
    result = run_surface(models, tiny_tokenizer, batch_size=2, pairs=pairs)
    assert set(result["per_checkpoint"]) == {"a", "b", "c"} and set(result["per_pair"]) == {"a->b", "b->c"}
    assert result["per_checkpoint"]["a"]["per_head"]["sep"] != result["per_checkpoint"]["c"]["per_head"]["sep"]
    entry = {"pairs": [list(p) for p in pairs], "result": result}
    table = SurfaceView.tables(entry, {"model": "tiny", "task": "test"})["surface_label_changes"]
    assert "**a -> b**" in table and "**b -> c**" in table
