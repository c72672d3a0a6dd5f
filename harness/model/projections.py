"""Each attention module's value and output projections, found by what they do, not by their names.

The norm-weighted attention (Kobayashi et al. 2020) needs, per head, the value vectors and the
head's block of the output projection W_O. Architectures name these differently (BERT's
``attention.output.dense``, DistilBERT's ``out_lin``, ALBERT's ``dense``, ModernBERT's ``Wo``,
DeBERTa's ``value_proj`` beside ``attention.output.dense``), and some fuse query, key and value
into one layer. So they are found from one traced forward pass instead (`resolve`):

- the **output projection** of an attention call is the first linear layer after it whose input
  is the heads' outputs concatenated, (batch, seq, heads * head_dim);
- the **value projection**, needed only where the attention function is not handed the values
  (DeBERTa computes its attention itself: `harness.model.forward` sees only its probabilities),
  is the linear layer before the call whose output, split into heads and mixed by the
  attention probabilities, is exactly what that output projection receives.

Both are identities of the computation, so a new encoder needs no entry here.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch

from tasks.errors import InputError

# How far a traced tensor may be from the one recomputed here and still be the same: the
# recomputation multiplies in another order, and half precision rounds at ~1e-3.
TOLERANCE = {torch.float32: 1e-4, torch.float64: 1e-8}
HALF_TOLERANCE = 2e-2


@dataclass(frozen=True)
class LinearCall:
    """A linear layer called during a traced pass, with its input and output."""

    module: torch.nn.Linear
    input: torch.Tensor
    output: torch.Tensor


@dataclass(frozen=True)
class AttentionCall:
    """An attention module's call during a traced pass: its post-softmax weights (batch, heads,
    seq, seq) and, where the attention function is handed them, the values (batch, heads, seq,
    head_dim) (None where the module computes its attention itself)."""

    module: torch.nn.Module
    weights: torch.Tensor
    value: torch.Tensor | None


@dataclass(frozen=True)
class HeadProjections:
    """An attention module's output projection, and its value projection where the values must
    be taken from one (None where the attention function is handed them)."""

    output: torch.nn.Linear
    value: torch.nn.Linear | None = None


@contextmanager
def tracing_linears(model: torch.nn.Module, trace: list[LinearCall | AttentionCall]) -> Iterator[None]:
    """Within the block every linear layer of ``model`` appends its calls to ``trace``."""

    def record(module: torch.nn.Module, args: tuple, output: torch.Tensor) -> None:
        if isinstance(module, torch.nn.Linear):  # always: only linear layers are hooked
            trace.append(LinearCall(module, args[0].detach(), output.detach()))

    hooks = [module.register_forward_hook(record) for module in model.modules() if isinstance(module, torch.nn.Linear)]
    try:
        yield
    finally:
        for hook in hooks:
            hook.remove()


def concatenated_heads(weights: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    """(batch, seq, heads * head_dim): each head's attention output, weights @ value, side by side."""
    heads = torch.matmul(weights.float(), value.float())
    return heads.transpose(1, 2).reshape(heads.shape[0], heads.shape[2], -1)


def split_heads(projected: torch.Tensor, heads: int) -> torch.Tensor:
    """(batch, heads, seq, head_dim) from a projection's (batch, seq, heads * head_dim) output."""
    batch, seq, width = projected.shape
    return projected.view(batch, seq, heads, width // heads).transpose(1, 2)


def same(traced: torch.Tensor, expected: torch.Tensor) -> bool:
    """Whether ``traced`` is ``expected`` (same shape, equal up to rounding in the traced dtype)."""
    if traced.shape != expected.shape:
        return False
    tolerance = TOLERANCE.get(traced.dtype, HALF_TOLERANCE)
    return bool(torch.linalg.vector_norm(traced.float() - expected) <= tolerance * torch.linalg.vector_norm(expected))


def value_candidates(
    call: AttentionCall, before: list[LinearCall]
) -> Iterator[tuple[torch.nn.Linear | None, torch.Tensor]]:
    """(value projection, the heads' concatenated outputs it implies) for each possible source of the values."""
    if call.value is not None:
        yield None, concatenated_heads(call.weights, call.value)
        return
    batch, heads, seq, _ = call.weights.shape
    for linear in reversed(before):  # the nearest first
        shape = linear.output.shape
        if len(shape) == 3 and shape[:2] == (batch, seq) and shape[-1] % heads == 0:
            yield linear.module, concatenated_heads(call.weights, split_heads(linear.output, heads))


def resolve_call(call: AttentionCall, before: list[LinearCall], after: list[LinearCall]) -> HeadProjections:
    """The projections of one attention call, from the linear calls between it and its neighbours."""
    for value, heads in value_candidates(call, before):
        output = next((linear.module for linear in after if same(linear.input, heads)), None)
        if output is not None:
            return HeadProjections(output, value)
    raise InputError(
        f"{type(call.module).__name__}: no linear layer after it takes its heads' concatenated "
        "outputs, so the norms of its transformed value vectors cannot be measured; leave out the "
        "analyses that need them (sinks)"
    )


def resolve(trace: list[LinearCall | AttentionCall]) -> dict[torch.nn.Module, HeadProjections]:
    """Each attention module of a traced pass -> its `HeadProjections` (see the module's docstring)."""
    attention = {index: event for index, event in enumerate(trace) if isinstance(event, AttentionCall)}
    calls = list(attention)
    if not calls:
        raise InputError("no attention call was traced; the model's attention does not run through the harness")
    found = {}
    for position, index in enumerate(calls):
        start = calls[position - 1] + 1 if position else 0
        end = calls[position + 1] if position + 1 < len(calls) else len(trace)
        linears = [event for event in trace[start:end] if isinstance(event, LinearCall)]
        split = sum(1 for event in trace[start:index] if isinstance(event, LinearCall))
        found[attention[index].module] = resolve_call(attention[index], linears[:split], linears[split:])
    return found
