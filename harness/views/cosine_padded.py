"""Kovaleva et al.'s cosine comparison as their code computed it: every input padded to 200
tokens and the whole padded maps flattened, padding rows kept.

Figures, per declared pair: the padded protocol's per-head grid, and both protocols' cosine
per layer with the Spearman agreement of their head rankings; table: per pair, each
protocol's cosine per layer and most-changed head; metrics: the padded cosine per layer and
the ranking agreement of the first pair.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Literal, TypedDict

from harness.results.run_record import RunSection
from harness.views.base import Entry, HeadValue, View, per_pair_results, register_view
from harness.views.cosine import CosineStats, CosineView
from harness.views.drawing import draw_head_grid, draw_layer_lines
from harness.views.metrics import Metric
from harness.views.titles import checkpoint_title, run_title

PROTOCOLS: tuple[Literal["padded"], Literal["cropped"]] = ("padded", "cropped")


class PaddedPair(TypedDict):
    """A pair's cosine under each protocol, the Spearman agreement of their head rankings, and each
    protocol's most changed head (by protocol) and whether they are the same head."""

    padded: CosineStats
    cropped: CosineStats
    ranking_spearman: float
    most_changed: dict[str, HeadValue]
    same_most_changed: bool


class PaddedResult(TypedDict):
    """What the padded protocol stores (one result for all checkpoints): each pair's, and the padded length."""

    per_pair: dict[str, PaddedPair]
    padded_to: int


PaddedCosineEntry = Entry[PaddedResult]


@register_view
class PaddedCosineView(View[PaddedResult]):
    name = "cosine_padded"
    order = 30
    version = 1
    stored = PaddedResult
    per_head_keys = CosineView.per_head_keys  # its statistics are the cosine's

    @classmethod
    def metrics(cls, entry: PaddedCosineEntry) -> list[Metric]:
        """The first pair's padded cosine per layer and the Spearman agreement of the two protocols'
        head rankings (their names leave the pair unsaid)."""
        pairs = per_pair_results(entry)
        if not pairs:
            return []
        first = next(iter(pairs.values()))
        before, after = entry["pairs"][0]
        padded = Metric(cls.name, "cosine_padded", pair=(before, after), pair_said=False)
        per_layer = [
            replace(padded, layer=layer, value=value) for layer, value in enumerate(first["padded"]["per_layer"], 1)
        ]
        return per_layer + [replace(padded, detail="ranking_spearman", value=first["ranking_spearman"])]

    @classmethod
    def tables(cls, entry: PaddedCosineEntry, run: RunSection) -> dict[str, str]:
        return {"cosine_padded_table": f"# Cosine per protocol: {run_title(run)}\n\n{protocol_table(entry)}"}

    @classmethod
    def draw(cls, entry: PaddedCosineEntry, run: RunSection, out_dir: Path) -> list[Path]:
        padded_to = entry["result"]["padded_to"]
        paths = []
        for (before, after), stats in zip(entry["pairs"], per_pair_results(entry).values()):
            names = f"{checkpoint_title(before)} vs {checkpoint_title(after)}"
            paths.append(
                draw_head_grid(
                    stats["padded"]["per_head"],
                    out_dir / f"cosine_padded_per_head_{before}_{after}.png",
                    title=f"{run_title(run)}: {names}, maps padded to {padded_to} (Kovaleva's code)",
                    colorbar_label="cosine similarity (mean over examples)",
                    vmax=1.0,
                )
            )
            paths.append(
                draw_layer_lines(
                    {
                        f"padded to {padded_to}, padding rows kept": stats["padded"]["per_layer"],
                        "cropped to the real tokens": stats["cropped"]["per_layer"],
                    },
                    out_dir / f"cosine_padded_per_layer_{before}_{after}.png",
                    title=f"{run_title(run)}: {names} per layer, two protocols "
                    f"(head ranking Spearman {stats['ranking_spearman']:.2f})",
                    ylabel="mean cosine similarity",
                )
            )
        return paths


def protocol_table(entry: PaddedCosineEntry) -> str:
    """Markdown, per pair: the per-layer cosine and the most-changed head of each protocol,
    and the agreement of their head rankings."""
    padded_to = entry["result"]["padded_to"]
    parts = []
    for (before, after), stats in zip(entry["pairs"], per_pair_results(entry).values()):
        layers = len(stats["padded"]["per_layer"])
        lines = [
            f"**{checkpoint_title(before)} -> {checkpoint_title(after)}** "
            f"({stats['padded']['num_examples']} examples; head ranking Spearman "
            f"{stats['ranking_spearman']:.3f})",
            "",
            "| protocol | " + " | ".join(f"layer {layer + 1}" for layer in range(layers)) + " | most changed head |",
            "|---" * (layers + 2) + "|",
        ]
        for protocol, label in (
            (PROTOCOLS[0], f"padded to {padded_to} (Kovaleva's code)"),
            (PROTOCOLS[1], "cropped to the real tokens (ours)"),
        ):
            head = stats["most_changed"][protocol]
            lines.append(
                f"| {label} | "
                + " | ".join(f"{value:.4f}" for value in stats[protocol]["per_layer"])
                + f" | {head['layer']}-{head['head']} ({head['value']:.3f}) |"
            )
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"
