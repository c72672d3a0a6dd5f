"""The one forward API: capture and interventions through the registered attention function."""

import copy

import pytest
import torch
from transformers import (
    BertConfig,
    BertForSequenceClassification,
    DistilBertConfig,
    DistilBertForSequenceClassification,
)

from harness.inputs.batches import EncodedBatch
from harness.inputs.encoding import batched, encode_examples
from harness.model.forward import (
    Capture,
    Interventions,
    Prefix,
    encoder_layers,
    first_intervened_layers,
    forward,
    forward_variants,
    head_projections,
    use_harness_attention,
)
from harness.model.projections import HeadProjections
from tasks.errors import InputError
from tasks.examples import Example
from tests.fixtures import stream, tiny_bert

PAIRS = [
    Example("1", "the cat sat", "the dog ran .", 0),
    Example("2", "he is not happy", "it sat", 1),
    Example("3", "a cat", "a dog sat on the mat .", 0),
]


@pytest.fixture
def model():
    return use_harness_attention(tiny_bert(0))


def test_without_interventions_it_is_transformers_eager_attention_exactly(tiny_tokenizer):
    eager = tiny_bert(0)
    ours = use_harness_attention(copy.deepcopy(eager))
    encoded = encode_examples(tiny_tokenizer, PAIRS, max_length=32, pair=True)
    with torch.inference_mode():
        reference = eager(**encoded.model_inputs("cpu"), output_attentions=True)
    out = forward(ours, encoded, capture=Capture(attention=True))
    assert torch.equal(out.logits, reference.logits)
    assert torch.equal(out.attentions, torch.stack(reference.attentions, dim=1))


def test_padded_batch_equals_each_example_alone(model, tiny_tokenizer):
    """The mask function is registered with the attention function: padding stays masked."""
    padded = encode_examples(tiny_tokenizer, PAIRS, max_length=32, pair=True)
    together = forward(model, padded, capture=Capture(attention=True))
    assert (padded.lengths < padded.input_ids.shape[1]).any()  # the batch really is padded
    for row, example in enumerate(PAIRS):
        alone = forward(
            model, encode_examples(tiny_tokenizer, [example], max_length=32, pair=True), capture=Capture(attention=True)
        )
        n = int(padded.lengths[row])
        assert torch.allclose(alone.logits[0], together.logits[row], atol=1e-5)
        assert torch.allclose(alone.attentions[0], together.attentions[row, :, :, :n, :n], atol=1e-6)
        assert together.attentions[row, :, :, :, n:].abs().sum() < 1e-6  # nothing attends to padding


def test_uniform_heads_are_exactly_uniform_over_real_tokens_and_others_untouched(model, tiny_tokenizer):
    encoded = encode_examples(tiny_tokenizer, PAIRS, max_length=32, pair=True)
    intact = forward(model, encoded, capture=Capture(attention=True)).attentions
    uniform = torch.zeros(3, 2, 4, dtype=torch.bool)
    uniform[1, 0, 2] = True  # example 2, layer 1, head 3
    changed = forward(
        model, encoded, capture=Capture(attention=True), interventions=Interventions(uniform_heads=uniform)
    ).attentions
    n = int(encoded.lengths[1])
    expected = torch.zeros(changed.shape[-1])
    expected[:n] = 1.0 / n
    assert torch.equal(changed[1, 0, 2], expected.expand(changed.shape[-1], -1))
    assert torch.equal(changed[0], intact[0]) and torch.equal(changed[2], intact[2])
    assert torch.equal(changed[1, 0, :2], intact[1, 0, :2]) and torch.equal(changed[1, 0, 3], intact[1, 0, 3])


def test_gates_of_one_reproduce_the_intact_logits_exactly(model, tiny_tokenizer):
    encoded = encode_examples(tiny_tokenizer, PAIRS, max_length=32, pair=True)
    intact = forward(model, encoded).logits
    gated = forward(model, encoded, interventions=Interventions(head_gates=torch.ones(3, 2, 4))).logits
    assert torch.equal(intact, gated)


def test_zero_gates_on_a_layer_remove_its_attention_output(model, tiny_tokenizer):
    encoded = encode_examples(tiny_tokenizer, PAIRS, max_length=32, pair=True)
    gates = torch.ones(3, 2, 4)
    gates[:, 1] = 0.0
    gated = forward(model, encoded, interventions=Interventions(head_gates=gates)).logits
    # The same model with layer 2's value projection zeroed (its attention output is then the bias only)
    reference = copy.deepcopy(model)
    value = reference.bert.encoder.layer[1].attention.self.value
    value.weight.data.zero_()
    value.bias.data.zero_()
    assert torch.allclose(forward(reference, encoded).logits, gated, atol=1e-6)
    assert not torch.allclose(forward(model, encoded).logits, gated, atol=1e-3)


def test_gate_and_attention_gradients(model, tiny_tokenizer):
    encoded = encode_examples(tiny_tokenizer, PAIRS, max_length=32, pair=True)
    labels = torch.tensor([0, 1, 0])
    out = forward(model, encoded, capture=Capture(attention_grad=True, gate_grad=True), targets=labels)
    assert out.gate_grads.shape == (3, 2, 4) and out.gate_grads.abs().sum() > 0
    assert out.attention_grads.shape == (3, 2, 4, *encoded.input_ids.shape[1:2] * 2)
    # dL/dxi_h equals sum over positions of (A_h V_h) . dL/d(head output): check one head by central
    # differences. The loss is a float32 near 3.6 (steps of 2.4e-7), so the step must be large enough that
    # rounding stays far below the tolerance: 1e-2 bounds it by 2.4e-5 (0.6% of this gradient); the
    # step's own error is O(step^2) for a central difference
    step = 1e-2

    def loss_with_gate(value: float) -> torch.Tensor:
        gates = torch.ones(3, 2, 4)
        gates[:, 0, 1] = value
        return forward(model, encoded, interventions=Interventions(head_gates=gates), targets=labels).loss

    numeric = (loss_with_gate(1 + step) - loss_with_gate(1 - step)) / (2 * step)
    assert torch.allclose(numeric, out.gate_grads[:, 0, 1].sum(), rtol=2e-2, atol=1e-5)


def test_stacked_interventions_equal_one_at_a_time(model, tiny_tokenizer):
    encoded = encode_examples(tiny_tokenizer, PAIRS, max_length=32, pair=True)
    masks = torch.ones(4, 2, 4)
    masks[1, 0, 0] = masks[2, 1, 3] = 0.0
    masks[3, 0] = 0.0
    stacked = forward(
        model, encoded.repeated(4), interventions=Interventions(head_gates=masks.repeat_interleave(3, dim=0))
    ).logits
    for index in range(4):
        alone = forward(model, encoded, interventions=Interventions(head_gates=masks[index].expand(3, 2, 4))).logits
        assert torch.allclose(stacked[3 * index : 3 * index + 3], alone, atol=1e-6)


def test_a_prefix_skips_the_layers_below_it_and_reproduces_the_whole_pass(model, tiny_tokenizer):
    encoded = encode_examples(tiny_tokenizer, PAIRS, max_length=32, pair=True)
    outputs = []
    hook = encoder_layers(model)[0].register_forward_hook(lambda module, args, output: outputs.append(output))
    gates = torch.ones(3, 2, 4)
    gates[:, 1, 2] = 0.0
    whole = forward(model, encoded, interventions=Interventions(head_gates=gates), capture=Capture(attention=True))
    hook.remove()
    calls = []
    counter = encoder_layers(model)[0].attention.register_forward_hook(lambda *args: calls.append(1))
    resumed = forward(
        model,
        encoded,
        interventions=Interventions(head_gates=gates),
        capture=Capture(attention=True),
        prefix=Prefix(1, outputs[0]),
    )
    counter.remove()
    assert calls == []  # layer 1's attention never ran
    assert torch.equal(resumed.logits, whole.logits)
    assert resumed.attentions.shape[1] == 1 and torch.equal(resumed.attentions[:, 0], whole.attentions[:, 1])
    assert all("forward" not in vars(layer) for layer in encoder_layers(model))  # the layers are themselves again
    assert torch.equal(forward(model, encoded).logits, forward(model, encoded, interventions=Interventions()).logits)


def test_encoder_layers_and_each_variants_first_changed_layer(model):
    assert encoder_layers(model) == list(model.bert.encoder.layer)
    gates = torch.ones(4, 2, 4)
    gates[1, 1, 0] = 0.5
    gates[2, 0, 3] = gates[2, 1, 0] = 0.0
    uniform = torch.zeros(4, 2, 4, dtype=torch.bool)
    uniform[3, 1, 1] = True
    starts = first_intervened_layers(Interventions(head_gates=gates, uniform_heads=uniform), 2)
    assert starts.tolist() == [2, 1, 0, 1]


def test_stream_gives_every_checkpoint_the_same_batch(tiny_pair, tiny_tokenizer):
    batches = list(stream(tiny_pair, batched(tiny_tokenizer, PAIRS, 2, 32, pair=True)))
    assert len(batches) == 2
    for batch in batches:
        assert set(batch.attentions) == {"pretrained", "finetuned"}
        assert batch.attentions["pretrained"].shape == batch.attentions["finetuned"].shape
        assert not torch.equal(batch.attentions["pretrained"], batch.attentions["finetuned"])
        n = int(batch.encoded.lengths[0])
        assert batch.maps("finetuned", 0).shape == (2, 4, n, n)


def test_truncation_to_max_length(tiny_tokenizer):
    long = Example("1", " ".join(["cat"] * 50), "dog", 0)
    assert encode_examples(tiny_tokenizer, [long], max_length=16, pair=True).input_ids.shape == (1, 16)


def test_models_whose_attention_bypasses_the_interface_are_a_clear_error():
    from transformers import MPNetConfig, MPNetForSequenceClassification

    model = MPNetForSequenceClassification(
        MPNetConfig(vocab_size=30, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16)
    )
    with pytest.raises(InputError, match="does not route its attention through transformers' AttentionInterface"):
        use_harness_attention(model)


def test_forward_refuses_a_model_not_switched_to_the_harness_attention(tiny_tokenizer):
    config = BertConfig(
        vocab_size=30,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=16,
        attn_implementation="sdpa",
    )
    with pytest.raises(InputError, match="use_harness_attention"):
        forward(BertForSequenceClassification(config).eval(), encode_examples(tiny_tokenizer, PAIRS, 32, pair=True))


def test_encoded_batch_repeats_rows_in_blocks():
    encoded = EncodedBatch(torch.tensor([[1, 2], [3, 0]]), torch.tensor([[1, 1], [1, 0]]), None, ["a", "b"])
    twice = encoded.repeated(2)
    assert twice.input_ids.tolist() == [[1, 2], [3, 0], [1, 2], [3, 0]] and twice.items == ["a", "b", "a", "b"]


def direct_value_norms(model, encoded):
    """||f_h(x_j)|| (batch, layers, heads, seq) from each layer's input hidden states and its weights, head by
    head: (x_j W_V + b_V) restricted to head h's slice, times head h's column block of W_O."""
    config = model.config
    heads, head_dim = config.num_attention_heads, config.hidden_size // config.num_attention_heads
    norms = []
    with torch.inference_mode():
        hidden = model(**encoded.model_inputs("cpu"), output_hidden_states=True).hidden_states
        for layer, block in enumerate(model.bert.encoder.layer):
            values = block.attention.self.value(hidden[layer])  # (batch, seq, hidden)
            w_o = block.attention.output.dense.weight  # (hidden, heads * head_dim)
            per_head = [
                values[..., h * head_dim : (h + 1) * head_dim] @ w_o[:, h * head_dim : (h + 1) * head_dim].T
                for h in range(heads)
            ]
            norms.append(torch.stack(per_head, dim=1).norm(dim=-1))
    return torch.stack(norms, dim=1)


def test_value_norms_equal_a_direct_computation_from_weights_and_hidden_states(model, tiny_tokenizer):
    encoded = encode_examples(tiny_tokenizer, PAIRS, max_length=32, pair=True)
    out = forward(model, encoded, capture=Capture(attention=True, value_norms=True))
    expected = direct_value_norms(model, encoded)
    assert out.value_norms.shape == (3, 2, 4, encoded.input_ids.shape[1]) == expected.shape
    assert torch.allclose(out.value_norms, expected, rtol=1e-4, atol=1e-5)
    assert torch.equal(out.attentions, forward(model, encoded, capture=Capture(attention=True)).attentions)
    assert forward(model, encoded, capture=Capture(attention=True)).value_norms is None


def test_value_norms_ride_on_a_gradient_pass_without_entering_its_graph(model, tiny_tokenizer):
    encoded = encode_examples(tiny_tokenizer, PAIRS, max_length=32, pair=True)
    out = forward(
        model, encoded, capture=Capture(attention_grad=True, value_norms=True), targets=torch.tensor([0, 1, 0])
    )
    assert not out.value_norms.requires_grad and out.attention_grads is not None
    assert torch.allclose(out.value_norms, direct_value_norms(model, encoded), rtol=1e-4, atol=1e-5)


def test_the_projections_are_found_by_what_they_do_whatever_their_names(tiny_tokenizer):
    model = use_harness_attention(
        DistilBertForSequenceClassification(
            DistilBertConfig(vocab_size=30, n_layers=2, n_heads=2, dim=16, hidden_dim=16)
        ).eval()
    )
    encoded = encode_examples(tiny_tokenizer, PAIRS, max_length=32, pair=True)
    found = head_projections(model, encoded)
    layers = model.distilbert.transformer.layer
    assert found == {layer.attention: HeadProjections(layer.attention.out_lin) for layer in layers}
    bert = use_harness_attention(tiny_bert(0))
    assert head_projections(bert, encoded) == {
        layer.attention.self: HeadProjections(layer.attention.output.dense) for layer in bert.bert.encoder.layer
    }


def test_given_heads_take_the_given_maps_and_nothing_else(model, tiny_tokenizer):
    """A head given maps attends by them (captured, and in the output: given the uniform maps it is
    the uniform-heads intervention exactly); the other heads of its layer keep their own; a model
    given its own maps is itself."""
    encoded = encode_examples(tiny_tokenizer, PAIRS, max_length=32, pair=True)
    donor = use_harness_attention(tiny_bert(5))
    given = forward(donor, encoded, capture=Capture(attention=True)).attentions
    chosen = torch.zeros(3, 2, 4, dtype=torch.bool)
    chosen[:, 1, 2] = True
    out = forward(
        model,
        encoded,
        capture=Capture(attention=True),
        interventions=Interventions(given_heads=chosen, given_attention=given),
    )
    intact = forward(model, encoded, capture=Capture(attention=True))
    assert torch.equal(out.attentions[:, 1, 2], given[:, 1, 2])
    assert torch.equal(out.attentions[:, 0], intact.attentions[:, 0])
    assert torch.equal(out.attentions[:, 1, :2], intact.attentions[:, 1, :2])  # layer 2's inputs are unchanged
    uniform = forward(model, encoded, capture=Capture(attention=True), interventions=Interventions(None, chosen))
    as_uniform = forward(
        model, encoded, interventions=Interventions(given_heads=chosen, given_attention=uniform.attentions)
    )
    assert torch.allclose(as_uniform.logits, uniform.logits, atol=1e-6)
    everything = torch.ones(3, 2, 4, dtype=torch.bool)
    own = forward(
        model, encoded, interventions=Interventions(given_heads=everything, given_attention=intact.attentions)
    )
    assert torch.allclose(own.logits, intact.logits, atol=1e-6)
    with pytest.raises(ValueError, match="one map per example"):
        forward(model, encoded, interventions=Interventions(given_heads=chosen, given_attention=given[:2]))


def test_stacked_variants_share_one_copy_of_the_given_maps(model, tiny_tokenizer):
    """Rows of the examples stacked V times take the maps of their example: each variant equals its
    own pass, and `forward_variants` (variants from their first changed layer) equals both."""
    encoded = encode_examples(tiny_tokenizer, PAIRS, max_length=32, pair=True)
    given = forward(use_harness_attention(tiny_bert(5)), encoded, capture=Capture(attention=True)).attentions
    masks = torch.zeros(4, 2, 4, dtype=torch.bool)
    masks[1, 0, 0] = masks[2, 1, 3] = True
    masks[3, 1] = True
    stacked = forward(
        model,
        encoded.repeated(4),
        interventions=Interventions(given_heads=masks.repeat_interleave(3, dim=0), given_attention=given),
    ).logits
    variants = forward_variants(model, encoded, Interventions(given_heads=masks, given_attention=given), max_rows=6)
    for index in range(4):
        alone = forward(
            model, encoded, interventions=Interventions(given_heads=masks[index].expand(3, 2, 4), given_attention=given)
        ).logits
        assert torch.allclose(stacked[3 * index : 3 * index + 3], alone, atol=1e-6)
        assert torch.allclose(variants[index], alone, atol=1e-6)
    assert first_intervened_layers(Interventions(given_heads=masks), 2).tolist() == [2, 0, 1, 1]


def test_hidden_states_are_what_each_layer_returns(model, tiny_tokenizer):
    encoded = encode_examples(tiny_tokenizer, PAIRS, max_length=32, pair=True)
    outputs = []
    hooks = [layer.register_forward_hook(lambda m, a, o: outputs.append(o)) for layer in encoder_layers(model)]
    hidden = forward(model, encoded, capture=Capture(hidden_states=True)).hidden_states
    for hook in hooks:
        hook.remove()
    assert hidden.shape == (3, 2, encoded.input_ids.shape[1], 16)
    assert all(torch.equal(hidden[:, layer], outputs[layer]) for layer in range(2))
