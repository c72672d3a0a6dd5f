"""Clark et al.'s head clustering, with the pre-trained and fine-tuned heads in one space.

Shown: the joint MDS map of every head of every checkpoint (Clark et al.'s Figure 6, a line
from each head's earlier to its later version for each declared pair) and, per pair, each
head's divergence between its two versions. The full distance matrix and the MDS coordinates
are left out of the results the docs keep; the overview names the head that moved most, in
the cosine's rows (`harness.views.cosine`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

import numpy as np

from harness.config import Settings, analysis_settings
from harness.options import option
from harness.results.run_record import RunSection
from harness.views.base import Entry, View, per_pair_results, register_view
from harness.views.drawing import draw_side_by_side_grids
from harness.views.lazy import mpl
from harness.views.samples import running_text_sample
from harness.views.saving import plt, save
from harness.views.titles import axes_title, checkpoint_title, run_title


class WithinCheckpoint(TypedDict):
    """A checkpoint's mean divergence between heads of the same layer and of different layers."""

    same_layer: float
    other_layers: float


class BetweenVersions(TypedDict):
    """A pair's divergence between each head's two versions, (layers, heads)."""

    between_versions: list[list[float]]


class ClusteringResult(TypedDict):
    """What the clustering stores (one result for all checkpoints): the divergence between every
    two heads (``head_order``), their MDS embedding, the blocks within each checkpoint and each
    pair's divergence between versions; how many tokens and items it read."""

    checkpoints: list[str]
    num_layers: int
    num_heads: int
    head_order: str
    js_divergence: list[list[float]]
    mds: list[list[float]]
    mds_stress: float
    within_checkpoint: dict[str, WithinCheckpoint]
    tokens_used: int
    tokens_per_example: int
    num_items: int
    distance: str
    per_pair: dict[str, BetweenVersions]


@analysis_settings
@dataclass
class ClusteringSettings(Settings):
    """How many tokens of each example the head distances sample."""

    clustering_tokens_per_example: int = option(
        2,
        "tokens sampled per example for the Jensen-Shannon head distances",
        flag="--clustering-tokens",
        minimum=1,
        before="max_corpus_items",
    )


ClusteringEntry = Entry[ClusteringResult]


@register_view
class ClusteringView(View[ClusteringResult]):
    name = "clustering"
    samples = running_text_sample
    order = 40
    version = 2
    stored = ClusteringResult
    left_out = ("js_divergence", "mds")

    @classmethod
    def draw(cls, entry: ClusteringEntry, run: RunSection, out_dir: Path) -> list[Path]:
        return draw_clustering(entry, run, out_dir)


def draw_clustering(entry: ClusteringEntry, run: RunSection, out_dir: Path) -> list[Path]:
    """The joint MDS map (one marker per checkpoint, a line from each head's earlier to its later
    version for each declared pair) and, per pair, the per-head divergence between versions."""
    clustering: ClusteringResult = entry["result"]
    checkpoints = clustering["checkpoints"]
    layers, heads = clustering["num_layers"], clustering["num_heads"]
    points = np.asarray(clustering["mds"], dtype=float).reshape(len(checkpoints), layers, heads, 2)
    colours = plt.get_cmap("viridis")(np.linspace(0, 1, layers))
    figure, axes = plt.subplots(figsize=(6.4, 5.4), layout="constrained")
    markers = ("o", "^", "s", "D", "v", "P")
    versions = [(checkpoints.index(before), checkpoints.index(after)) for before, after in entry["pairs"]]
    for layer in range(layers):
        # a layer's lines are one collection (an artist per line, built and drawn, was most of the
        # figure's cost), under its markers and over the earlier layers', where lines drawn one by one stand
        lines = [points[[i, j], layer, head] for i, j in versions for head in range(heads)]
        axes.add_collection(
            mpl.collections.LineCollection(
                lines, colors=[colours[layer]], alpha=0.5, linewidths=0.8, capstyle="projecting"
            )
        )
        for index in range(len(checkpoints)):
            axes.scatter(
                points[index, layer, :, 0],
                points[index, layer, :, 1],
                color=colours[layer],
                marker=markers[index % len(markers)],
                s=22,
                edgecolor="black",
                linewidth=0.3,
            )
    for index, checkpoint in enumerate(checkpoints):
        axes.scatter(
            [],
            [],
            marker=markers[index % len(markers)],
            color="white",
            edgecolor="black",
            label=checkpoint_title(checkpoint),
        )
    scale = plt.cm.ScalarMappable(cmap="viridis", norm=plt.Normalize(0.5, layers + 0.5))
    figure.colorbar(scale, ax=axes, label="layer", ticks=range(1, layers + 1))
    pair_titles = ", ".join(f"{checkpoint_title(a)} -> {checkpoint_title(b)}" for a, b in entry["pairs"])
    axes.legend(fontsize=8, title=f"line: {pair_titles}" if pair_titles else None, title_fontsize=7)
    axes.set_xlabel("MDS dimension 1")
    axes.set_ylabel("MDS dimension 2")
    axes_title(
        axes,
        f"Heads embedded by Jensen-Shannon divergence (Clark Fig. 6):\n{run_title(run)}, "
        f"{clustering['tokens_used']} tokens",
    )
    written = [save(figure, out_dir / "clustering_mds.png")]
    for index, ((before, after), stats) in enumerate(zip(entry["pairs"], per_pair_results(entry).values())):
        suffix = "" if index == 0 else f"_{before}_{after}"
        written.append(
            draw_side_by_side_grids(
                {
                    f"JS divergence, {checkpoint_title(before)} vs {checkpoint_title(after)} head": stats[
                        "between_versions"
                    ]
                },
                out_dir / f"clustering_between_versions{suffix}.png",
                title=run_title(run),
                colorbar_label="mean JS divergence per token (nats)",
                vmin=0.0,
                cmap="magma",
            )
        )
    return written
