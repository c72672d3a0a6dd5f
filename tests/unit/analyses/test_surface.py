import math

import numpy as np
import pytest
import torch

from harness.analyses.base import changed_heads
from harness.analyses.surface import SpecialIds, Surface, behaviour_labels, surface_statistics
from harness.analyses.surface_text import SurfaceText
from harness.inputs.sources.corpus import segment_batches
from harness.inputs.sources.running_text import running_text_segments
from harness.results.checkpoints import FINETUNED, PRETRAINED
from harness.views.evidence import FAILS, HOLDS, UNCLEAR, UnitSums, best_above
from harness.views.surface import SurfaceView, cls_peaks_before_sep, sep_takes_half_a_layer
from harness.views.surface_text import SurfaceTextView
from tasks.examples import Example
from tests.fixtures import analysis_context, finish, run_analysis, stream, tiny_bert
from tests.unit.inputs.test_running_text import write_treebank

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
    stats = {
        name: values[0, 0]
        for name, (values, _) in surface_statistics(
            attention, input_ids, lengths, SpecialIds.of(tiny_tokenizer)
        ).items()
    }
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
    per_head = {
        "entropy": [[3.9, 0.1]],
        "previous": [[0.0, 0.51]],
        "next": [[0.0, 0.5]],
        "cls": [[0.61, 0.0]],
        "sep": [[0.0, 0.6]],
        "punct": [[0.0, 0.0]],
    }
    labels = behaviour_labels(per_head)
    assert labels == [[["broad", "cls"], ["previous"]]]
    changes = changed_heads(labels, [[["broad", "cls"], []]])
    assert changes == [{"layer": 1, "head": 2, "before": ["previous"], "after": []}]


EXAMPLES = [
    Example("1", "the cat sat on the mat .", "the dog ran , he sat .", 0),
    Example("2", "he is not happy", "it sat", 1),
    Example("3", "a dog", "she sat .", 1),
]


def run_surface(models, tokenizer, batch_size, pairs=(("pretrained", "finetuned"),)):
    return run_analysis(Surface, models, tokenizer, EXAMPLES, batch_size, pairs)


@pytest.mark.parametrize("statistic", ["previous", "sep", "entropy", "cls_entropy", "sep_to_sep"])
def test_tiny_bert_statistics_do_not_depend_on_padding(tiny_pair, tiny_tokenizer, statistic):
    alone = run_surface(tiny_pair, tiny_tokenizer, batch_size=1)["per_checkpoint"]
    padded = run_surface(tiny_pair, tiny_tokenizer, batch_size=3)["per_checkpoint"]
    for checkpoint in tiny_pair:
        assert torch.allclose(
            torch.tensor(alone[checkpoint]["per_head"][statistic]),
            torch.tensor(padded[checkpoint]["per_head"][statistic]),
            atol=1e-5,
        )


@pytest.mark.slow
def test_tiny_bert_result_shapes_ranges_and_figures(tiny_pair, tiny_tokenizer, tmp_path):
    result = run_surface(tiny_pair, tiny_tokenizer, batch_size=2)
    pretrained, finetuned = result["per_checkpoint"]["pretrained"], result["per_checkpoint"]["finetuned"]
    assert pretrained["num_items"] == 3
    lengths = [len(tiny_tokenizer(e.text_a, e.text_b)["input_ids"]) for e in EXAMPLES]
    assert pretrained["uniform_entropy"] == pytest.approx(sum(math.log(n) for n in lengths) / 3)
    entropy = torch.tensor(pretrained["per_head"]["entropy"])
    assert entropy.shape == (2, 4) and (entropy >= 0).all() and (entropy <= pretrained["uniform_entropy"] + 1e-5).all()
    assert torch.allclose(
        torch.tensor(pretrained["per_layer"]["sep"]), torch.tensor(pretrained["per_head"]["sep"]).mean(1)
    )
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


def test_each_inputs_attention_to_cls_and_sep_is_kept_and_gives_the_per_layer_means(tiny_pair, tiny_tokenizer):
    result = run_surface(tiny_pair, tiny_tokenizer, batch_size=2)
    for stats in result["per_checkpoint"].values():
        for token in ("cls", "sep"):
            units = UnitSums.read(stats["units"][token])
            assert units.unit == "dev examples" and units.numerators.shape == (3, 2) and units.count == 3
            assert np.allclose(units.ratios(np.ones((1, 3)))[0], stats["per_layer"][token], atol=1e-6)
    entry = {"result": result}
    evidence = SurfaceView.claims["cls_peaks_before_sep_on_task_inputs"].judge(entry)
    assert evidence["verdict"] in (HOLDS, FAILS, UNCLEAR) and evidence["n"] == 3 and evidence["unit"] == "dev examples"
    assert evidence["statistic"].startswith("fine-tuned: ")


def noisy_units(means: list[float], spread: float, count: int = 200, seed: int = 0) -> dict:
    """``count`` inputs whose attention per layer is ``means`` plus Gaussian noise of sd ``spread``,
    centred so that the sample's means are ``means`` exactly; stored."""
    noise = np.random.default_rng(seed).normal(0, spread, (count, len(means)))
    values = np.asarray(means) + noise - noise.mean(axis=0)
    return UnitSums.of(values, np.ones(count), "segments").stored()


def units_entry(cls_means: list[float], sep_means: list[float], spread: float = 0.1) -> dict:
    units = {"cls": noisy_units(cls_means, spread, seed=1), "sep": noisy_units(sep_means, spread, seed=2)}
    return {"result": {"per_checkpoint": {PRETRAINED: {"units": units}}}}


@pytest.mark.parametrize(
    "cls_means, sep_means, verdict",
    [
        ([0.6, 0.3, 0.1], [0.05, 0.2, 0.7], HOLDS),
        ([0.1, 0.2, 0.6], [0.6, 0.1, 0.1], FAILS),
        ([0.4, 0.1, 0.4], [0.1, 0.3, 0.1], UNCLEAR),  # [CLS] peaks in layer 1 or 3, as the resample falls; [SEP] in 2
    ],
)
def test_cls_before_sep_is_judged_on_resamples_of_the_inputs(cls_means, sep_means, verdict):
    evidence = cls_peaks_before_sep(PRETRAINED)(units_entry(cls_means, sep_means))
    assert evidence["verdict"] == verdict and evidence["unit"] == "segments" and evidence["n"] == 200
    if verdict == UNCLEAR:
        assert 0.2 < evidence["support"] < 0.8


@pytest.mark.parametrize(
    "sep_means, verdict", [([0.1, 0.7, 0.2], HOLDS), ([0.1, 0.3, 0.2], FAILS), ([0.1, 0.5, 0.2], UNCLEAR)]
)
def test_sep_over_half_a_layer_is_judged_on_resamples_of_the_inputs(sep_means, verdict):
    evidence = sep_takes_half_a_layer(PRETRAINED)(units_entry([0.5, 0.2, 0.1], sep_means))
    assert evidence["verdict"] == verdict
    assert evidence["statistic"].startswith("pre-trained: the largest layer's mean attention to [SEP], cross-fitted")
    assert evidence["value"] == pytest.approx(max(sep_means) - 0.5, abs=0.03)  # the held-out layer's, minus 0.5


def test_sep_over_half_a_layer_is_not_the_best_of_noisy_layers_scored_where_chosen():
    """Six layers each at 0.49 on average, noisy per input: the largest of six read on the inputs
    it was chosen on is above 0.5 most of the time; chosen on one half and read on the other, it
    is not."""
    generator = np.random.default_rng(7)
    shares = np.clip(0.49 + 0.25 * generator.standard_normal((60, 6)), 0, 1)
    units = UnitSums.of(shares, np.ones(60), "segments")
    assert units.ratios(np.ones((1, 60))).max() > 0.5  # the best of many, scored where chosen
    evidence = best_above(units, 0.5, "the largest layer's share")
    assert evidence["verdict"] != HOLDS and evidence["value"] < 0.02


def test_a_claim_about_a_checkpoint_the_run_lacks_is_not_judged():
    assert cls_peaks_before_sep(FINETUNED)(units_entry([0.6, 0.1, 0.1], [0.1, 0.1, 0.6])) is None


def test_running_text_segments_are_the_units_and_the_figures_name_the_input(tiny_pair, tiny_tokenizer, tmp_path):
    segments, notes = running_text_segments([write_treebank(tmp_path)], tiny_tokenizer, 9, 1000, seed=0)
    context = analysis_context(tiny_pair, tokenizer=tiny_tokenizer)
    analysis = SurfaceText(context)
    for batch in stream(tiny_pair, segment_batches(tiny_tokenizer, segments, 1)):
        analysis.update(batch)
    result = finish(analysis)
    units = UnitSums.read(result["per_checkpoint"][PRETRAINED]["units"]["sep"])
    assert units.unit == "segments" and units.count == len(segments) == 2
    entry = {
        "pairs": [[PRETRAINED, FINETUNED]],
        "result": result,
        "source": {"notes": {"text": "UD English EWT r2.16", **notes}},
    }
    for claim in SurfaceTextView.claims.values():
        assert claim.judge(entry)["statistic"].startswith("pre-trained: ")
    run = {"model": "tiny", "task": "rte"}
    files = SurfaceTextView.draw(entry, run, tmp_path)
    assert sorted(path.name for path in files) == [
        "surface_text_entropy.png",
        "surface_text_relative_position.png",
        "surface_text_special_tokens.png",
    ]
    tables = SurfaceTextView.tables(entry, run)
    assert tables["surface_text_by_layer"].startswith(
        "# Clark's statistics per layer on two-paragraph segments of UD English EWT r2.16: tiny on rte"
    )
    assert SurfaceView.tables(entry, run)["surface_by_layer"].startswith(
        "# Clark's statistics per layer on the task's dev inputs: tiny on rte"
    )
    (row,) = SurfaceTextView.overview_rows({"surface_text": entry}, run)
    assert row[0].startswith("Clark heads on two-paragraph segments of UD English EWT r2.16") and row[3]
    assert SurfaceView.overview_rows({"surface": entry}, run)[0][3] == ""  # no paper beside the task's inputs
