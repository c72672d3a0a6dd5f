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

from pathlib import Path
from typing import Any

import torch
from scipy.stats import spearmanr

from harness.analyses.base import Analysis, AnalysisContext, register_analysis
from harness.views.base import pair_name, per_pair_results
from harness.analyses.cosine import CosineSums, cosine_per_example
from harness.views.cosine import most_changed
from harness.inputs.batches import AttentionBatch
from harness.views.style import checkpoint_title, draw_head_grid, draw_layer_lines, run_title
from harness.inputs.sources.task import KOVALEVA_PADDED_LENGTH

PROTOCOLS = ("padded", "cropped")


@register_analysis
class PaddedCosineSimilarity(Analysis):
    """Per declared pair: ``{"padded": cosine statistics, "cropped": ..., "ranking_spearman": rho,
    "most_changed": {protocol: head}, "same_most_changed": bool}``."""

    name = "cosine_padded"
    version = 1
    source = "task-padded"
    joint = True
    on_by_default = False
    reference = {"kovaleva": "inputs padded to 200 tokens, padding rows kept in the flattened maps; "
                             "the last two layers change most (all tasks but QQP)",
                 "padded_to": KOVALEVA_PADDED_LENGTH}

    def __init__(self, context: AnalysisContext) -> None:
        super().__init__(context)
        self.sums = {protocol: CosineSums(context) for protocol in PROTOCOLS}

    def update(self, batch: AttentionBatch) -> None:
        every_row = torch.full_like(batch.lengths, batch.encoded.input_ids.shape[1])
        for index, (before, after) in enumerate(self.context.pairs):
            first, second = batch.attentions[before], batch.attentions[after]
            self.sums["padded"].add(index, cosine_per_example(first, second, every_row))
            self.sums["cropped"].add(index, cosine_per_example(first, second, batch.lengths))

    def result(self) -> dict[str, Any]:
        out = {}
        for index, pair in enumerate(self.context.pairs):
            stats = {protocol: sums.stats(index) for protocol, sums in self.sums.items()}
            heads = {protocol: most_changed(stats[protocol]["per_head"]) for protocol in PROTOCOLS}
            rho = spearmanr(torch.tensor(stats["padded"]["per_head"]).flatten(),
                            torch.tensor(stats["cropped"]["per_head"]).flatten()).statistic
            where = {protocol: (head["layer"], head["head"]) for protocol, head in heads.items()}
            out[pair_name(pair)] = {**stats, "ranking_spearman": float(rho), "most_changed": heads,
                                    "same_most_changed": where["padded"] == where["cropped"]}
        return {"per_pair": out, "padded_to": KOVALEVA_PADDED_LENGTH}

    @classmethod
    def metrics(cls, entry: dict[str, Any]) -> list[tuple[str, float]]:
        pairs = per_pair_results(entry)
        if not pairs:
            return []
        first = next(iter(pairs.values()))
        return ([(f"cosine_padded_layer_{layer + 1}", value) for layer, value in enumerate(first["padded"]["per_layer"])]
                + [("cosine_padded_ranking_spearman", first["ranking_spearman"])])

    @classmethod
    def tables(cls, entry: dict[str, Any], run: dict[str, Any]) -> dict[str, str]:
        return {"cosine_padded_table": f"# Cosine per protocol: {run_title(run)}\n\n{protocol_table(entry)}"}

    @classmethod
    def draw(cls, entry: dict[str, Any], run: dict[str, Any], out_dir: Path) -> list[Path]:
        paths = []
        for (before, after), stats in zip(entry["pairs"], per_pair_results(entry).values()):
            names = f"{checkpoint_title(before)} vs {checkpoint_title(after)}"
            paths.append(draw_head_grid(
                stats["padded"]["per_head"], out_dir / f"cosine_padded_per_head_{before}_{after}.png",
                title=f"{run_title(run)}: {names}, maps padded to {KOVALEVA_PADDED_LENGTH} (Kovaleva's code)",
                colorbar_label="cosine similarity (mean over examples)", vmax=1.0))
            paths.append(draw_layer_lines(
                {f"padded to {KOVALEVA_PADDED_LENGTH}, padding rows kept": stats["padded"]["per_layer"],
                 "cropped to the real tokens": stats["cropped"]["per_layer"]},
                out_dir / f"cosine_padded_per_layer_{before}_{after}.png",
                title=f"{run_title(run)}: {names} per layer, two protocols "
                      f"(head ranking Spearman {stats['ranking_spearman']:.2f})",
                ylabel="mean cosine similarity"))
        return paths


def protocol_table(entry: dict[str, Any]) -> str:
    """Markdown, per pair: the per-layer cosine and the most-changed head of each protocol,
    and the agreement of their head rankings."""
    parts = []
    for (before, after), stats in zip(entry["pairs"], per_pair_results(entry).values()):
        layers = len(stats["padded"]["per_layer"])
        lines = [f"**{checkpoint_title(before)} -> {checkpoint_title(after)}** "
                 f"({stats['padded']['num_examples']} examples; head ranking Spearman "
                 f"{stats['ranking_spearman']:.3f})", "",
                 "| protocol | " + " | ".join(f"layer {layer + 1}" for layer in range(layers)) + " | most changed head |",
                 "|---" * (layers + 2) + "|"]
        for protocol, label in ((PROTOCOLS[0], f"padded to {KOVALEVA_PADDED_LENGTH} (Kovaleva's code)"),
                                (PROTOCOLS[1], "cropped to the real tokens (ours)")):
            head = stats["most_changed"][protocol]
            lines.append(f"| {label} | " + " | ".join(f"{value:.4f}" for value in stats[protocol]["per_layer"])
                         + f" | {head['layer']}-{head['head']} ({head['value']:.3f}) |")
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"
