"""The fast CPU dropout: its drop rate, scale, gradient and seeding, and a model switched to it."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from harness.model.dropout import LEVELS, FastDropout, fast_dropout, use_fast_dropout
from harness.model.forward import use_harness_attention
from tests.fixtures import tiny_bert


@pytest.mark.parametrize("p", [0.1, 0.5])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_drops_at_the_rate_asked_and_keeps_the_expectation(p, dtype):
    inputs = torch.ones(1_000_003, dtype=dtype)  # not a multiple of the four fields per draw
    outputs = fast_dropout(inputs, p, training=True)
    dropped = (outputs == 0).double().mean().item()
    assert abs(dropped - p) < 5 * math.sqrt(p * (1 - p) / len(inputs))
    kept = outputs[outputs != 0].float()
    scale = LEVELS / (LEVELS - round(p * LEVELS))
    assert torch.allclose(kept, torch.full_like(kept, scale), rtol=1e-2)  # bf16 rounds the scale
    assert outputs.dtype == dtype and outputs.shape == inputs.shape


def test_not_training_or_zero_p_returns_the_inputs_and_gradients_follow_the_mask():
    inputs = torch.randn(64, 33)
    assert fast_dropout(inputs, 0.1, training=False) is inputs
    assert torch.equal(fast_dropout(inputs, 0.0, training=True), inputs)
    leaf = inputs.clone().requires_grad_(True)
    outputs = fast_dropout(leaf, 0.1, training=True)
    outputs.sum().backward()
    assert torch.equal(leaf.grad == 0, outputs.detach() == 0)


def test_the_same_seed_drops_the_same_elements():
    inputs = torch.randn(4, 8, 16)
    torch.manual_seed(3)
    first = fast_dropout(inputs, 0.1, training=True)
    torch.manual_seed(3)
    assert torch.equal(first, fast_dropout(inputs, 0.1, training=True))
    assert not torch.equal(first, fast_dropout(inputs, 0.1, training=True))


def test_a_model_switched_to_fast_dropout_keeps_every_probability_and_drops_attention_too():
    model = use_harness_attention(tiny_bert(0))
    probabilities = [module.p for module in model.modules() if isinstance(module, nn.Dropout)]
    use_fast_dropout(model)
    switched = [module for module in model.modules() if isinstance(module, nn.Dropout)]
    assert all(type(module) is FastDropout for module in switched)
    assert [module.p for module in switched] == probabilities
    ids = torch.randint(5, model.config.vocab_size, (2, 12))
    model.eval()
    with torch.no_grad():
        assert torch.equal(model(input_ids=ids).logits, model(input_ids=ids).logits)
        for name, module in model.named_modules():  # leave only the attention weights' dropout: its p
            if isinstance(module, FastDropout) and not name.endswith("attention.self.dropout"):  # reaches
                module.p = 0.0  # the attention function, which applies it with fast_dropout
        model.train()
        assert not torch.equal(model(input_ids=ids).logits, model(input_ids=ids).logits)
