"""The one forward API on every encoder architecture (tiny random checkpoints, tokenizers built
offline): capture equals transformers' own attention, a padded batch equals each example
alone, gates of 1 are the intact model, uniform heads are uniform over the real tokens, and
the value and output projections are found by what they do."""

from __future__ import annotations

import copy

import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel, T5Config

from harness.analyses.surface import SpecialIds, token_masks
from harness.cli import main
from harness.inputs.encoding import encode_examples
from harness.model.forward import Capture, Interventions, forward, forward_variants, head_projections
from harness.model.loading import (
    check_encoder,
    load_sequence_classifier,
    load_tokenizer,
    prepare,
    training_attention,
)
from tasks.errors import InputError
from tasks.examples import Example
from tasks.registry import get_task
from tests.fixtures import tiny_run_arguments

PAIRS = [
    Example("1", "the cat sat on the mat .", "the dog ran .", 0),
    Example("2", "he is not happy", "it sat", 1),
    Example("3", "a dog sat on a mat", "she sat", 0),
]
# Each architecture's output projection (and, where its attention is computed in its own module,
# value projection), by the names its modeling code gives them: what `head_projections` must find.
PROJECTION_NAMES = {
    "bert": ("attention.output.dense", None),
    "electra": ("attention.output.dense", None),
    "roberta": ("attention.output.dense", None),
    "xlm-roberta": ("attention.output.dense", None),
    "distilbert": ("attention.out_lin", None),
    "albert": ("attention.dense", None),
    "deberta-v2": ("attention.output.dense", "attention.self.value_proj"),
    "modernbert": ("attn.Wo", None),
}


@pytest.fixture
def loaded(architecture_dir):
    """The architecture as a run loads it (a sequence classifier through the harness's attention),
    the same model as transformers runs it, and its tokenizer."""
    model = load_sequence_classifier(str(architecture_dir), get_task("rte"), head_seed=0)
    reference = copy.deepcopy(model).eval()
    return prepare(model, torch.device("cpu"), torch.float32), reference, load_tokenizer(str(architecture_dir))


def test_captured_attention_and_logits_are_transformers_own(loaded):
    model, reference, tokenizer = loaded
    encoded = encode_examples(tokenizer, PAIRS, max_length=64, pair=True)
    out = forward(model, encoded, capture=Capture(attention=True))
    with torch.inference_mode():
        expected = reference(**encoded.model_inputs("cpu"), output_attentions=True)
    assert torch.allclose(out.logits, expected.logits, atol=1e-5)
    assert out.attentions.shape[1:3] == (model.config.num_hidden_layers, model.config.num_attention_heads)
    assert torch.allclose(out.attentions, torch.stack(expected.attentions, dim=1), atol=1e-6)


def test_a_padded_batch_equals_each_example_alone(loaded):
    model, _, tokenizer = loaded
    encoded = encode_examples(tokenizer, PAIRS, max_length=64, pair=True)
    batch = forward(model, encoded, capture=Capture(attention=True))
    lengths = encoded.lengths.tolist()
    assert len(set(lengths)) > 1  # the batch is padded
    for row, example in enumerate(PAIRS):
        alone = forward(
            model, encode_examples(tokenizer, [example], max_length=64, pair=True), capture=Capture(attention=True)
        )
        n = lengths[row]
        assert torch.allclose(alone.logits[0], batch.logits[row], atol=1e-5)
        assert torch.allclose(alone.attentions[0], batch.attentions[row, :, :, :n, :n], atol=1e-5)


def test_gates_of_one_are_the_intact_model_and_a_closed_head_changes_it(loaded):
    model, _, tokenizer = loaded
    encoded = encode_examples(tokenizer, PAIRS, max_length=64, pair=True)
    layers, heads = model.config.num_hidden_layers, model.config.num_attention_heads
    intact = forward(model, encoded).logits
    assert torch.equal(
        forward(model, encoded, interventions=Interventions(torch.ones(3, layers, heads))).logits, intact
    )
    closed = torch.ones(1, layers, heads)
    closed[0, 0, 0] = 0
    variants = forward_variants(model, encoded, Interventions(closed))
    assert not torch.allclose(variants[0], intact.float(), atol=1e-6)


def test_uniform_heads_are_uniform_over_the_real_tokens_they_see(architecture, loaded):
    model, _, tokenizer = loaded
    encoded = encode_examples(tokenizer, PAIRS, max_length=64, pair=True)
    layers, heads = model.config.num_hidden_layers, model.config.num_attention_heads
    uniform = torch.zeros(3, layers, heads, dtype=torch.bool)
    uniform[:, :, 1] = True
    maps = forward(
        model, encoded, capture=Capture(attention=True), interventions=Interventions(None, uniform)
    ).attentions
    intact = forward(model, encoded, capture=Capture(attention=True)).attentions
    local = set(range(1, layers)) if architecture == "modernbert" else set()  # its layers 1 and 2 see 4 tokens around
    for row, n in enumerate(encoded.lengths.tolist()):
        for layer in range(layers):
            rows = maps[row, layer, 1, :n, :n]  # every real query row of the uniform head, over the real keys
            seen = rows > 0
            assert torch.allclose(rows.sum(dim=-1), torch.ones(n), atol=1e-5)
            assert torch.allclose(rows[seen], (1 / seen.sum(dim=-1, keepdim=True)).expand_as(rows)[seen], atol=1e-6)
            assert (maps[row, layer, 1, :n, n:] == 0).all()  # nothing on padding
            assert seen.all() == (layer not in local)
            assert torch.equal(maps[row, layer, 0], intact[row, layer, 0]) or layer > 0  # untouched head, layer 0


def test_the_projections_are_found_by_what_they_do_and_the_value_norms_follow(architecture, loaded):
    model, _, tokenizer = loaded
    encoded = encode_examples(tokenizer, PAIRS, max_length=64, pair=True)
    found = head_projections(model, encoded)
    names = {module: name for name, module in model.named_modules()}
    output, value = PROJECTION_NAMES[architecture]
    assert found and all(names[projections.output].endswith(output) for projections in found.values())
    assert all(
        (projections.value is None and value is None) or names[projections.value].endswith(value)
        for projections in found.values()
    )
    norms = forward(model, encoded, capture=Capture(value_norms=True)).value_norms
    assert norms.shape == (
        3,
        model.config.num_hidden_layers,
        model.config.num_attention_heads,
        encoded.input_ids.shape[1],
    )
    assert torch.isfinite(norms).all() and (norms[:, :, :, 0] > 0).all()


@pytest.mark.parametrize("architecture", ["deberta-v2"])
def test_deberta_value_norms_equal_a_direct_computation(loaded):
    """DeBERTa's attention is hooked at its probabilities, its values taken from its value projection."""
    model, _, tokenizer = loaded
    encoded = encode_examples(tokenizer, PAIRS, max_length=64, pair=True)
    config = model.config
    heads, head_dim = config.num_attention_heads, config.hidden_size // config.num_attention_heads
    with torch.inference_mode():
        hidden = model(**encoded.model_inputs("cpu"), output_hidden_states=True).hidden_states
        expected = []
        for layer, block in enumerate(model.deberta.encoder.layer):
            values = block.attention.self.value_proj(hidden[layer])
            w_o = block.attention.output.dense.weight
            expected.append(
                torch.stack(
                    [
                        values[..., h * head_dim : (h + 1) * head_dim] @ w_o[:, h * head_dim : (h + 1) * head_dim].T
                        for h in range(heads)
                    ],
                    dim=1,
                ).norm(dim=-1)
            )
    norms = forward(model, encoded, capture=Capture(value_norms=True)).value_norms
    assert torch.allclose(norms, torch.stack(expected, dim=1), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("architecture", ["deberta-v2", "albert"])
def test_attention_gradients_flow_through_the_hook_and_the_shared_layer(loaded):
    model, _, tokenizer = loaded
    encoded = encode_examples(tokenizer, PAIRS, max_length=64, pair=True)
    out = forward(
        model,
        encoded,
        capture=Capture(attention=True, attention_grad=True, gate_grad=True),
        targets=torch.tensor([0, 1, 0]),
    )
    assert out.attention_grads.shape == out.attentions.shape and out.attention_grads.abs().sum() > 0
    assert out.gate_grads.shape == (3, model.config.num_hidden_layers, model.config.num_attention_heads)
    assert (out.gate_grads != 0).any(dim=-1).all()  # every layer's gates, the shared ALBERT layer's too


def test_special_tokens_and_punctuation_are_found_by_role_however_the_tokenizer_spells_them(loaded):
    _, _, tokenizer = loaded
    ids = SpecialIds.of(tokenizer)
    encoded = encode_examples(
        tokenizer, [Example("1", "the cat sat , the dog ran .", "he sat .", 0)], max_length=64, pair=True
    )
    masks = token_masks(encoded.input_ids, encoded.lengths, ids)
    tokens = tokenizer.convert_ids_to_tokens(encoded.input_ids[0].tolist())
    assert masks["cls"][0].nonzero().flatten().tolist() == [0] and tokens[0] == tokenizer.cls_token
    assert tokens[int(masks["sep"][0].nonzero()[-1])] == tokenizer.sep_token
    assert masks["period"][0].sum() == 2 and masks["comma"][0].sum() == 1  # "Ġ." and "." alike


def test_sdpa_training_falls_back_to_eager_only_where_the_family_has_no_sdpa(architecture, architecture_dir):
    expected = "eager" if architecture == "deberta-v2" else "sdpa"
    assert training_attention(str(architecture_dir), "sdpa") == expected
    assert training_attention(str(architecture_dir), "eager") == "eager"


@pytest.mark.parametrize("config", [GPT2Config(), T5Config()], ids=["decoder-only", "encoder-decoder"])
def test_a_model_that_is_not_an_encoder_is_one_line(config):
    with pytest.raises(
        InputError,
        match=f"^--model m: a {config.model_type} model is an? (decoder-only model|"
        "encoder-decoder); the harness analyses bidirectional encoders",
    ):
        check_encoder("m", config)


def test_a_decoder_only_model_is_refused_in_one_line_before_any_work(tiny_data, tmp_path, capsys):
    folder = tmp_path / "gpt2"
    GPT2LMHeadModel(GPT2Config(n_layer=1, n_head=2, n_embd=8, vocab_size=30)).save_pretrained(folder)
    capsys.readouterr()  # the saving's progress bar
    assert main(tiny_run_arguments(folder, tiny_data, tmp_path)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: --model {folder}: a gpt2 model is a decoder-only model")
    assert not (tmp_path / "cache").exists() and not (tmp_path / "out").exists()


def test_given_maps_replace_the_attention_and_the_hidden_states_are_transformers_own(loaded):
    """The transplant's intervention and the CKA's capture on every family: a head given another
    model's maps attends by them, a model given its own maps is itself, and each layer's hidden
    states are those transformers returns."""
    model, reference, tokenizer = loaded
    encoded = encode_examples(tokenizer, PAIRS, max_length=64, pair=True)
    layers, heads = model.config.num_hidden_layers, model.config.num_attention_heads
    intact = forward(model, encoded, capture=Capture(attention=True, hidden_states=True))
    everything = torch.ones(3, layers, heads, dtype=torch.bool)
    own = forward(
        model, encoded, interventions=Interventions(given_heads=everything, given_attention=intact.attentions)
    )
    assert torch.allclose(own.logits, intact.logits, atol=1e-5)
    other = torch.rand_like(intact.attentions) * (intact.attentions > 0)  # another map on the same real tokens
    other = other / other.sum(dim=-1, keepdim=True).clamp(min=1e-9)
    chosen = torch.zeros(3, layers, heads, dtype=torch.bool)
    chosen[:, -1, 1] = True
    given = forward(
        model,
        encoded,
        capture=Capture(attention=True),
        interventions=Interventions(given_heads=chosen, given_attention=other),
    )
    assert torch.equal(given.attentions[:, -1, 1], other[:, -1, 1].to(given.attentions.dtype))
    assert not torch.allclose(given.logits, intact.logits, atol=1e-6)
    with torch.inference_mode():
        expected = reference(**encoded.model_inputs("cpu"), output_hidden_states=True).hidden_states
    assert torch.allclose(intact.hidden_states, torch.stack(expected[1:], dim=1), atol=1e-5)
