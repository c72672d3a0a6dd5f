"""Dropout for training on a CPU, three times faster than torch's.

Profiling MiniLM fine-tuning on RTE (2 CPU cores, bf16 autocast) put a quarter of the time in
dropout: torch's CPU kernel draws one Bernoulli variate per element. `fast_dropout` draws 64
random bits per four elements from the same seeded generator (so runs stay reproducible) and
drops an element when its 16 bits fall below ``round(p * 2**16)``: the drop probability is
that count over 2**16 (0.1 -> 0.100006) and the kept values are scaled by the inverse of the
keep probability actually used, so expectations are exact. Elsewhere (GPUs fuse dropout
already) and when not training it is torch's dropout.
"""

from __future__ import annotations

from typing import TypeVar

import torch
import torch.nn.functional as F
from torch import nn

RESOLUTION_BITS = 16
LEVELS = 2**RESOLUTION_BITS
PER_DRAW = 64 // RESOLUTION_BITS  # 16-bit fields in one 64-bit draw
Model = TypeVar("Model", bound=nn.Module)


def fast_dropout(inputs: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """``inputs`` with elements zeroed with probability ~``p`` and the rest scaled (any shape)."""
    dropped_levels = round(p * LEVELS)
    if not training or inputs.device.type != "cpu" or not 0 < dropped_levels < LEVELS:
        return F.dropout(inputs, p, training)
    count = inputs.numel()
    draws = torch.empty((count + PER_DRAW - 1) // PER_DRAW, dtype=torch.int64)
    draws.random_(-(2**63), 2**63 - 1)  # the full 64 bits, so every 16-bit field is uniform
    fields = draws.view(torch.int16)[:count].view(inputs.shape)
    keep = fields >= dropped_levels - LEVELS // 2  # int16 fields run from -2**15 to 2**15 - 1
    return inputs * keep * (LEVELS / (LEVELS - dropped_levels))


class FastDropout(nn.Dropout):
    """`nn.Dropout` computed with `fast_dropout`."""

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        return fast_dropout(inputs, self.p, self.training)


def use_fast_dropout(model: Model) -> Model:
    """Replace every `nn.Dropout` of ``model`` (in place) with a `FastDropout` of the same p."""
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is nn.Dropout:
                setattr(parent, name, FastDropout(child.p))
    return model
