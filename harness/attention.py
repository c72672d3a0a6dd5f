"""Streaming attention of two checkpoints over the same batches.

`stream_attention` runs every checkpoint on each `EncodedBatch` and yields one
`AttentionBatch` holding all their attention maps; the caller feeds it to the analyses and
drops it, so memory is bounded by one batch, not by the number of examples.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
from transformers import PreTrainedModel

from harness.errors import HarnessError

PRETRAINED = "pretrained"
FINETUNED = "finetuned"
CHECKPOINTS = (PRETRAINED, FINETUNED)


def real_tokens(lengths: torch.Tensor, seq_len: int) -> torch.Tensor:
    """(batch, seq) bool mask, True on each row's first ``lengths[b]`` (real, non-padding) tokens."""
    return torch.arange(seq_len)[None, :] < lengths[:, None]


@dataclass
class EncodedBatch:
    """Model inputs for one batch plus the source item (example, sentence, ...) of each row.

    Shapes: ``input_ids``, ``attention_mask`` and ``token_type_ids`` are (batch, seq);
    ``attention_mask`` is 1 on real tokens and 0 on padding.
    """

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    token_type_ids: torch.Tensor | None
    items: list[Any]

    @property
    def lengths(self) -> torch.Tensor:
        """Number of real tokens per row, shape (batch,)."""
        return self.attention_mask.sum(dim=1)

    def model_inputs(self, device: torch.device | str) -> dict[str, torch.Tensor]:
        inputs = {"input_ids": self.input_ids, "attention_mask": self.attention_mask}
        if self.token_type_ids is not None:
            inputs["token_type_ids"] = self.token_type_ids
        return {key: value.to(device) for key, value in inputs.items()}


@dataclass
class AttentionBatch:
    """Attention of every checkpoint on one batch.

    ``attentions[checkpoint]`` has shape (batch, layers, heads, seq, seq), float32 on the
    CPU; row i of a map is the distribution of token i over the tokens it attends to.
    Rows and columns past ``lengths[b]`` are padding and must be ignored.
    """

    encoded: EncodedBatch
    attentions: dict[str, torch.Tensor]

    @property
    def lengths(self) -> torch.Tensor:
        return self.encoded.lengths

    @property
    def input_ids(self) -> torch.Tensor:
        return self.encoded.input_ids

    @property
    def items(self) -> list[Any]:
        return self.encoded.items

    def maps(self, checkpoint: str, row: int) -> torch.Tensor:
        """The cropped maps of one example: (layers, heads, n, n) with n its real length."""
        n = int(self.lengths[row])
        return self.attentions[checkpoint][row, :, :, :n, :n]


def attention_of(model: PreTrainedModel, encoded: EncodedBatch) -> torch.Tensor:
    """Post-softmax attention of ``model`` on a batch: (batch, layers, heads, seq, seq), float32 CPU."""
    device = next(model.parameters()).device
    with torch.inference_mode():
        outputs = model(**encoded.model_inputs(device), output_attentions=True)
    if not outputs.attentions or outputs.attentions[0] is None:
        raise HarnessError(
            f"{model.config.name_or_path or type(model).__name__} returned no attention weights; "
            "load it with attn_implementation='eager' (the harness does) or pick a model that supports it"
        )
    return torch.stack(outputs.attentions, dim=1).float().cpu()


def stream_attention(
    checkpoints: dict[str, PreTrainedModel], batches: Iterable[EncodedBatch]
) -> Iterator[AttentionBatch]:
    """For each batch, the attention of every checkpoint on exactly the same inputs."""
    for encoded in batches:
        yield AttentionBatch(
            encoded=encoded,
            attentions={name: attention_of(model, encoded) for name, model in checkpoints.items()},
        )
