"""Attention sinks and norm-weighted attention: hand-built maps and norms, and a tiny BERT whose weights fix them."""

import numpy as np
import pytest
import torch

from harness.analyses.base import ATTENTION, GRADIENTS, VALUE_NORMS
from harness.analyses.sinks import AttentionSinks, sink_statistics
from harness.analyses.surface import SpecialIds
from harness.inputs.batches import AttentionBatch, EncodedBatch
from harness.inputs.encoding import batched
from harness.views.metrics import values
from harness.views.sinks import KINDS, STATISTICS, SinksView
from tasks.examples import Example
from tests.fixtures import analysis_context, finish, run_analysis, stream, tiny_bert

N = 5  # real tokens: [CLS] cat . dog [SEP], then one padding position
CLS, SEP, PUNCT, OTHER = range(4)


def hand_built(tokenizer):
    """One example, one layer, four heads with known statistics, a garbage padding row, and known norms."""
    input_ids = torch.tensor([tokenizer.convert_tokens_to_ids(["[CLS]", "cat", ".", "dog", "[SEP]", "[PAD]"])])
    attention = torch.zeros(1, 1, 4, N + 1, N + 1)
    attention[0, 0, 0, :N, 0] = 1.0  # every row on [CLS]
    attention[0, 0, 1, :N, :N] = 1.0 / N  # uniform
    attention[0, 0, 2, :N, 2] = attention[0, 0, 2, :N, N - 1] = 0.5  # half on ".", half on [SEP]
    for row in range(N):
        attention[0, 0, 3, row, min(row + 1, N - 1)] = 1.0  # next token (last row: itself)
    attention[0, 0, :, N, :] = 7.0  # padding row: must be ignored
    # ||f(x_j)||: "." transforms to the zero vector, padding's norm must be ignored.
    norms = torch.tensor([2.0, 1.0, 0.0, 1.0, 4.0, 9.0]).expand(1, 1, 4, N + 1)
    return attention, norms, input_ids, torch.tensor([N])


def hand_built_statistics(tokenizer):
    stats = sink_statistics(*hand_built(tokenizer), SpecialIds.of(tokenizer))
    return {name: (values[0, 0], weights.expand_as(values)[0, 0]) for name, (values, weights) in stats.items()}


def test_sink_shares_of_hand_built_heads(tiny_tokenizer):
    values, weights = hand_built_statistics(tiny_tokenizer)["sink_share"]
    expected = [
        [1, 0, 0, 0],  # all attention on [CLS]
        [0, 0, 0, 0],  # uniform: every token receives 1/5 < 0.3
        [0, 1, 1, 0],  # "." and [SEP] receive 0.5 each
        [0, 1, 0, 0],
    ]  # next token: [SEP] receives 2/5 (rows 4 and 5), the others 1/5 or 0
    assert torch.equal(values, torch.tensor(expected, dtype=torch.float))
    assert torch.equal(weights, torch.ones(4, 4))  # the example has every kind


def test_raw_and_norm_weighted_shares_of_hand_built_heads(tiny_tokenizer):
    stats = hand_built_statistics(tiny_tokenizer)
    raw = [[1, 0, 0, 0], [0.2, 0.2, 0.2, 0.4], [0, 0.5, 0.5, 0], [0, 0.4, 0.2, 0.4]]
    # Uniform: weighted mass 0.2 * (2 + 1 + 0 + 1 + 4) per row. Half on "." and [SEP]: "." has norm 0, so
    # [SEP] takes all of it. Next token: the row attending to "." carries no mass and is left out.
    norm_weighted = [[1, 0, 0, 0], [0.25, 0.5, 0, 0.25], [0, 1, 0, 0], [0, 0.5, 0, 0.5]]
    assert torch.allclose(stats["raw_share"][0], torch.tensor(raw), atol=1e-6)
    assert torch.allclose(stats["norm_share"][0], torch.tensor(norm_weighted), atol=1e-6)
    assert torch.allclose(stats["value_norm"][0], torch.tensor([[2.0, 4.0, 0.0, 1.0]] * 4))
    assert torch.allclose(stats["raw_share"][0].sum(-1), torch.ones(4))


def test_a_head_whose_every_vector_is_zero_has_no_norm_weighted_shares(tiny_tokenizer):
    attention, norms, input_ids, lengths = hand_built(tiny_tokenizer)
    norms = norms.clone()
    norms[0, 0, 1] = 0.0
    ids = SpecialIds.of(tiny_tokenizer)
    values, weights = sink_statistics(attention, norms, input_ids, lengths, ids)["norm_share"]
    assert weights.expand_as(values)[0, 0, :, 0].tolist() == [1.0, 0.0, 1.0, 1.0]


def test_an_absent_kind_carries_no_weight(tiny_tokenizer):
    input_ids = torch.tensor([tiny_tokenizer.convert_tokens_to_ids(["[CLS]", "cat", "dog", "[SEP]"])])
    attention = torch.full((1, 1, 1, 4, 4), 0.25)
    stats = sink_statistics(
        attention, torch.ones(1, 1, 1, 4), input_ids, torch.tensor([4]), SpecialIds.of(tiny_tokenizer)
    )
    for name in ("sink_share", "value_norm"):
        assert stats[name][1].expand_as(stats[name][0])[0, 0, 0].tolist() == [1.0, 1.0, 0.0, 1.0], name
    assert stats["raw_share"][0][0, 0, 0, PUNCT] == 0.0 and stats["raw_share"][1].all()


EXAMPLES = [
    Example("1", "the cat sat on the mat .", "the dog ran , he sat .", 0),
    Example("2", "he is not happy", "it sat", 1),
    Example("3", "a dog .", "she sat .", 1),
]
PERIODS_ONLY = [Example("1", "the cat sat on the mat .", "the dog ran .", 0), Example("2", "a dog .", "she sat", 1)]


def first_layer_value(model, weight: torch.Tensor, bias: torch.Tensor):
    """``model`` with layer 1's value projection set to ``weight`` and ``bias``."""
    value = model.bert.encoder.layer[0].attention.self.value
    with torch.no_grad():
        value.weight.copy_(weight)
        value.bias.copy_(bias)
    return model


def transform_to_zero(model, token_id: int):
    """Layer 1's W_V projects out the input vector of ``token_id`` (positions and segments zeroed, so it is
    the same vector wherever the token stands) and b_V = 0: that token's f(x) is 0 in every head."""
    embeddings = model.bert.embeddings
    with torch.no_grad():
        embeddings.position_embeddings.weight.zero_()
        embeddings.token_type_embeddings.weight.zero_()
        vector = embeddings.LayerNorm(embeddings.word_embeddings.weight[token_id])
    projection = torch.eye(len(vector)) - torch.outer(vector, vector) / vector.dot(vector)
    return first_layer_value(model, projection, torch.zeros(len(vector)))


def test_a_token_transformed_to_zero_has_no_norm_weighted_share_whatever_its_attention(tiny_tokenizer):
    model = transform_to_zero(tiny_bert(0), tiny_tokenizer.convert_tokens_to_ids("."))
    result = run_analysis(AttentionSinks, {"pretrained": model}, tiny_tokenizer, PERIODS_ONLY, batch_size=2, pairs=())[
        "per_checkpoint"
    ]["pretrained"]
    first_layer = {name: torch.tensor(result["per_head"][name]["punct"][0]) for name in STATISTICS}
    assert (first_layer["raw_share"] > 0.01).all()  # "." gets attention in every head ...
    assert (first_layer["norm_share"] < 1e-5).all() and (first_layer["value_norm"] < 1e-5).all()  # ... to no effect
    assert (torch.tensor(result["per_head"]["norm_share"]["punct"][1]) > 1e-3).all()  # layer 2 is untouched


def test_equal_transformed_norms_make_the_norm_weighted_shares_the_raw_ones(tiny_tokenizer):
    # W_V = 0: every token's value is b_V, so every f(x_j) of a head is the same vector
    model = first_layer_value(tiny_bert(0), torch.zeros(16, 16), torch.linspace(-1.0, 1.0, 16))
    result = run_analysis(AttentionSinks, {"pretrained": model}, tiny_tokenizer, EXAMPLES, batch_size=3, pairs=())[
        "per_checkpoint"
    ]["pretrained"]
    for kind in KINDS:
        raw, weighted = (torch.tensor(result["per_head"][name][kind][0]) for name in ("raw_share", "norm_share"))
        assert torch.allclose(raw, weighted, atol=1e-5), kind
        assert not torch.allclose(
            torch.tensor(result["per_head"]["raw_share"][kind][1]),
            torch.tensor(result["per_head"]["norm_share"][kind][1]),
            atol=1e-3,
        ), kind


def run_sinks(models, tokenizer, batch_size, pairs=(("pretrained", "finetuned"),)):
    return run_analysis(AttentionSinks, models, tokenizer, EXAMPLES, batch_size, pairs)


def test_statistics_do_not_depend_on_padding(tiny_pair, tiny_tokenizer):
    alone = run_sinks(tiny_pair, tiny_tokenizer, batch_size=1)["per_checkpoint"]
    padded = run_sinks(tiny_pair, tiny_tokenizer, batch_size=3)["per_checkpoint"]
    for checkpoint in tiny_pair:
        for name in STATISTICS:
            for kind in KINDS:
                assert torch.allclose(
                    torch.tensor(alone[checkpoint]["per_head"][name][kind]),
                    torch.tensor(padded[checkpoint]["per_head"][name][kind]),
                    atol=1e-5,
                ), name


@pytest.mark.slow
def test_result_layers_overall_pair_changes_metrics_and_figures(tiny_pair, tiny_tokenizer, tmp_path):
    result = run_sinks(tiny_pair, tiny_tokenizer, batch_size=2)
    pretrained, finetuned = result["per_checkpoint"]["pretrained"], result["per_checkpoint"]["finetuned"]
    assert pretrained["num_items"] == 3
    assert pretrained["num_tokens"] == {
        "cls": 3,
        "sep": 6,
        "punct": 5,
        "other": sum(len(tiny_tokenizer(e.text_a, e.text_b)["input_ids"]) for e in EXAMPLES) - 14,
    }
    raw = torch.tensor([pretrained["per_head"]["raw_share"][kind] for kind in KINDS])
    assert raw.shape == (4, 2, 4) and torch.allclose(raw.sum(0), torch.ones(2, 4), atol=1e-5)
    sink = torch.tensor(pretrained["per_head"]["sink_share"]["cls"])
    assert torch.allclose(torch.tensor(pretrained["per_layer"]["sink_share"]["cls"]), sink.mean(1))
    assert pretrained["overall"]["sink_share"]["cls"] == pytest.approx(float(sink.mean()))
    change = result["per_pair"]["pretrained->finetuned"]
    assert change["overall"]["norm_share"]["sep"] == pytest.approx(
        finetuned["overall"]["norm_share"]["sep"] - pretrained["overall"]["norm_share"]["sep"]
    )
    before, after = (stats["per_layer"]["raw_share"]["cls"] for stats in (pretrained, finetuned))
    assert change["per_layer"]["raw_share"]["cls"] == pytest.approx([b - a for a, b in zip(before, after)])
    assert pretrained["per_head"]["norm_share"] != finetuned["per_head"]["norm_share"]
    entry = {"pairs": [["pretrained", "finetuned"]], "result": result}
    evidence = SinksView.change_evidence(entry)
    assert set(evidence) == set(SinksView.signed_changes)
    for kind in ("cls", "sep"):
        assert evidence[f"sinks_change_raw_share_{kind}"]["value"] == pytest.approx(
            change["overall"]["raw_share"][kind], abs=1e-6
        )  # the stored units give the overall share
        assert evidence[f"sinks_change_raw_share_{kind}"]["n"] == 3
    metrics = values(SinksView.metrics(entry))
    assert (
        len(metrics) == 3 * 3 * 4
        and metrics["sinks_pretrained_to_finetuned_norm_share_sep_change"] == change["overall"]["norm_share"]["sep"]
    )
    run = {"model": "tiny", "task": "test"}
    files = SinksView.draw(entry, run, tmp_path)
    assert len(files) == 6 and all(path.stat().st_size > 0 for path in files)
    table = SinksView.tables(entry, run)["sinks_by_layer"]
    layer_2 = pretrained["per_layer"]["norm_share"]["sep"][1]
    assert table.startswith("# ") and "| share of norm-weighted attention | [SEP] | " in table
    assert f" | {layer_2:.3f} | " in table.split("| share of norm-weighted attention | [SEP] |")[1].splitlines()[0]


def on_cls_and_sep(tokenizer, cls_weights: dict[str, np.ndarray]) -> dict:
    """The entry of checkpoints whose every row, in both heads of their one layer, puts its
    example's weight on [CLS] and the rest on [SEP], on examples "[CLS] cat . dog [SEP]"."""
    examples = len(next(iter(cls_weights.values())))
    input_ids = torch.tensor([tokenizer.convert_tokens_to_ids(["[CLS]", "cat", ".", "dog", "[SEP]"])] * examples)
    encoded = EncodedBatch(input_ids, torch.ones_like(input_ids), None, list(range(examples)))
    maps = {}
    for checkpoint, weights in cls_weights.items():
        maps[checkpoint] = torch.zeros(examples, 1, 2, N, N)
        maps[checkpoint][..., 0] = torch.tensor(weights, dtype=torch.float)[:, None, None, None]
        maps[checkpoint][..., N - 1] = 1 - maps[checkpoint][..., 0]
    analysis = AttentionSinks(analysis_context(list(cls_weights), 1, 2, tokenizer))
    analysis.update(AttentionBatch(encoded, maps, value_norms={c: torch.ones(examples, 1, 2, N) for c in cls_weights}))
    return {"result": finish(analysis)}


def test_a_clear_shift_from_cls_to_sep_falls_and_rises_and_noise_holds_zero(tiny_tokenizer):
    before = np.random.default_rng(0).uniform(0.2, 0.8, 60)
    shifted = before - 0.1 + np.random.default_rng(1).normal(0.0, 0.05, 60)  # each example gives [SEP] about 0.1
    changes = SinksView.change_evidence(on_cls_and_sep(tiny_tokenizer, {"pretrained": before, "finetuned": shifted}))
    cls, sep = changes["sinks_change_raw_share_cls"], changes["sinks_change_raw_share_sep"]
    assert (cls["direction"], sep["direction"], cls["unit"], cls["n"]) == ("falls", "rises", "dev examples", 60)
    assert cls["value"] == pytest.approx(float(np.mean(shifted - before)), abs=1e-6) and cls["interval"][1] < 0
    shuffled = np.random.default_rng(2).permutation(before)  # the same weights on other examples: only noise
    for change in SinksView.change_evidence(
        on_cls_and_sep(tiny_tokenizer, {"pretrained": before, "finetuned": shuffled})
    ).values():
        assert change["value"] == pytest.approx(0.0, abs=1e-6) and change["direction"] == "no clear change"
        assert change["interval"][0] < 0 < change["interval"][1]


def test_the_engine_captures_value_norms_only_for_analyses_that_need_them(tiny_pair, tiny_tokenizer):
    batches = list(batched(tiny_tokenizer, EXAMPLES, 3, 32, pair=True))
    (plain,) = stream(tiny_pair, batches, tiny_tokenizer, frozenset({ATTENTION}))
    (with_norms,) = stream(tiny_pair, batches, tiny_tokenizer, AttentionSinks.needs)
    (with_gradients,) = stream(tiny_pair, batches, tiny_tokenizer, frozenset({GRADIENTS, VALUE_NORMS}))
    assert plain.value_norms == {} and set(with_norms.value_norms) == set(tiny_pair)
    for name in tiny_pair:
        assert torch.equal(with_norms.attentions[name], plain.attentions[name])
        assert torch.equal(with_gradients.value_norms[name], with_norms.value_norms[name])
        assert name in with_gradients.gradients
