"""Kovaleva et al.'s cosine comparison as their code computed it: every input padded to 200
tokens and the whole padded maps flattened, padding rows kept.

The padding columns of a map are 0 (masked keys), but each padding *row* is a distribution
over the real tokens, so the padded cosine mixes the real rows with many copies of
padding-query attention, whose share grows as the input gets shorter. The harness's
``cosine`` crops to the real tokens, the cleaner measure; this compatibility analysis runs
only when asked for (``--analyses cosine_padded``) and reports, from the same padded
forward pass, both measures and how well their head rankings agree (Spearman over heads,
and whether the most-changed head is the same), so a number beside the paper's can be
computed the paper's way.
"""

from __future__ import annotations

import torch
from scipy.stats import spearmanr
from transformers import PretrainedConfig

from harness.analyses.base import Analysis, AnalysisContext, register_analysis
from harness.analyses.cosine import CosineSums, cosine_per_example
from harness.inputs.batches import AttentionBatch
from harness.inputs.sources.task import KOVALEVA_PADDED_LENGTH
from harness.views.base import HeadValue, pair_name
from harness.views.cosine import most_changed
from harness.views.cosine_padded import PROTOCOLS, PaddedCosineView, PaddedPair, PaddedResult


@register_analysis
class PaddedCosineSimilarity(Analysis):
    """Per declared pair: ``{"padded": cosine statistics, "cropped": ..., "ranking_spearman": rho,
    "most_changed": {protocol: head}, "same_most_changed": bool}``."""

    view = PaddedCosineView
    source = "task-padded"
    joint = True
    on_by_default = False
    reference = {
        "kovaleva": "inputs padded to 200 tokens, padding rows kept in the flattened maps; "
        "the last two layers change most (all tasks but QQP)",
        "padded_to": KOVALEVA_PADDED_LENGTH,
    }

    @classmethod
    def cannot_run_on(cls, model: PretrainedConfig) -> str | None:
        positions = model.max_position_embeddings
        if positions >= KOVALEVA_PADDED_LENGTH:
            return None
        return (
            f"pads inputs to {KOVALEVA_PADDED_LENGTH} tokens as Kovaleva et al.'s code, but the model has "
            f"{positions} position embeddings"
        )

    def __init__(self, context: AnalysisContext) -> None:
        super().__init__(context)
        self.sums = {protocol: CosineSums(context) for protocol in PROTOCOLS}

    def update(self, batch: AttentionBatch) -> None:
        every_row = torch.full_like(batch.lengths, batch.encoded.input_ids.shape[1])
        for index, (before, after) in enumerate(self.context.pairs):
            first, second = batch.attentions[before], batch.attentions[after]
            self.sums["padded"].add(index, cosine_per_example(first, second, every_row))
            self.sums["cropped"].add(index, cosine_per_example(first, second, batch.lengths))

    def result(self) -> PaddedResult:
        out: dict[str, PaddedPair] = {}
        for index, pair in enumerate(self.context.pairs):
            stats = {protocol: sums.stats(index) for protocol, sums in self.sums.items()}
            heads: dict[str, HeadValue] = {
                protocol: most_changed(stats[protocol]["per_head"]) for protocol in PROTOCOLS
            }
            rho = spearmanr(
                torch.tensor(stats["padded"]["per_head"]).flatten(),
                torch.tensor(stats["cropped"]["per_head"]).flatten(),
            ).statistic
            where = {protocol: (head["layer"], head["head"]) for protocol, head in heads.items()}
            out[pair_name(pair)] = {
                "padded": stats["padded"],
                "cropped": stats["cropped"],
                "ranking_spearman": float(rho),
                "most_changed": heads,
                "same_most_changed": where["padded"] == where["cropped"],
            }
        return {"per_pair": out, "padded_to": KOVALEVA_PADDED_LENGTH}
