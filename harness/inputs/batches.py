"""The two batch types of the data flow: model inputs in, what the checkpoints produced out.

A source yields `EncodedBatch`es (CPU tensors plus the source item of each row); the
pipeline runs every checkpoint on each one through `harness.model.forward` and hands the
analyses one `AttentionBatch`, whose tensors stay on the models' device. The caller drops
it after the analyses have folded it in, so memory is bounded by one batch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import torch

from classifier.features import NO_SECOND_SEGMENT


def real_tokens(lengths: torch.Tensor, seq_len: int) -> torch.Tensor:
    """(batch, seq) bool mask, True on each row's first ``lengths[b]`` (real, non-padding) tokens."""
    return torch.arange(seq_len, device=lengths.device)[None, :] < lengths[:, None]


@dataclass
class EncodedBatch:
    """Model inputs for one batch plus the source item (example, sentence, ...) of each row.

    Shapes: ``input_ids``, ``attention_mask`` and ``token_type_ids`` are (batch, seq) CPU
    tensors; ``attention_mask`` is 1 on real tokens and 0 on padding (right padding).
    ``second_text``: (batch, seq), 1 on the tokens of a pair's second text, as the tokenizer
    placed them (`harness.inputs.encoding.second_text_tokens`), for every tokenizer, with or
    without token types; None for inputs that are not pairs, or where the token types say it.
    """

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    token_type_ids: torch.Tensor | None
    items: list[Any]  # Any: each row's source item, of its source's own kind (an example, a sentence, a document)
    second_text: torch.Tensor | None = None

    @property
    def lengths(self) -> torch.Tensor:
        """Number of real tokens per row, shape (batch,)."""
        return self.attention_mask.sum(dim=1)

    @property
    def second_segments(self) -> torch.Tensor:
        """(batch,) first token of each row's second segment (`second_text`, else token type 1),
        `NO_SECOND_SEGMENT` for single-segment rows and where neither is known."""
        marked = self.second_text if self.second_text is not None else self.token_type_ids
        if marked is None:
            return torch.full((len(self.input_ids),), NO_SECOND_SEGMENT)
        second = marked.bool()
        return torch.where(second.any(dim=1), second.long().argmax(dim=1), NO_SECOND_SEGMENT)

    def model_inputs(self, device: torch.device | str) -> dict[str, torch.Tensor]:
        """The model's keyword inputs, moved to ``device`` (``token_type_ids`` only when the tokenizer gives them)."""
        inputs = {"input_ids": self.input_ids, "attention_mask": self.attention_mask}
        if self.token_type_ids is not None:
            inputs["token_type_ids"] = self.token_type_ids
        return {key: value.to(device) for key, value in inputs.items()}

    def repeated(self, times: int) -> EncodedBatch:
        """The batch stacked ``times`` times along the batch dimension (rows b, b + B, ... are
        the same example), for evaluating several interventions in one pass."""

        def stacked(tensor: torch.Tensor | None) -> torch.Tensor | None:
            return tensor.repeat(times, 1) if tensor is not None else None

        return EncodedBatch(
            self.input_ids.repeat(times, 1),
            self.attention_mask.repeat(times, 1),
            stacked(self.token_type_ids),
            self.items * times,
            stacked(self.second_text),
        )


@dataclass
class Gradients:
    """Gradients of one checkpoint's loss on a batch, on its device: ``magnitudes`` |dL/d
    attention| (batch, layers, heads, seq, seq) and ``gates`` dL/d xi_h (batch, layers, heads),
    each when asked for; ``loss`` says which loss was differentiated (`harness.model.forward.TASK_LOSS`,
    ``MASKED_LM_LOSS`` or the task loss of an untrained head)."""

    loss: str
    magnitudes: torch.Tensor | None = None
    gates: torch.Tensor | None = None

    @property
    def attention_magnitudes(self) -> torch.Tensor:
        """``magnitudes``, which an analysis that needs attention gradients is given."""
        if self.magnitudes is None:
            raise ValueError("no attention gradients were captured: the analysis must need them")
        return self.magnitudes

    @property
    def gate_gradients(self) -> torch.Tensor:
        """``gates``, which an analysis that needs the heads' gate gradients is given."""
        if self.gates is None:
            raise ValueError("no gate gradients were captured: the analysis must need them")
        return self.gates


@dataclass
class AttentionBatch:
    """What every checkpoint produced on one batch.

    ``attentions[name]``: (batch, layers, heads, seq, seq) post-softmax attention of
    checkpoint ``name`` on the models' device, in their dtype; row i of a map is the
    distribution of token i over the tokens it attends to; rows and columns past
    ``lengths[b]`` are padding and must be ignored. ``gradients[name]`` is present for the
    checkpoints whose loss could be differentiated on this batch (analyses that ask for
    it); ``skipped_gradients[name]`` says why another got none. ``logits[name]``: (batch,
    labels) output of checkpoint ``name``'s classifier. ``value_norms[name]``: (batch, layers,
    heads, seq) float32 norm of each token's transformed vector per head (`harness.model.forward`),
    for analyses that need it (`harness.analyses.base.VALUE_NORMS`). ``hidden_states[name]``:
    (batch, layers, seq, hidden), what each layer of checkpoint ``name`` returned
    (`harness.analyses.base.HIDDEN_STATES`).
    """

    encoded: EncodedBatch
    attentions: dict[str, torch.Tensor]
    logits: dict[str, torch.Tensor] = field(default_factory=dict)
    gradients: dict[str, Gradients] = field(default_factory=dict)
    skipped_gradients: dict[str, str] = field(default_factory=dict)
    value_norms: dict[str, torch.Tensor] = field(default_factory=dict)
    hidden_states: dict[str, torch.Tensor] = field(default_factory=dict)
    row_entropies: dict[str, torch.Tensor] = field(default_factory=dict, init=False, repr=False)  # `row_entropy`

    @property
    def device(self) -> torch.device:
        """The device the attention maps are on (the first checkpoint's)."""
        return next(iter(self.attentions.values())).device

    def row_entropy(self, checkpoint: str) -> torch.Tensor:
        """(batch, layers, heads, seq) float32 entropy (nats) of each row of ``checkpoint``'s
        maps, computed once per batch for every analysis that needs it (surface statistics and
        the pattern measurements both do); rows past ``lengths`` are padding: mask them."""
        if checkpoint not in self.row_entropies:
            self.row_entropies[checkpoint] = torch.special.entr(self.attentions[checkpoint].float()).sum(dim=-1)
        return self.row_entropies[checkpoint]

    @cached_property
    def input_ids(self) -> torch.Tensor:
        """(batch, seq) token ids on the attention's device."""
        return self.encoded.input_ids.to(self.device)

    @cached_property
    def lengths(self) -> torch.Tensor:
        """(batch,) real tokens per row, on the attention's device."""
        return self.encoded.lengths.to(self.device)

    @property
    def items(self) -> list[Any]:  # Any: as `EncodedBatch.items`
        """The source item of each row (`EncodedBatch.items`)."""
        return self.encoded.items

    @cached_property
    def second_segments(self) -> torch.Tensor:
        """(batch,) first token of each input's second segment (`EncodedBatch.second_segments`), on
        the attention's device."""
        return self.encoded.second_segments.to(self.device)

    @cached_property
    def two_segments(self) -> torch.Tensor:
        """(batch,) bool: whether each input is a pair of texts, encoded as two segments."""
        return torch.tensor([getattr(item, "text_b", None) is not None for item in self.items], dtype=torch.bool)

    def maps(self, checkpoint: str, row: int) -> torch.Tensor:
        """The cropped maps of one example: (layers, heads, n, n) with n its real length."""
        n = int(self.encoded.lengths[row])
        return self.attentions[checkpoint][row, :, :, :n, :n]
