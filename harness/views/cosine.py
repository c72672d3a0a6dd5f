"""Kovaleva et al.'s per-head change: cosine similarity of two checkpoints' attention maps.

Figures: the per-head grid of each declared pair and the per-layer lines; metrics: the mean
per layer, over all heads and over the last two layers (Kovaleva et al.: those change most);
a study keeps the per-layer and per-head means over seeds and judges that claim on each run,
on bootstrap resamples of the run's dev examples (each example's mean cosine per layer is
stored, `harness.views.evidence`).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from statistics import fmean
from typing import TypedDict

import numpy as np

from harness.results.checkpoints import MAIN_PAIR
from harness.results.entries import AnyEntry
from harness.results.run_record import RunSection
from harness.results.study_record import Elementwise, StudyRecord, TaskAggregate, view_part
from harness.views.across_tasks import study_title, task_colour
from harness.views.base import Claim, Entry, HeadValue, PaperPoint, Row, View, per_pair_results, register_view
from harness.views.clustering import ClusteringView
from harness.views.drawing import draw_head_grid, draw_layer_lines, panels_for, style_head_axes
from harness.views.evidence import StoredUnits, UnitSums, Verdict, resampled_verdict
from harness.views.markdown import markdown_table
from harness.views.metrics import Metric
from harness.views.papers import KOVALEVA_TASKS, expected_for
from harness.views.saving import plt, save
from harness.views.seeds import elementwise
from harness.views.titles import checkpoint_title, run_title, suptitle

LAST_LAYERS = 2  # Kovaleva et al.: "the last two layers change most"
SUMMED = ("mean", "last_two_layers")  # the metrics over layers: every layer's, and the last two's
UNIT = "dev examples"  # what the cosine samples: each example's maps of both checkpoints


class CosineStats(TypedDict):
    """One pair's cosine between the maps: per head the mean and the standard deviation over
    examples, per layer the mean over heads, and how many examples."""

    per_head: list[list[float]]
    per_head_std: list[list[float]]
    per_layer: list[float]
    num_examples: int


class CosinePair(CosineStats):
    """A pair's stored cosine, with each example's mean cosine per layer (`UNIT`)."""

    units: StoredUnits


class CosineResult(TypedDict):
    """What the cosine stores (one result for all checkpoints): each declared pair's, by pair name."""

    per_pair: dict[str, CosinePair]


class CosineSeries(TypedDict):
    """The main pair's cosine over a task's seeds: per layer and per head, element by element."""

    per_layer: Elementwise
    per_head: Elementwise


class CosineAcrossSeeds(TypedDict):
    """What a study keeps of the cosine in a task's aggregate (`CosineView.across_seeds`)."""

    cosine: CosineSeries


def cosine_part(entry: TaskAggregate) -> CosineAcrossSeeds:
    """The cosine's part of a task's aggregate, as declared (`view_part`)."""
    return view_part(entry, CosineAcrossSeeds)


def cosine_per_layer(entry: TaskAggregate) -> Elementwise | None:
    """The cosine per layer of a task's aggregate, or None where the task has none."""
    part = cosine_part(entry)
    return part["cosine"]["per_layer"] if "cosine" in part else None


def most_changed(per_head: list[list[float]]) -> HeadValue:
    """The head (1-indexed) with the lowest mean cosine (the first such in layer-major order),
    and that cosine in float32, as the grid was measured."""
    grid = np.asarray(per_head, dtype=np.float32)
    layer, head = np.unravel_index(int(grid.argmin()), grid.shape)
    return {"layer": int(layer) + 1, "head": int(head) + 1, "value": float(grid[layer, head])}


def last_layers_change_most(entry: CosineEntry) -> Verdict | None:
    """Whether the last two layers have the two lowest per-layer cosines, judged on bootstrap
    resamples of the dev examples; the statistic is the margin, the smaller change (1 - cosine)
    of the last two layers minus the largest change of the others (above 0: the claim holds).
    None without the main pair, or for a model of no more than two layers (no other layer to
    change less)."""
    comparison = per_pair_results(entry).get(MAIN_PAIR)
    if comparison is None:
        return None
    units = UnitSums.read(comparison["units"])
    if units.numerators.shape[1] <= LAST_LAYERS:
        return None

    def margin(weights: np.ndarray) -> np.ndarray:
        per_layer = units.ratios(weights)
        return per_layer[:, :-LAST_LAYERS].min(axis=1) - per_layer[:, -LAST_LAYERS:].max(axis=1)

    observed = float(margin(np.ones((1, units.count)))[0])
    return resampled_verdict(
        lambda weights: margin(weights) > 0,
        units.count,
        units.unit,
        "the smaller change (1 - cosine) of the last two layers minus the largest of the "
        f"other layers: {observed:+.3g}",
        effect=margin,
    )


def draw_cosine_heads(study: StudyRecord, path: Path) -> Path:
    """Per-head cosine grids (mean over seeds), a panel per task on one colour scale, saved at ``path``
    (PNG, with a PDF beside it); returns ``path``."""
    tasks = study["tasks"]
    grids = {task: np.asarray(cosine_part(entry)["cosine"]["per_head"]["mean"]) for task, entry in tasks.items()}
    low, high = min(g.min() for g in grids.values()), max(g.max() for g in grids.values())
    figure, panels = panels_for(len(grids), columns=3, layout="constrained")
    for axes, (task, grid) in zip(panels, grids.items()):
        image = axes.imshow(grid, aspect="auto", vmin=low, vmax=high, cmap="viridis")
        layers, heads = grid.shape
        style_head_axes(axes, layers, heads, task, tick_size=6)
    figure.colorbar(image, ax=panels, label="cosine, pre-trained vs fine-tuned")
    suptitle(figure, study_title(study, "Per-head cosine similarity of the attention maps per task"))
    return save(figure, path)


def draw_cosine_layers(study: StudyRecord, path: Path) -> Path:
    """Per-layer cosine, a line per task with a band of ±1 s.d. over seeds, and dashed, the cosine
    between two seeds' fine-tuned maps (mean over pairs of seeds), the yardstick each change is
    read against; saved at ``path`` (PNG, with a PDF beside it); returns ``path``."""
    figure, axes = plt.subplots(figsize=(5.4, 3.6), layout="constrained")
    for index, (task, entry) in enumerate(study["tasks"].items()):
        per_layer = cosine_part(entry)["cosine"]["per_layer"]
        mean, std = np.asarray(per_layer["mean"]), np.asarray(per_layer["std"])
        layers = np.arange(1, len(mean) + 1)
        axes.plot(layers, mean, marker="o", color=task_colour(index), label=task)
        axes.fill_between(layers, mean - std, mean + std, color=task_colour(index), alpha=0.2, linewidth=0)
        if "between_seeds" in entry:
            axes.plot(layers, entry["between_seeds"]["per_layer"]["mean"], linestyle="--", color=task_colour(index))
        axes.set_xticks(layers)
    if any("between_seeds" in entry for entry in study["tasks"].values()):
        axes.plot([], [], linestyle="--", color="grey", label="between seeds")
    axes.set_xlabel("layer")
    axes.set_ylabel("cosine (band: ±1 s.d. over seeds)")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8, ncols=2)
    suptitle(
        figure,
        study_title(study, "Cosine per layer: pre-trained vs fine-tuned (solid), two seeds' fine-tunings (dashed)"),
    )
    return save(figure, path)


def cells(per_layer: Elementwise) -> list[str]:
    """A spread per layer as table cells: ``0.912 ± 0.004``."""
    return [f"{mean:.3f} ± {std:.3f}" for mean, std in zip(per_layer["mean"], per_layer["std"])]


CosineEntry = Entry[CosineResult]


@register_view
class CosineView(View[CosineResult]):
    name = "cosine"
    order = 20
    along_by_default = True  # the study's findings on when attention changes read it
    version = 3
    stored = CosineResult
    per_head_keys = {"per_head_std": "std"}
    claims = {
        "last_layers_change_most": Claim(
            "the last two layers change most (the two lowest per-layer cosines)", last_layers_change_most
        )
    }
    papers = {
        "last_layers_change_most": PaperPoint(
            "Kovaleva et al. 2019, Fig. 5",
            "the last two layers of bert-base-uncased change most on every task but QQP "
            "(a study without QQP cannot check that exception)",
            expected_for(tuple(task for task in KOVALEVA_TASKS if task != "qqp")),
        )
    }
    overview_reads = (ClusteringView.name,)
    to_final = True

    @classmethod
    def timed_units(cls, entry: CosineEntry) -> StoredUnits:
        """The first pair's per-example sums of the cosine per layer, which the findings on when the
        maps change resample."""
        return per_pair_results(entry)[MAIN_PAIR]["units"]

    @classmethod
    def along_layers(cls, metric: Metric) -> bool:
        """The first pair's cosine per layer (``cosine_layer_2``)."""
        return metric.layer is not None and not metric.pair_said

    @classmethod
    def metrics(cls, entry: CosineEntry) -> list[Metric]:
        """Per pair, the mean cosine per layer, over all heads, and over the last two layers (the
        first pair's names leave the pair unsaid: ``cosine_mean``)."""
        out = []
        for index, (pair, stats) in enumerate(zip(entry["pairs"], per_pair_results(entry).values())):
            cosine = Metric(cls.name, "cosine", pair=(pair[0], pair[1]), pair_said=index > 0)
            out += [replace(cosine, layer=layer, value=value) for layer, value in enumerate(stats["per_layer"], 1)]
            out += [
                replace(cosine, detail=SUMMED[0], value=fmean(stats["per_layer"])),
                replace(cosine, detail=SUMMED[1], value=fmean(stats["per_layer"][-LAST_LAYERS:])),
            ]
        return out

    @classmethod
    def headline(cls, entry: CosineEntry, metrics: list[Metric]) -> list[Metric]:
        """The first pair's mean cosine over all heads and over the last two layers."""
        return [metric for detail in SUMMED for metric in metrics if not metric.pair_said and metric.detail == detail]

    @classmethod
    def draw(cls, entry: CosineEntry, run: RunSection, out_dir: Path) -> list[Path]:
        pairs = per_pair_results(entry)
        paths = []
        for index, ((before, after), stats) in enumerate(zip(entry["pairs"], pairs.values())):
            suffix = "" if index == 0 else f"_{before}_{after}"
            paths.append(
                draw_head_grid(
                    stats["per_head"],
                    out_dir / f"cosine_per_head{suffix}.png",
                    title=f"{run_title(run)}: {checkpoint_title(before)} vs {checkpoint_title(after)} attention",
                    colorbar_label="cosine similarity (mean over examples)",
                    vmax=1.0,
                )
            )
        series = {
            f"{checkpoint_title(before)} vs {checkpoint_title(after)}": stats["per_layer"]
            for (before, after), stats in zip(entry["pairs"], pairs.values())
        }
        paths.append(
            draw_layer_lines(
                series,
                out_dir / "cosine_per_layer.png",
                title=f"{run_title(run)}: attention similarity per layer",
                ylabel="mean cosine similarity",
            )
        )
        return paths

    @classmethod
    def printed(cls, entry: CosineEntry) -> list[str]:
        return [
            f"cosine per layer ({pair}): " + " ".join(f"{v:.3f}" for v in stats["per_layer"])
            for pair, stats in per_pair_results(entry).items()
        ]

    @classmethod
    def overview_rows(cls, entries: dict[str, AnyEntry], run: RunSection) -> list[Row]:
        """The per-layer cosines and the head that changed most (with the clustering's largest
        Jensen-Shannon distance between the two versions of a head, when the run has it)."""
        stats = next(iter(per_pair_results(entries[cls.name]).values()))
        head = most_changed(stats["per_head"])
        changed = f"{head['layer']}-{head['head']} (cosine {head['value']:.3f})"
        if ClusteringView.name in entries:
            clustering = per_pair_results(entries[ClusteringView.name])
            distances = np.asarray(next(iter(clustering.values()))["between_versions"])
            layer, index = np.unravel_index(distances.argmax(), distances.shape)
            changed += f"; largest Jensen-Shannon distance: {layer + 1}-{index + 1}"
        return [
            (
                f"cosine similarity per layer 1..{len(stats['per_layer'])}",
                "",
                " ".join(f"{v:.3f}" for v in stats["per_layer"]),
                "last two layers change most",
            ),
            ("head that changed most", "", changed, ""),
        ]

    @classmethod
    def across_seeds(cls, entries: list[CosineEntry]) -> CosineAcrossSeeds:
        """The pre-trained vs fine-tuned cosine per layer and per head, mean and spread over seeds."""
        pair = [per_pair_results(entry)[MAIN_PAIR] for entry in entries]
        return {
            "cosine": {
                "per_layer": elementwise([p["per_layer"] for p in pair]),
                "per_head": elementwise([p["per_head"] for p in pair]),
            }
        }

    @classmethod
    def study_tables(cls, study: StudyRecord) -> dict[str, str]:
        """The cosine per layer and task, mean ± s.d. over seeds (Kovaleva et al.'s Figure 5 as numbers),
        and under each task with two seeds or more, the cosine between two seeds' fine-tuned maps
        (mean ± s.d. over pairs of seeds): what the seed alone changes."""
        tasks = study["tasks"]
        if not tasks or not all("cosine" in entry for entry in tasks.values()):
            return {}
        layers = max(len(cosine_part(entry)["cosine"]["per_layer"]["mean"]) for entry in tasks.values())
        rows = []
        for task, entry in tasks.items():
            rows.append([task, "pre-trained vs fine-tuned", *cells(cosine_part(entry)["cosine"]["per_layer"])])
            if "between_seeds" in entry:
                rows.append(
                    [
                        task,
                        f"between seeds ({entry['between_seeds']['per_layer']['n']} pairs)",
                        *cells(entry["between_seeds"]["per_layer"]),
                    ]
                )
        return {
            "cosine_per_layer_by_task": markdown_table(
                ["task", "compared", *(f"layer {n}" for n in range(1, layers + 1))],
                [row + ["-"] * (layers + 2 - len(row)) for row in rows],
            )
        }

    @classmethod
    def draw_study(cls, study: StudyRecord, out_dir: Path) -> list[Path]:
        """Kovaleva et al.'s Figure 5 per task: the per-head cosine grids, and the per-layer lines."""
        tasks = study["tasks"].values()
        if not tasks or not all("cosine" in entry for entry in tasks):
            return []
        return [
            draw_cosine_heads(study, out_dir / "cosine_per_head_by_task.png"),
            draw_cosine_layers(study, out_dir / "cosine_per_layer_by_task.png"),
        ]
