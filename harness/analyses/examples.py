"""The attention maps of a few dev examples, every layer and head, per checkpoint: what the
report's per-example view shows (`harness.present.report`), from stored results like every figure.

The examples are the `NUM_EXAMPLES` inputs of at most `MAX_TOKENS` tokens of the run's dev
sample whose seeded hash of their id is smallest: the same examples for every checkpoint and
every batching, found in one streaming pass. Each example's maps are stored as text, each
weight in thousandths (three decimals) written as two base-64 digits, layer by layer, head by
head, row by row: a JSON list of 3-decimal numbers takes about three times the room, and
this keeps four 40-token examples of a 12 x 12-head model under 2 MB per checkpoint.
`compare` gives, per declared pair and example, the cosine of each head's two maps and the
head that changed most (the view opens each example there).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import torch

from harness.analyses.base import Analysis, AnalysisContext, best_head, register_analysis
from harness.inputs.batches import AttentionBatch
from harness.inputs.encoding import token_strings
from harness.views.base import pair_name
from harness.views.examples import (
    ENCODING,
    ExampleChange,
    ExamplesComparison,
    ExamplesResult,
    ExamplesView,
    decode_maps,
    encode_maps,
    head_cosines,
)
from tasks.examples import Example

NUM_EXAMPLES = 4
MAX_TOKENS = 40  # special tokens included: short enough to read every token on an axis


def selection_rank(seed: int, item: Example) -> str:
    """The seeded order examples are chosen in: a hash of the seed and the example's split and id."""
    return hashlib.sha256(f"{seed}:{item.split}:{item.guid}".encode()).hexdigest()


def label_text(context: AnalysisContext, label: int | float) -> str | float:
    """The gold label by name (classification) or as the score (regression); a tagging task's are per word."""
    task = context.task
    if task is not None and task.is_tagging:
        return "a tag per word"
    return task.label_names[int(label)] if task is not None and not task.is_regression else label


@dataclass
class Kept:
    """One chosen example: its rank, the example, its tokens and each checkpoint's maps (CPU)."""

    rank: str
    item: Example
    tokens: list[str]
    maps: dict[str, torch.Tensor]


@register_analysis
class ExampleMaps(Analysis):
    """A few seeded dev examples' attention maps, every layer and head, per checkpoint."""

    view = ExamplesView
    source = "task"
    settings_used = ("analysis_seed",)  # chooses the examples
    reference = {"num_examples": NUM_EXAMPLES, "max_tokens": MAX_TOKENS, "encoding": ENCODING}

    def __init__(self, context: AnalysisContext) -> None:
        super().__init__(context)
        self.kept: list[Kept] = []
        self.candidates = 0

    def update(self, batch: AttentionBatch) -> None:
        lengths = batch.encoded.lengths.tolist()
        for row, (item, length) in enumerate(zip(batch.items, lengths)):
            if length > MAX_TOKENS:
                continue
            self.candidates += 1
            rank = selection_rank(self.context.seed, item)
            if len(self.kept) == NUM_EXAMPLES and rank >= self.kept[-1].rank:
                continue
            tokens = token_strings(self.context.run_tokenizer, batch.encoded.input_ids[row, :length].tolist())
            maps = {name: batch.maps(name, row).float().cpu() for name in self.context.checkpoints}
            self.kept = sorted([*self.kept, Kept(rank, item, tokens, maps)], key=lambda kept: kept.rank)[:NUM_EXAMPLES]

    def result(self) -> dict[str, ExamplesResult]:
        return {
            name: {
                "num_layers": self.context.num_layers,
                "num_heads": self.context.num_heads,
                "max_tokens": MAX_TOKENS,
                "candidates": self.candidates,
                "examples": [
                    {
                        "guid": kept.item.guid,
                        "split": kept.item.split,
                        "text_a": kept.item.text_a,
                        "text_b": kept.item.text_b,
                        "label": label_text(self.context, kept.item.label),
                        "tokens": kept.tokens,
                        "maps": encode_maps(kept.maps[name].numpy()),
                    }
                    for kept in self.kept
                ],
            }
            for name in self.context.checkpoints
        }

    @classmethod
    def compare(
        cls, per_checkpoint: dict[str, ExamplesResult], pairs: list[tuple[str, str]]
    ) -> dict[str, ExamplesComparison]:
        """Per pair and example: each head's cosine between the two maps, and the head that changed most."""
        out: dict[str, ExamplesComparison] = {}
        for before, after in pairs:
            if before not in per_checkpoint or after not in per_checkpoint:
                continue
            first, second = per_checkpoint[before], per_checkpoint[after]
            shape = (first["num_layers"], first["num_heads"])
            examples: list[ExampleChange] = []
            for a, b in zip(first["examples"], second["examples"]):
                cosine = head_cosines(decode_maps(a["maps"], *shape), decode_maps(b["maps"], *shape))
                lowest = best_head(-torch.from_numpy(cosine))
                examples.append(
                    {
                        "guid": a["guid"],
                        "cosine_per_head": np.round(cosine, 3).tolist(),
                        "most_changed": {
                            "layer": lowest["layer"],
                            "head": lowest["head"],
                            "cosine": round(-lowest["value"], 3),
                        },
                    }
                )
            out[pair_name((before, after))] = {"examples": examples}
        return out
