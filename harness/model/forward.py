"""The one forward path: run a model on a batch, capture what the analyses need, intervene on heads.

Every model the harness analyses runs its attention through `attention_forward`, registered
with transformers' `AttentionInterface` under the name ``"harness"`` (together with an
eager mask function under the same name: transformers gives an attention function
registered under a new name *no padding mask at all* unless a mask function is registered
for that name too). This function is the hook point of the whole harness, in the spirit of
TransformerLens' hook points, but without copying any model code: it works for every
encoder whose attention modules call ``ALL_ATTENTION_FUNCTIONS`` (BERT, RoBERTa, ELECTRA,
ALBERT, DistilBERT, XLM-R, ...).

`forward` runs one batch with an optional `Interventions` and returns a `ForwardOutput`
holding what was asked for in `Capture`:

- the post-softmax attention of every layer, on the model's device and in its dtype;
- the logits, and the summed per-example loss when targets are given;
- gradients of that loss with respect to the attention weights (Clark et al.'s Figure 3)
  and with respect to per-head gates (Michel et al.'s importance I_h = E|dL/d xi_h|);
- the norm of every token's transformed vector per head, ||f_h(x_j)|| with
  f_h(x_j) = (x_j W_V + b_V)_h W_O^h (Kobayashi et al. 2020: what token j adds to a row's
  output through head h is alpha_ij f_h(x_j)), W_O^h being head h's column block of the
  attention output projection (found for any architecture by `harness.model.projections`).

Interventions, per example and head, so many variants of a model can share one forward
pass by stacking them along the batch:

- ``head_gates``: each head's output (attention times values, before the output
  projection) is multiplied by xi_h (1 = intact, 0 = the head is masked, Michel et al.);
- ``uniform_heads``: the head's post-softmax attention is replaced by 1/L over the L real
  tokens of the input, 0 on padding (Kovaleva et al.'s "disabling"); in a layer that sees a
  window (ModernBERT's local layers), uniform over the real tokens in the window;
- ``given_heads`` with ``given_attention``: the head's post-softmax attention is replaced by a
  given map of the same input, another checkpoint's (the attention transplant: the pre-trained
  model's maps in the fine-tuned model, whose values, outputs and feed-forward layers stay).

Without a `forward` call in progress the function computes plain eager attention, so a
model switched to it behaves exactly as before (`use_harness_attention`).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from transformers import AttentionInterface, PreTrainedModel
from transformers.masking_utils import AttentionMaskInterface, eager_mask
from transformers.models.deberta_v2.modeling_deberta_v2 import DisentangledSelfAttention

from harness.inputs.batches import EncodedBatch
from harness.model.dropout import fast_dropout
from harness.model.projections import AttentionCall, HeadProjections, LinearCall, resolve, split_heads, tracing_linears
from tasks.errors import InputError

IMPLEMENTATION = "harness"
# Architectures that compute their attention inside their own modules: the module's class and
# its attribute holding the dropout that the post-softmax probabilities, and only they, pass through.
PROBABILITY_SITES = {"deberta-v2": (DisentangledSelfAttention, "dropout")}

# Loss kinds a forward pass can differentiate.
TASK_LOSS = "task"
MASKED_LM_LOSS = "masked-LM"
TOKEN_TASK_LOSS = "task, per word"  # a tagging task's: each word's tag at its first sub-token
UNTRAINED_TASK_LOSS = "task (untrained classifier head)"


@dataclass(frozen=True)
class Interventions:
    """Changes to a forward pass, per example (row of the batch), layer and head.

    ``head_gates``: (batch, layers, heads) float multiplying each head's output; 1 keeps the
    head, 0 masks it. ``uniform_heads``: (batch, layers, heads) bool; True replaces the
    head's attention by the uniform distribution over the example's real tokens.
    ``given_heads``: (batch, layers, heads) bool; True replaces the head's attention by its map
    in ``given_attention``, (examples, layers, heads, seq, seq) post-softmax maps of the batch's
    distinct examples: the batch is those examples stacked ``batch // examples`` times
    (`EncodedBatch.repeated`), so row r takes the maps of example ``r % examples`` and many
    variants share one copy of the maps.
    """

    head_gates: torch.Tensor | None = None
    uniform_heads: torch.Tensor | None = None
    given_heads: torch.Tensor | None = None
    given_attention: torch.Tensor | None = None


@dataclass(frozen=True)
class Capture:
    """What a forward pass returns besides the logits."""

    attention: bool = False
    attention_grad: bool = False
    gate_grad: bool = False
    value_norms: bool = False
    hidden_states: bool = False

    @property
    def needs_grad(self) -> bool:
        """Whether the pass needs a backward pass (attention or gate gradients are captured)."""
        return self.attention_grad or self.gate_grad


@dataclass(frozen=True)
class Prefix:
    """The intact model's layers below ``start``, not run again: each returns ``output``
    ((batch, seq, hidden), what layer start - 1 returned in an intact pass over the same
    rows), so the pass computes the embeddings and then layers ``start`` onwards."""

    start: int
    output: torch.Tensor


@dataclass
class ForwardOutput:
    """What `forward` computed; tensors stay on the model's device.

    ``logits``: (batch, labels) for a classifier, (batch, seq, vocab) for a masked LM;
    ``attentions`` and ``attention_grads``: (batch, layers, heads, seq, seq);
    ``gate_grads``: (batch, layers, heads); ``loss``: the summed per-example loss (scalar);
    ``value_norms``: (batch, layers, heads, seq) float32 ||f_h(x_j)|| of every token j (padding
    included: mask it), before any head gate; ``hidden_states``: (batch, layers, seq, hidden), what
    each layer returned (the embeddings left out), in the model's dtype.
    """

    logits: torch.Tensor
    attentions: torch.Tensor | None = None
    attention_grads: torch.Tensor | None = None
    gate_grads: torch.Tensor | None = None
    loss: torch.Tensor | None = None
    value_norms: torch.Tensor | None = None
    hidden_states: torch.Tensor | None = None

    @property
    def captured_attentions(self) -> torch.Tensor:
        """``attentions``, which a pass with ``Capture(attention=True)`` returns."""
        if self.attentions is None:
            raise ValueError("attention was not captured: call forward with capture=Capture(attention=True)")
        return self.attentions


@dataclass
class _Session:
    """State of one forward pass, read by `attention_forward` layer by layer.

    ``projections``: each attention module -> its `HeadProjections`, when value norms are
    captured (None otherwise); ``key_mask``: (batch, seq) bool, the real tokens, for uniform
    heads where the attention mask is not at hand (a probability hook); ``values``: the latest
    value vectors of each attention module whose values come from its value projection;
    ``trace``: every attention call, while `head_projections` traces a pass.
    """

    num_layers: int
    interventions: Interventions
    keep_attention: bool
    gates: torch.Tensor | None
    projections: dict[torch.nn.Module, HeadProjections] | None = None
    key_mask: torch.Tensor | None = None
    layer: int = 0
    attentions: list[torch.Tensor] = field(default_factory=list)
    value_norms: list[torch.Tensor] = field(default_factory=list)
    values: dict[torch.nn.Module, torch.Tensor] = field(default_factory=dict)
    trace: list[LinearCall | AttentionCall] | None = None

    def next_layer(self) -> int:
        """The 0-based index of the layer calling attention now, advancing to the next; raises `InputError` when
        called more than ``num_layers`` times in one pass (an encoder with several self-attentions per layer)."""
        layer = self.layer
        if layer >= self.num_layers:
            raise InputError(
                f"the model called its attention more than its {self.num_layers} layers times in one "
                "pass; only encoders with one self-attention per layer are supported"
            )
        self.layer += 1
        return layer

    def attend(
        self,
        module: torch.nn.Module,
        weights: torch.Tensor,
        value: torch.Tensor | None,
        uniform: Callable[[], torch.Tensor],
    ) -> tuple[torch.Tensor, int]:
        """The layer's weights with the uniform heads replaced (by ``uniform()``) and the given heads
        by their given maps, captured, their value norms measured (``value``: (batch, heads, seq,
        head_dim), or None where the values come from the module's value projection); and the
        layer's index."""
        layer = self.next_layer()
        if self.interventions.uniform_heads is not None:
            replaced = self.interventions.uniform_heads[:, layer].to(weights.device)[:, :, None, None]
            weights = torch.where(replaced, uniform(), weights)
        if self.interventions.given_heads is not None:
            weights = given_maps(weights, self.interventions, layer)
        if self.keep_attention:
            self.attentions.append(weights)
        if self.projections is not None:
            projections = self.projections[module]
            if value is None:
                value = split_heads(self.values[module], weights.shape[1])
            self.value_norms.append(transformed_norms(value, projections.output))
        if self.trace is not None:
            self.trace.append(AttentionCall(module, weights.detach(), None if value is None else value.detach()))
        return weights, layer

    def gated(self, heads: torch.Tensor, layer: int) -> torch.Tensor:
        """``heads`` (batch, heads, ...: each head's output, or its probabilities, which is the same
        gate) multiplied by the layer's head gates; as they are without gates."""
        if self.gates is None:
            return heads
        gates = self.gates[:, layer].to(heads.dtype)
        return heads * gates.view(*gates.shape, *([1] * (heads.dim() - 2)))


_ACTIVE: ContextVar[_Session | None] = ContextVar("harness_forward", default=None)


def given_maps(weights: torch.Tensor, interventions: Interventions, layer: int) -> torch.Tensor:
    """``weights`` (batch, heads, q, k) of ``layer`` with the given heads' rows replaced by their
    example's given map (`Interventions.given_attention`), broadcast over the stacked copies of the
    examples rather than copied for each."""
    given, given_heads = interventions.given_attention, interventions.given_heads
    if given is None or given_heads is None:
        raise ValueError("given_heads needs given_attention: the maps the heads are given")
    rows, heads, queries, keys = weights.shape
    examples = given.shape[0]
    if rows % examples or given.shape[-2:] != (queries, keys):
        raise ValueError(
            f"given maps of {examples} examples of {tuple(given.shape[-2:])} tokens cannot replace the "
            f"attention of {rows} rows of {(queries, keys)} tokens: give one map per example of the batch"
        )
    chosen = given_heads[:, layer].to(weights.device).view(rows // examples, examples, heads, 1, 1)
    maps = given[:, layer].to(device=weights.device, dtype=weights.dtype)[None]
    stacked = weights.view(rows // examples, examples, heads, queries, keys)
    return torch.where(chosen, maps, stacked).view(rows, heads, queries, keys)


def _uniform_over_real_tokens(weights: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
    """(batch, heads, q, k): 1/L over the L real key tokens of each row's example, 0 on padding.

    ``attention_mask`` is the additive eager mask (batch, 1, q, k): 0 on real tokens, the
    dtype's minimum on padding, so its softmax is exactly that distribution.
    """
    if attention_mask is None:  # no padding in the batch: every key token is real
        return torch.full_like(weights, 1.0 / weights.shape[-1])
    return F.softmax(attention_mask.to(weights.dtype), dim=-1).expand_as(weights)


def _uniform_over_keys(weights: torch.Tensor, key_mask: torch.Tensor | None) -> torch.Tensor:
    """(batch, heads, q, k): 1/L over the L real key tokens of each row (``key_mask`` (batch, k) bool)."""
    if key_mask is None:
        return torch.full_like(weights, 1.0 / weights.shape[-1])
    real = key_mask.to(device=weights.device, dtype=weights.dtype)
    return (real / real.sum(dim=-1, keepdim=True))[:, None, None, :].expand_as(weights)


def transformed_norms(value: torch.Tensor, projection: torch.nn.Linear) -> torch.Tensor:
    """||f_h(x_j)|| = ||v_hj W_O^h||, (batch, heads, seq) in float32, from ``value`` (batch, heads, seq,
    head_dim), which already holds x_j W_V + b_V, and the output projection (hidden, heads * head_dim)
    whose column block h is head h's W_O^h.

    Computed as v (W_O^h' W_O^h) v' with each head's (head_dim, head_dim) Gram matrix: a
    head_dim / hidden fraction of the work of projecting every vector to the hidden size.
    """
    heads, head_dim = value.shape[1], value.shape[-1]
    if projection.in_features != heads * head_dim:
        raise InputError(
            f"the attention output projection takes {projection.in_features} features, not the "
            f"{heads} x {head_dim} of the heads' values; value norms cannot be measured"
        )
    with torch.no_grad():  # a measurement: never part of a loss's graph
        blocks = projection.weight.float().view(-1, heads, head_dim)
        gram = torch.einsum("ohd,ohe->hde", blocks, blocks)
        vectors = value.detach().float()
        squared = ((vectors @ gram[None]) * vectors).sum(dim=-1)
    return squared.clamp_(min=0.0).sqrt_()  # rounding can leave a zero norm's square a hair below 0


def attention_forward(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    **kwargs: object,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Eager attention with the harness's capture and interventions.

    ``query``/``key``/``value``: (batch, heads, seq, head_dim); returns the attention output
    (batch, seq, heads, head_dim) and the post-softmax weights (batch, heads, seq, seq),
    computed exactly as transformers' eager attention when nothing is intervened on.
    """
    session = _ACTIVE.get()
    if scaling is None:
        scaling = query.size(-1) ** -0.5
    scores = torch.matmul(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:
        scores = scores + attention_mask
    weights = F.softmax(scores, dim=-1)
    weights = fast_dropout(weights, dropout, module.training)  # only while training
    if session is None:
        return torch.matmul(weights, value).transpose(1, 2).contiguous(), weights
    weights, layer = session.attend(module, weights, value, lambda: _uniform_over_real_tokens(weights, attention_mask))
    output = torch.matmul(weights, value)
    output = session.gated(output, layer)
    return output.transpose(1, 2).contiguous(), weights


def _probabilities_hook(attention: torch.nn.Module) -> Callable[..., torch.Tensor | None]:
    """A forward hook for the dropout that ``attention``'s probabilities pass through: within a
    `forward` call it returns them as `attention_forward` would leave them (uniform heads
    replaced, captured, gated); otherwise it leaves them alone."""

    def hook(dropout: torch.nn.Module, args: tuple, probabilities: torch.Tensor) -> torch.Tensor | None:
        session = _ACTIVE.get()
        if session is None:
            return None
        weights, layer = session.attend(
            attention, probabilities, None, lambda: _uniform_over_keys(probabilities, session.key_mask)
        )
        return session.gated(weights, layer)

    return hook


AttentionInterface.register(IMPLEMENTATION, attention_forward)
AttentionMaskInterface.register(IMPLEMENTATION, eager_mask)


HOOKED = "_harness_probability_hooks"  # the attribute holding a hooked model's hook handles


def use_harness_attention(model: PreTrainedModel) -> PreTrainedModel:
    """Route ``model``'s attention through the harness (in place): its attention implementation
    switched to `attention_forward`, or, for an architecture of `PROBABILITY_SITES`, hooks on
    its probabilities; a clear error for any other model."""
    if model._can_set_attn_implementation():
        model.set_attn_implementation(IMPLEMENTATION)
        return model
    site = PROBABILITY_SITES.get(model.config.model_type)
    if site is None:
        name = model.config.name_or_path or type(model).__name__
        raise InputError(
            f"{name} ({type(model).__name__}) does not route its attention through transformers' "
            "AttentionInterface, so its attention weights cannot be captured; use an encoder such "
            "as bert-base-uncased, roberta-base, microsoft/deberta-v3-base or --model minilm"
        )
    if not hasattr(model, HOOKED):
        module_class, dropout = site
        setattr(
            model,
            HOOKED,
            [
                getattr(module, dropout).register_forward_hook(_probabilities_hook(module))
                for module in model.modules()
                if isinstance(module, module_class)
            ],
        )
    return model


def harness_attention(model: PreTrainedModel) -> bool:
    """Whether ``model``'s attention runs through the harness (`use_harness_attention`)."""
    return model.config._attn_implementation == IMPLEMENTATION or hasattr(model, HOOKED)


def encoder_layers(model: PreTrainedModel) -> list[torch.nn.Module]:
    """The model's encoder layers in order (a ``layer`` or ``layers`` list of one module per
    hidden layer, as in BERT, RoBERTa, ELECTRA, XLM-R, DistilBERT, DeBERTa, ModernBERT), or []
    where it has no such single list (ALBERT runs one shared layer again and again)."""
    count = model.config.num_hidden_layers
    found = [
        list(module)
        for name, module in model.named_modules()
        if isinstance(module, torch.nn.ModuleList)
        and name.rsplit(".", 1)[-1] in ("layer", "layers")
        and len(module) == count
    ]
    return found[0] if len(found) == 1 else []


@contextmanager
def _skipping(model: PreTrainedModel, prefix: Prefix | None) -> Iterator[None]:
    """Within the block the layers below ``prefix.start`` return ``prefix.output`` without computing."""
    skipped, output = (encoder_layers(model)[: prefix.start], prefix.output) if prefix is not None else ([], None)
    for layer in skipped:  # an instance attribute shadows the class's forward; deleting it restores that
        layer.forward = lambda *args, **kwargs: output
    try:
        yield
    finally:
        for layer in skipped:
            del layer.forward


_PROJECTIONS: weakref.WeakKeyDictionary[torch.nn.Module, dict[torch.nn.Module, HeadProjections]] = (
    weakref.WeakKeyDictionary()
)


def head_projections(model: PreTrainedModel, encoded: EncodedBatch) -> dict[torch.nn.Module, HeadProjections]:
    """Each attention module of ``model`` -> its value and output projections, found once per
    model from a pass over ``encoded`` traced by `harness.model.projections`."""
    if model not in _PROJECTIONS:
        trace: list[LinearCall | AttentionCall] = []
        session = _Session(model.config.num_hidden_layers, Interventions(), False, None, trace=trace)
        with torch.inference_mode(), _session(session), tracing_linears(model, trace):
            model(**encoded.model_inputs(device_of(model)))
        _PROJECTIONS[model] = resolve(trace)
    return _PROJECTIONS[model]


@contextmanager
def _keeping_values(session: _Session) -> Iterator[None]:
    """Within the block each value projection that `head_projections` found (where the attention
    function is not handed the values) leaves its output in ``session.values``."""

    def keep(attention: torch.nn.Module) -> Callable[..., None]:
        return lambda module, args, output: session.values.__setitem__(attention, output)

    with ExitStack() as stack:
        for attention, found in (session.projections or {}).items():
            if found.value is not None:
                stack.callback(found.value.register_forward_hook(keep(attention)).remove)
        yield


def device_of(model: torch.nn.Module) -> torch.device:
    """The device of ``model``'s first parameter."""
    return next(model.parameters()).device


@contextmanager
def _session(session: _Session) -> Iterator[_Session]:
    token = _ACTIVE.set(session)
    try:
        yield session
    finally:
        _ACTIVE.reset(token)


def summed_loss(logits: torch.Tensor, targets: torch.Tensor, kind: str) -> torch.Tensor:
    """Sum over examples of each example's loss, in float32, so an example's gradients do
    not depend on the batch it is in.

    ``kind`` `TASK_LOSS`: cross-entropy on (batch, labels) logits, or squared error for a
    single regression output; `MASKED_LM_LOSS` and `TOKEN_TASK_LOSS`: per example the mean
    cross-entropy over its labelled positions (``targets`` (batch, seq), -100 elsewhere).
    """
    if kind in (MASKED_LM_LOSS, TOKEN_TASK_LOSS):
        token_loss = F.cross_entropy(logits.transpose(1, 2).float(), targets, ignore_index=-100, reduction="none")
        counted = (targets != -100).sum(dim=1).clamp(min=1)
        return (token_loss.sum(dim=1) / counted).sum()
    if logits.shape[-1] == 1:  # regression (STS-B)
        return F.mse_loss(logits.squeeze(-1).float(), targets.float(), reduction="sum")
    return F.cross_entropy(logits.float(), targets.long(), reduction="sum")


def forward(
    model: PreTrainedModel,
    encoded: EncodedBatch,
    *,
    capture: Capture = Capture(),
    interventions: Interventions = Interventions(),
    targets: torch.Tensor | None = None,
    loss_kind: str = TASK_LOSS,
    prefix: Prefix | None = None,
) -> ForwardOutput:
    """Run ``model`` (switched with `use_harness_attention`) on ``encoded``.

    ``targets``: (batch,) labels, or (batch, seq) masked-LM targets, needed for a loss and
    for any gradient in ``capture``. Gradients are taken with ``torch.autograd.grad`` with
    respect to the attention weights and gates only, so no parameter gradient accumulates.
    With ``prefix`` the layers below ``prefix.start`` are not run (`Prefix`); ``interventions``
    must leave them intact, and attention and gradients are those of the layers that ran.
    """
    if not harness_attention(model):
        raise InputError(
            f"{type(model).__name__} runs '{model.config._attn_implementation}' attention; "
            "switch it with harness.model.forward.use_harness_attention before calling forward"
        )
    if capture.needs_grad and targets is None:
        raise ValueError("gradients need targets for the loss")
    device = device_of(model)
    num_layers = model.config.num_hidden_layers
    gates = interventions.head_gates
    if capture.gate_grad:
        shape = (len(encoded.input_ids), num_layers, model.config.num_attention_heads)
        base = gates if gates is not None else torch.ones(shape)
        gates = base.to(device=device, dtype=torch.float32).detach().requires_grad_(True)
    elif gates is not None:
        gates = gates.to(device)
    projections = head_projections(model, encoded) if capture.value_norms else None
    session = _Session(
        num_layers,
        interventions,
        capture.attention or capture.attention_grad,
        gates,
        projections,
        key_mask=encoded.attention_mask.to(device).bool(),
        layer=prefix.start if prefix is not None else 0,
    )
    grad_mode = torch.enable_grad() if capture.needs_grad else torch.inference_mode()
    with grad_mode, _session(session), _skipping(model, prefix), _keeping_values(session):
        outputs = model(**encoded.model_inputs(device), output_hidden_states=capture.hidden_states)
        logits = outputs.logits
        loss = summed_loss(logits, targets.to(device), loss_kind) if targets is not None else None
        if session.layer != num_layers:
            raise InputError(
                f"{type(model).__name__} ran {session.layer} of its {num_layers} attention layers "
                "through the harness attention function; it cannot be analysed"
            )
        attentions = torch.stack(session.attentions, dim=1) if session.attentions else None
        grads: tuple[torch.Tensor, ...] = ()
        if capture.needs_grad and loss is not None:  # always: targets were checked above
            gated = [gates] if capture.gate_grad and gates is not None else []  # gate_grad made gates above
            inputs = [*(session.attentions if capture.attention_grad else []), *gated]
            grads = torch.autograd.grad(loss, inputs)
    output = ForwardOutput(
        logits=logits.detach(),
        loss=None if loss is None else loss.detach(),
        attentions=None if attentions is None or not capture.attention else attentions.detach(),
        value_norms=torch.stack(session.value_norms, dim=1) if capture.value_norms else None,
        hidden_states=layer_outputs(model, outputs.hidden_states) if capture.hidden_states else None,
    )
    if capture.attention_grad:
        output.attention_grads = torch.stack(grads[: len(session.attentions)], dim=1)
    if capture.gate_grad:
        output.gate_grads = grads[-1]
    return output


def layer_outputs(model: PreTrainedModel, hidden_states: tuple[torch.Tensor, ...] | None) -> torch.Tensor:
    """(batch, layers, seq, hidden): what each encoder layer returned, from the model's
    ``hidden_states`` (the embeddings, then one per layer)."""
    count = model.config.num_hidden_layers
    if hidden_states is None or len(hidden_states) != count + 1:
        found = "none" if hidden_states is None else len(hidden_states)
        raise InputError(
            f"{type(model).__name__} returned {found} hidden states, not its embeddings and {count} "
            "layers' outputs; its representations cannot be compared"
        )
    return torch.stack(hidden_states[1:], dim=1).detach()


def _rows_of(masks: torch.Tensor | None, chosen: torch.Tensor, size: int) -> torch.Tensor | None:
    """The chosen variants' (V, layers, heads) masks, each repeated for the ``size`` rows of its block."""
    return None if masks is None else masks[chosen].repeat_interleave(size, dim=0)


def stacked_rows(device: torch.device) -> int:
    """How many rows `forward_variants` stacks per pass on ``device``: many on a GPU, whose
    passes are far from full at eval batch sizes; on a CPU the linear layers of one batch
    already run near the cores' peak, and measured on 2 cores (MiniLM, RTE, 16 examples a
    batch) a variant cost 1.18x / 1.27x / 1.51x its plain pass at 128 / 256 / 512 rows: one
    variant per pass there."""
    return 1024 if device.type == "cuda" else 1


def variant_count(variants: Interventions) -> int:
    """How many variants ``variants`` describes: the length of its first (V, layers, heads) masks."""
    masks = (variants.head_gates, variants.uniform_heads, variants.given_heads)
    return len(next(mask for mask in masks if mask is not None))


def first_intervened_layers(variants: Interventions, num_layers: int) -> torch.Tensor:
    """(V,) the first layer each variant changes; ``num_layers`` for a variant that changes nothing."""
    touched = torch.zeros(variant_count(variants), num_layers, dtype=torch.bool)
    if variants.head_gates is not None:
        touched |= (variants.head_gates != 1).any(dim=-1).cpu()
    if variants.uniform_heads is not None:
        touched |= variants.uniform_heads.any(dim=-1).cpu()
    if variants.given_heads is not None:
        touched |= variants.given_heads.any(dim=-1).cpu()
    return torch.where(touched.any(dim=1), touched.int().argmax(dim=1), num_layers)


def _intact_layer_outputs(
    model: PreTrainedModel, encoded: EncodedBatch
) -> tuple[torch.Tensor, list[torch.Tensor] | None]:
    """The intact model's logits on ``encoded`` and what each encoder layer returned
    ((batch, seq, hidden) each), or None where `encoder_layers` finds no layers or they
    return more than their hidden states."""
    outputs: list[object] = []
    hooks = [
        layer.register_forward_hook(lambda module, args, output: outputs.append(output))
        for layer in encoder_layers(model)
    ]
    try:
        logits = forward(model, encoded).logits
    finally:
        for hook in hooks:
            hook.remove()
    tensors = [output for output in outputs if isinstance(output, torch.Tensor)]
    reusable = len(tensors) == len(outputs) == model.config.num_hidden_layers
    return logits, tensors if reusable else None


def forward_variants(
    model: PreTrainedModel, encoded: EncodedBatch, variants: Interventions, max_rows: int | None = None
) -> torch.Tensor:
    """The logits of ``encoded`` under each of V variants of the model: (V, batch, labels) float32
    ((V, batch, seq, labels) for a token classifier).

    ``variants`` holds (V, layers, heads) gates, uniform-attention flags and/or given-attention
    flags, one set per variant (with the given maps of ``encoded``'s examples, shared by all).
    Variants are stacked along the batch (rows v * batch + b), at most ``max_rows`` rows per
    pass (default: `stacked_rows` of the model's device), so many masks share each forward pass
    (Kovaleva's and Michel's sweeps, the attention transplant). The layers below a variant's first
    intervened layer k compute what the intact model computes, so they run once, in one
    intact pass, and the variant starts at layer k from its output (`Prefix`): a variant of
    layer k costs (L - k) / L of a pass, about half a pass on average over a sweep of every layer.
    """
    size, num_layers = len(encoded.items), model.config.num_hidden_layers
    per_pass = max(1, (max_rows or stacked_rows(device_of(model))) // size)
    starts = first_intervened_layers(variants, num_layers)
    intact, outputs = _intact_layer_outputs(model, encoded) if bool((starts > 0).any()) else (None, None)
    if outputs is None:  # no reusable prefix: every variant runs the whole model
        starts = torch.zeros_like(starts)
    order, parts = [], []
    for start in starts.unique().tolist():
        members = (starts == start).nonzero().flatten()
        if start == num_layers and intact is not None:  # changes nothing: the intact logits (a start > 0 ran it)
            order.append(members)
            parts.append(intact.float()[None].expand(len(members), *intact.shape))
            continue
        for chosen in members.split(per_pass):
            stage = Interventions(
                _rows_of(variants.head_gates, chosen, size),
                _rows_of(variants.uniform_heads, chosen, size),
                _rows_of(variants.given_heads, chosen, size),
                variants.given_attention,
            )
            prefix = (
                Prefix(start, outputs[start - 1].repeat(len(chosen), 1, 1))
                if start > 0 and outputs is not None
                else None
            )
            out = forward(model, encoded.repeated(len(chosen)), interventions=stage, prefix=prefix).logits.float()
            order.append(chosen)
            parts.append(out.view(len(chosen), size, *out.shape[1:]))
    stacked = torch.cat(parts)
    logits = torch.empty_like(stacked)
    logits[torch.cat(order).to(stacked.device)] = stacked
    return logits
