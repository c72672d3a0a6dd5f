"""When attention changes: a run's metrics along its fine-tuning, and the study's findings on the order.

A run with ``--trajectory`` holds, under ``summary["trajectory"]``, a point per checkpoint kept
part-way through fine-tuning (`harness.run.trajectory`): its step, the metrics every view
gives of it beside the pre-trained model (the run's own names), its cosine to the final model,
and the per-unit sums the findings below resample. Here they become series over the training
steps (the pre-trained model at step 0 where a metric has a pre-trained value, the run's own
metrics at the last step), figures (the per-layer cosine to the pre-trained maps, one line a
layer, with the dev score on a second axis; the pattern shares), a table, printed lines, and a
study's series over seeds, aligned by the fraction of training (the same steps for every seed
of a task).

The findings say *when*: a quantity's half-way point is the first step at which it has made
half of its change from the pre-trained model to the end of fine-tuning. Each is judged per
seed on bootstrap resamples of the dev examples (`harness.views.evidence.resampled_verdict`):
the quantities are computed again on each resample, and the statement holds clearly when it
holds on 97.5% of them (Hao et al. 2020 and Merchant et al. 2020 read such orders off single
curves).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

import numpy as np

from harness.results.checkpoints import FINETUNED, PRETRAINED
from harness.results.run_record import RunSummary, TrajectoryPoint
from harness.results.study_record import StudyRecord, StudySeries, StudyTrajectory
from harness.views.across_tasks import study_title, task_colour
from harness.views.cosine import CosineView
from harness.views.evaluation import MAJORITY, EvaluationView
from harness.views.evidence import RESAMPLES, SEED, StoredUnits, UnitSums, Verdict, resampled_verdict
from harness.views.lazy import mpl
from harness.views.markdown import markdown_table
from harness.views.metrics import Metric
from harness.views.palette import CHECKPOINT_COLOURS, GREY
from harness.views.patterns import PatternsView, share
from harness.views.saving import figure_checks, plt, save
from harness.views.summary import summary_metrics
from harness.views.titles import run_title, suptitle

TO_FINAL: Final = "to_final"  # each point's comparison with the fine-tuned model (the cosine to the final maps)

PATTERN_CLASSES = ("vertical", "diagonal", "vertical_diagonal", "block", "heterogeneous")
EARLY = 0.1  # "in the first 10% of training"
Series = dict[str, list[float | None]]  # {metric: its value at each step, None where it has none}
# The analyses whose units (`harness.views.base.View.timed_units`) the findings on when things change read
COSINE, DEV, PATTERNS = CosineView.name, EvaluationView.name, PatternsView.name


def points_of(summary: RunSummary) -> list[TrajectoryPoint]:
    """The trajectory's points of a run's summary, earliest first (none without ``--trajectory``)."""
    return summary.get("trajectory", {}).get("points", [])


def steps_of(summary: RunSummary) -> list[int]:
    """The training steps the series are at: 0 (the pre-trained model), each point's, the last."""
    trajectory = summary["trajectory"]
    return [0, *(point["step"] for point in trajectory["points"]), trajectory["of_steps"]]


def cosine_layer(layer: int) -> Metric:
    """The cosine to the pre-trained maps at ``layer`` (the first pair's: ``cosine_layer_2``), without its value."""
    return Metric(COSINE, COSINE, pair=(PRETRAINED, FINETUNED), pair_said=False, layer=layer)


def dev_score(score: tuple[str, str], reference: str | None = None) -> Metric:
    """The fine-tuned checkpoint's main dev score (``dev_accuracy_finetuned``), or the ``reference``'s
    in its place (``dev_accuracy_majority``), without its value; ``score``: its split and metric
    (`EvaluationView.main_score`)."""
    return Metric(DEV, "_".join(score), checkpoint=None if reference else FINETUNED, reference=reference)


def series(summary: RunSummary, metrics: dict[str, float], keys: list[Metric]) -> Series:
    """Each of ``keys`` (metrics without their values) over `steps_of`, by name: its pre-trained
    value at step 0 (the same record's of the pre-trained checkpoint; a cosine to the pre-trained
    maps is 1 there; None where there is none), each point's, the run's own."""
    points = points_of(summary)
    found = {}
    for key in keys:
        name = key.name
        start = (
            1.0
            if key.analysis == COSINE and key.layer is not None
            else metrics.get(replace(key, checkpoint=PRETRAINED).name)
            if key.checkpoint == FINETUNED
            else None
        )
        found[name] = [start, *(point["metrics"].get(name) for point in points), metrics.get(name)]
    return found


def gaps(values: list[float | None]) -> np.ndarray:
    """A series as matplotlib draws it: each None a NaN, a gap in its line."""
    return np.array(values, dtype=float)


def score_label(score: tuple[str, str]) -> str:
    """The task's main dev metric as a reader says it, from its split and metric: ``dev accuracy``,
    ``validation pearson``, ``dev_matched accuracy``."""
    return " ".join(score)


def layer_keys(metrics: dict[str, float]) -> list[Metric]:
    """The cosine to the pre-trained maps of each layer that a run's metrics have (`cosine_layer`), in layer order."""
    keys: list[Metric] = []
    while (key := cosine_layer(len(keys) + 1)).name in metrics:
        keys.append(key)
    return keys


def layer_names(metrics: dict[str, float]) -> list[str]:
    """``cosine_layer_1`` ... of a run's metrics, in layer order."""
    return [key.name for key in layer_keys(metrics)]


def draw_run(summary: RunSummary, metrics: dict[str, float], score: tuple[str, str], out_dir: Path) -> list[Path]:
    """The run's trajectory figures: the per-layer cosine to the pre-trained maps over the training
    steps above the dev score over the same steps, the per-layer cosine at each step, and the
    pattern shares over the steps."""
    steps = steps_of(summary)
    paths = []
    if layer_keys(metrics):
        paths += draw_cosine_and_score(summary, metrics, score, out_dir)
        paths.append(draw_cosine_by_step(summary, metrics, out_dir))
    shares = series(summary, metrics, [share(name, FINETUNED) for name in PATTERN_CLASSES])
    if any(value is not None for values in shares.values() for value in values):
        figure, axes = plt.subplots(figsize=(6, 3.6))
        for index, (name, values) in enumerate(zip(PATTERN_CLASSES, shares.values())):
            axes.plot(steps, gaps(values), marker="o", color=task_colour(index), label=name)
        axes.set_xlabel("training step")
        axes.set_ylabel("share of attention maps")
        axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        axes.grid(alpha=0.3)
        suptitle(figure, f"{run_title(summary['run'])}: attention patterns along fine-tuning")
        paths.append(save(figure, out_dir / "trajectory_patterns.png"))
    return paths


def layer_colours(count: int) -> list[tuple[float, ...]]:
    """One colour per layer along viridis, lowest layer darkest: the layers' order read off the
    colour, and none the dev score's (the fine-tuned checkpoint's vermillion) or black."""
    return [plt.get_cmap("viridis")(index / max(count - 1, 1) * 0.9) for index in range(count)]


def draw_cosine_and_score(
    summary: RunSummary, metrics: dict[str, float], score: tuple[str, str], out_dir: Path
) -> list[Path]:
    """Two panels over the training steps: each layer's cosine to the pre-trained maps (a line a
    layer, the legend beside the panel), and below it the fine-tuned model's dev score with its
    baseline: the score never shares a panel, a colour or a line style with a layer."""
    steps = steps_of(summary)
    label = score_label(score)
    (dev,) = series(summary, metrics, [dev_score(score)]).values()
    keys = layer_keys(metrics)
    layers = series(summary, metrics, keys)
    figure, (axes, score_axes) = plt.subplots(
        2, 1, figsize=(6.4, 4.8), sharex=True, gridspec_kw={"height_ratios": [3, 2]}
    )
    for colour, key, values in zip(layer_colours(len(layers)), keys, layers.values()):
        axes.plot(steps, gaps(values), marker="o", markersize=3.5, color=colour, label=f"layer {key.layer}")
    axes.set_ylabel("cosine to the\npre-trained maps")
    axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), title="layer lines", title_fontsize=7)
    score_axes.plot(
        steps, gaps(dev), color=CHECKPOINT_COLOURS[FINETUNED], marker="s", linewidth=2, label=f"fine-tuned, {label}"
    )
    baseline = metrics.get(dev_score(score, MAJORITY).name)
    if baseline is not None:
        score_axes.axhline(baseline, color=GREY, linestyle=":", linewidth=1.2, label="majority class")
    score_axes.set_ylabel(label)
    score_axes.set_xlabel("training step (0: the pre-trained model)")
    score_axes.xaxis.set_major_locator(mpl.ticker.MaxNLocator(integer=True))
    score_axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    for panel in (axes, score_axes):
        panel.grid(alpha=0.3)
    suptitle(figure, f"{run_title(summary['run'])}: attention per layer and the dev score along fine-tuning")
    return [save(figure, out_dir / "trajectory_cosine_per_layer.png")]


def draw_cosine_by_step(summary: RunSummary, metrics: dict[str, float], out_dir: Path) -> Path:
    """Every layer's cosine to the pre-trained maps at each kept step and at the end: a line a
    step, over the layers (one chart of all layers per step)."""
    names = layer_names(metrics)
    points = points_of(summary)
    of_steps = summary["trajectory"]["of_steps"]
    rows = [(f"step {point['step']} of {of_steps}", [point["metrics"].get(name) for name in names]) for point in points]
    rows.append((f"step {of_steps} (the fine-tuned model)", [metrics.get(name) for name in names]))
    figure, axes = plt.subplots(figsize=(6.4, 3.6))
    for colour, (label, values) in zip(layer_colours(len(rows)), rows):
        axes.plot(range(1, len(names) + 1), gaps(values), marker="o", markersize=3.5, color=colour, label=label)
    axes.set_xlabel("layer")
    axes.xaxis.set_major_locator(mpl.ticker.MaxNLocator(integer=True))
    axes.set_ylabel("cosine to the pre-trained maps")
    axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), title="training step", title_fontsize=7)
    axes.grid(alpha=0.3)
    suptitle(figure, f"{run_title(summary['run'])}: each layer's attention at each kept step")
    return save(figure, out_dir / "trajectory_cosine_by_step.png")


def step_charts(summary: RunSummary, metrics: dict[str, float] | None = None) -> dict[int, np.ndarray]:
    """Per kept step and at the last, one chart of every layer's cosine to the pre-trained maps at
    that step (the fine-tuned model's drawn behind in grey), as an RGB array: what MLflow shows
    with a slider over the steps (`harness.run.tracking.Tracker.log_images_once`); ``metrics``: the
    run's own (default: its summary's)."""
    metrics = summary_metrics(summary) if metrics is None else metrics
    names = layer_names(metrics)
    if not names or not points_of(summary):
        return {}
    of_steps = summary["trajectory"]["of_steps"]
    final = [metrics.get(name, np.nan) for name in names]
    charts = {}
    for step, values in [
        *((point["step"], [point["metrics"].get(name, np.nan) for name in names]) for point in points_of(summary)),
        (of_steps, final),
    ]:
        figure, axes = plt.subplots(figsize=(4.8, 3.0), dpi=100)
        positions = np.arange(1, len(names) + 1)
        axes.bar(positions, final, width=0.8, color=GREY, alpha=0.35, label="the fine-tuned model")
        axes.bar(positions, values, width=0.5, color=CHECKPOINT_COLOURS[FINETUNED], label=f"step {step}")
        axes.set_ylim(min(0.0, np.nanmin([*values, *final])), 1.0)
        axes.set_xticks(positions)
        axes.set_xlabel("layer")
        axes.set_ylabel("cosine to the pre-trained maps")
        axes.set_title(f"{run_title(summary['run'])}: step {step} of {of_steps}", fontsize=8)
        axes.legend(fontsize=7, loc="lower left")
        figure.tight_layout()
        figure.canvas.draw()
        charts[step] = np.asarray(figure_checks.agg_canvas(figure).buffer_rgba())[..., :3].copy()
        plt.close(figure)
    return charts


def run_table(summary: RunSummary, metrics: dict[str, float], score: tuple[str, str]) -> str:
    """The dev score, the per-layer cosine to the pre-trained maps and the last layer's cosine to
    the final model at each step."""
    steps = steps_of(summary)
    keys = layer_keys(metrics)
    layers = [key.name for key in keys]
    found = series(summary, metrics, [dev_score(score), *keys])
    to_final = [None, *(point[TO_FINAL].get(layers[-1]) for point in points_of(summary)), 1.0]
    rows = [
        [
            str(step),
            f"{step / steps[-1]:.0%}",
            *("-" if values[index] is None else f"{values[index]:.3f}" for values in found.values()),
            "-" if to_final[index] is None else f"{to_final[index]:.3f}",
        ]
        for index, step in enumerate(steps)
    ]
    return (
        f"# {run_title(summary['run'])}: along fine-tuning (step 0: the pre-trained model, its head untrained)\n\n"
        + markdown_table(
            [
                "step",
                "of training",
                score_label(score),
                *(f"cosine, layer {key.layer}" for key in keys),
                "last layer: cosine to the final maps",
            ],
            rows,
        )
    )


def printed(summary: RunSummary, metrics: dict[str, float], score: tuple[str, str]) -> list[str]:
    """One line per point: its step, dev score and per-layer cosine to the pre-trained maps."""
    return [
        f"trajectory step {point['step']} ({point['step'] / summary['trajectory']['of_steps']:.0%}): "
        f"{score_label(score)} {point['metrics'].get(dev_score(score).name, float('nan')):.3f}; "
        "cosine per layer "
        + " ".join(f"{point['metrics'][name]:.3f}" for name in layer_names(metrics) if name in point["metrics"])
        for point in points_of(summary)
    ]


def half_way(values: np.ndarray, start: float | np.ndarray) -> np.ndarray:
    """Per row of ``values`` (R, points; the last point is the end), the index of the first point
    that has made half the change from ``start`` to the end (the end's index when none before)."""
    start = np.asarray(start, dtype=float).reshape(-1, 1) if np.ndim(start) else np.full((len(values), 1), start)
    change = values - start
    reached = np.abs(change) >= np.abs(change[:, -1:]) / 2
    reached &= np.sign(change) == np.sign(change[:, -1:])
    reached[:, -1] = True
    return reached.argmax(axis=1)


def cosine_series(points: list[TrajectoryPoint], final_units: StoredUnits, weights: np.ndarray) -> np.ndarray:
    """The last layer's cosine to the pre-trained maps at each point and at the end, on each row of
    unit ``weights``: (R, points + 1)."""
    units = [UnitSums.read(point["units"][COSINE]) for point in points] + [UnitSums.read(final_units)]
    return np.stack([sums.ratios(weights)[:, -1] for sums in units], axis=1)


def score_series(
    predictions: list[list[float]],
    labels: np.ndarray,
    metric: str,
    score: Callable[[str, np.ndarray, np.ndarray], np.ndarray],
) -> np.ndarray:
    """The dev score of each checkpoint's ``predictions`` on the same bootstrap resamples of the
    examples (indices drawn as `resample_weights` draws counts): (R, checkpoints)."""
    rows = np.random.default_rng(SEED + 1).integers(0, len(labels), (RESAMPLES, len(labels)))
    everything = np.arange(len(labels))[None]
    return np.stack(
        [
            np.stack(
                [
                    score(metric, np.asarray(p)[None, chosen], labels[chosen])[0]
                    for chosen in np.concatenate([everything, rows])
                ]
            )
            for p in predictions
        ],
        axis=1,
    )


def cosine_before_dev(
    points: list[TrajectoryPoint],
    final: dict[str, Any],  # the cosine's StoredUnits under its view's name beside predictions, labels, majority
    split: str,
    metric: str,
    score: Callable[[str, np.ndarray, np.ndarray], np.ndarray],
) -> Verdict | None:
    """Whether the last layer's cosine makes half its change before the dev score makes half its gain
    over the majority class, both half-way points found again on each resample (the cosine's of
    the task sample, the score's of the dev split's predictions); ``final``: the run's own cosine
    units, dev predictions, labels and majority score. None when a point lacks either, or the
    final model is not above the majority class."""
    if not points or any(COSINE not in point["units"] or DEV not in point["units"] for point in points):
        return None
    labels = np.asarray(final["labels"])
    predictions = [point["units"][DEV]["predictions"][split] for point in points] + [final["predictions"]]
    scores = score_series(predictions, labels, metric, score)
    if scores[0, -1] <= final["majority"]:
        return None
    count = UnitSums.read(final[COSINE]).count

    def holds(weights: np.ndarray) -> np.ndarray:
        cosine = half_way(cosine_series(points, final[COSINE], weights), 1.0)
        dev = half_way(scores[:1] if len(weights) == 1 else scores[1 : len(weights) + 1], final["majority"])
        return cosine < dev

    return resampled_verdict(
        holds,
        count,
        "dev examples",
        "the step at which the last layer's cosine to the pre-trained maps has made half its "
        "change, before the step at which the dev score has made half its gain over the majority "
        "class",
    )


def share_early(
    points: list[TrajectoryPoint],
    final_units: StoredUnits,
    pretrained_units: StoredUnits,
    name: str,
    early_points: int,
) -> Verdict | None:
    """Whether the share of ``name`` maps has made half its change by the last point within the
    first `EARLY` of training (``early_points`` of the points are), on each resample of the examples."""
    if not early_points or any(FINETUNED not in point["units"].get(PATTERNS, {}) for point in points):
        return None
    column = PATTERN_CLASSES.index(name)
    start = UnitSums.read(pretrained_units)
    units = [UnitSums.read(point["units"][PATTERNS][FINETUNED]) for point in points] + [UnitSums.read(final_units)]

    def holds(weights: np.ndarray) -> np.ndarray:
        shares = np.stack([sums.ratios(weights)[:, column] for sums in units], axis=1)
        return half_way(shares, start.ratios(weights)[:, column]) < early_points

    return resampled_verdict(
        holds, start.count, start.unit, f"the {name} share's half-way point within the first {EARLY:.0%} of training"
    )


def study_series(summaries: list[RunSummary], named: dict[str, Metric]) -> StudyTrajectory:
    """Over a task's seeds (their summaries, aligned by the fraction of training: the same steps for
    every seed), each metric of ``named`` (``{key: metric without its value}``) at each fraction: mean and spread."""
    fractions = [step / steps_of(summaries[0])[-1] for step in steps_of(summaries[0])]
    found: dict[str, StudySeries] = {}
    for key, metric in named.items():
        grid = np.array(
            [
                [
                    np.nan if value is None else value
                    for value in series(summary, summary_metrics(summary), [metric])[metric.name]
                ]
                for summary in summaries
            ],
            dtype=float,
        )
        if not np.isnan(grid).all():
            seeds = (~np.isnan(grid)).sum(axis=0)
            mean = np.nansum(grid, axis=0) / np.maximum(seeds, 1)
            spread = np.sqrt(np.nansum((grid - mean) ** 2, axis=0) / np.maximum(seeds - 1, 1))
            found[key] = {
                "mean": [float(m) if n else None for m, n in zip(mean, seeds)],
                "std": [float(d) if n else None for d, n in zip(spread, seeds)],
                "n": len(grid),
            }
    return {"fractions": fractions, "series": found}


def draw_study(study: StudyRecord, out_dir: Path) -> list[Path]:
    """The last layer's cosine to the pre-trained maps and the dev score over the fraction of
    training, per task (mean over seeds, band ±1 s.d.): what changes first."""
    tasks: dict[str, StudyTrajectory] = {
        task: entry["trajectory"] for task, entry in study["tasks"].items() if "trajectory" in entry
    }
    if not tasks:
        return []
    figure, (cosine_axes, dev_axes) = plt.subplots(1, 2, figsize=(9, 3.6))
    for index, (task, found) in enumerate(tasks.items()):
        fractions = np.asarray(found["fractions"])
        for axes, key in ((cosine_axes, "last_layer_cosine"), (dev_axes, "dev_score")):
            if key in found["series"]:
                mean, std = (np.asarray(found["series"][key][k], dtype=float) for k in ("mean", "std"))
                axes.plot(fractions, mean, marker="o", color=task_colour(index), label=task)
                axes.fill_between(fractions, mean - std, mean + std, color=task_colour(index), alpha=0.2, linewidth=0)
    cosine_axes.set_ylabel("last layer: cosine to the pre-trained maps")
    dev_axes.set_ylabel("dev score (the task's main metric)")
    for axes in (cosine_axes, dev_axes):
        axes.set_xlabel("fraction of training")
        axes.set_xscale("symlog", linthresh=0.01)
        axes.grid(alpha=0.3)
    dev_axes.legend(fontsize=7)
    suptitle(figure, study_title(study, "Along fine-tuning: the last layer's attention and the dev score"))
    return [save(figure, out_dir / "trajectory_by_task.png")]
