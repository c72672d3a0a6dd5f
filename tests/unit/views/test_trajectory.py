"""When things change along fine-tuning: half-way points, and the statements on their order judged on
resamples, on hand-made series whose order is clear, reversed or noise by construction."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
from matplotlib.colors import to_hex

from harness.results.checkpoints import FINETUNED
from harness.views import trajectory as trajectory_view
from harness.views.cosine import CosineView
from harness.views.evaluation import MAJORITY, EvaluationView
from harness.views.evidence import UnitSums
from harness.views.palette import CHECKPOINT_COLOURS
from harness.views.summary import summary_metrics, summary_records
from harness.views.trajectory import (
    EARLY,
    cosine_before_dev,
    cosine_layer,
    dev_score,
    half_way,
    score_label,
    share_early,
    study_series,
)
from tasks.metrics import metric_rows

DATA = Path(__file__).resolve().parents[2] / "data"

UNITS = 300


def test_the_half_way_point_is_the_first_to_make_half_the_change_the_way_it_ends():
    values = np.array(
        [
            [0.9, 0.6, 0.5, 0.4],  # falls from 1 to 0.4: half (0.7) first reached at index 1
            [1.0, 1.0, 0.95, 0.8],  # half (0.9) reached at the end only
            [1.2, 0.7, 0.6, 0.6],
        ]
    )  # overshoots the other way first: index 1 is the first half-way
    assert half_way(values, 1.0).tolist() == [1, 3, 1]
    assert half_way(np.array([[0.5, 0.8, 0.9]]), np.array([0.4])).tolist() == [1]  # a rise, its own start


def cosine_units(last_layer: float, seed: int) -> dict:
    """Each example's mean cosine per layer (two layers), the last around ``last_layer``."""
    noise = np.random.default_rng(seed).normal(0, 0.01, (UNITS, 2))
    return UnitSums.of(np.clip(np.array([1.0, last_layer]) + noise, -1, 1), np.ones(UNITS), "dev examples").stored()


def predictions(accuracy: float, seed: int) -> list[int]:
    """Predictions of all-ones labels, right on a share ``accuracy`` of them."""
    return (np.random.default_rng(seed).random(UNITS) < accuracy).astype(int).tolist()


def trajectory(cosines: list[float], accuracies: list[float]) -> tuple[list[dict], dict]:
    points = [
        {
            "units": {
                "cosine": cosine_units(cosine, index),
                "evaluation": {"predictions": {"dev": predictions(accuracy, index)}},
            }
        }
        for index, (cosine, accuracy) in enumerate(zip(cosines[:-1], accuracies[:-1]))
    ]
    final = {
        "cosine": cosine_units(cosines[-1], 99),
        "predictions": predictions(accuracies[-1], 99),
        "labels": [1] * UNITS,
        "majority": 0.5,
    }
    return points, final


def test_attention_before_learning_holds_when_the_cosine_moves_first_and_fails_when_the_score_does():
    first = cosine_before_dev(
        *trajectory([0.6, 0.55, 0.5, 0.5], [0.5, 0.52, 0.9, 0.95]), "dev", "accuracy", metric_rows
    )
    assert first["verdict"] == "holds" and first["holds"] and first["support"] >= 0.975
    assert first["unit"] == "dev examples" and first["n"] == UNITS
    later = cosine_before_dev(
        *trajectory([1.0, 0.99, 0.6, 0.5], [0.9, 0.92, 0.95, 0.95]), "dev", "accuracy", metric_rows
    )
    assert later["verdict"] == "fails"
    unlearned = trajectory([0.6, 0.55, 0.5, 0.5], [0.5, 0.5, 0.5, 0.45])
    assert cosine_before_dev(*unlearned, "dev", "accuracy", metric_rows) is None  # no gain to be half-way through


def pattern_units(heterogeneous: float, seed: int) -> dict:
    """Per example, of 20 heads, how many are of each class; ``heterogeneous`` the last class's rate."""
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(20, [(1 - heterogeneous) / 4] * 4 + [heterogeneous], UNITS)
    return UnitSums.of(counts, np.full(UNITS, 20.0), "dev examples").stored()


def test_a_share_that_moves_within_the_first_tenth_of_training_is_early_and_one_that_moves_late_is_not():
    def points(shares: list[float]) -> list[dict]:
        return [
            {"units": {"patterns": {"finetuned": pattern_units(share, index)}}} for index, share in enumerate(shares)
        ]

    early = share_early(points([0.28, 0.3]), pattern_units(0.3, 9), pattern_units(0.1, 8), "heterogeneous", 1)
    assert early["verdict"] == "holds" and str(int(EARLY * 100)) in early["statistic"]
    late = share_early(points([0.11, 0.29]), pattern_units(0.3, 9), pattern_units(0.1, 8), "heterogeneous", 1)
    assert late["verdict"] == "fails"
    assert share_early(points([0.2]), pattern_units(0.3, 9), pattern_units(0.1, 8), "heterogeneous", 0) is None


def test_a_tasks_seeds_are_aligned_by_the_fraction_of_training_with_their_spread():
    def summary(cosine: float, score: float) -> dict:
        return {
            "trajectory": {
                "of_steps": 100,
                "points": [{"step": 10, "metrics": {"cosine_layer_2": cosine, "dev_accuracy_finetuned": score}}],
            },
            "analyses": {},
        }

    found = study_series(
        [summary(0.9, 0.6), summary(0.8, 0.8)], {"last": cosine_layer(2), "dev": dev_score(("dev", "accuracy"))}
    )
    assert found["fractions"] == [0.0, 0.1, 1.0]
    assert np.allclose(found["series"]["last"]["mean"][:2], [1.0, 0.85])  # the pre-trained maps against themselves: 1
    assert found["series"]["dev"]["mean"][0] is None  # no pre-trained score in these summaries
    assert round(found["series"]["dev"]["std"][1], 3) == 0.141


def test_the_main_score_is_named_by_its_split_and_metric_whatever_the_split():
    assert score_label(("dev", "accuracy")) == "dev accuracy"
    assert score_label(("validation", "pearson")) == "validation pearson"
    assert score_label(("dev_matched", "accuracy")) == "dev_matched accuracy"
    assert score_label(("test", "macro_f1")) == "test macro_f1"
    assert dev_score(("dev_matched", "accuracy")).name == "dev_matched_accuracy_finetuned"


def along(steps: list[int], last: int) -> tuple[dict, dict]:
    """A run's summary kept at ``steps`` of ``last`` (two layers, a validation split) and its own metrics."""
    metrics = {
        "cosine_layer_1": 0.99,
        "cosine_layer_2": 0.6,
        "validation_accuracy_finetuned": 0.9,
        "validation_accuracy_pretrained": 0.5,
        "validation_accuracy_majority": 0.5,
    }
    points = [
        {
            "step": step,
            "metrics": {
                "cosine_layer_1": 1 - 0.01 * index,
                "cosine_layer_2": 1 - 0.2 * (index + 1),
                "validation_accuracy_finetuned": 0.5 + 0.1 * index,
            },
        }
        for index, step in enumerate(steps)
    ]
    return {"run": {"task": "mine", "model": "minilm"}, "trajectory": {"points": points, "of_steps": last}}, metrics


def test_the_dev_score_has_a_panel_and_colour_of_its_own_and_no_legend_covers_a_line(tmp_path, monkeypatch):
    """The dev score never looks like a layer's line (another panel, the fine-tuned checkpoint's
    colour, no layer's), each legend lies outside every panel, and a chart of every layer per step
    is drawn beside it."""
    drawn, saving = {}, trajectory_view.save

    def kept(figure, path):  # what the test reads of a figure before `save` writes and closes it
        figure.canvas.draw()
        drawn[path.name] = (figure, figure.canvas.get_renderer())
        return saving(figure, path)

    monkeypatch.setattr(trajectory_view, "save", kept)
    summary, metrics = along([10, 20], 40)
    paths = trajectory_view.draw_run(summary, metrics, ("validation", "accuracy"), tmp_path)
    assert {path.name for path in paths} >= {"trajectory_cosine_per_layer.png", "trajectory_cosine_by_step.png"}
    figure, renderer = drawn["trajectory_cosine_per_layer.png"]
    layers, score = figure.axes
    layer_colours = {to_hex(line.get_color()) for line in layers.get_lines()}
    dev, baseline = score.get_lines()
    assert to_hex(dev.get_color()) == CHECKPOINT_COLOURS[FINETUNED].lower()
    assert to_hex(dev.get_color()) not in layer_colours and dev.get_linestyle() == "-"
    assert baseline.get_label() == "majority class" and score.get_ylabel() == "validation accuracy"
    panels = [axes.get_window_extent(renderer) for axes in figure.axes]
    for axes in (layers, score):
        legend = axes.get_legend().get_window_extent(renderer)
        assert not any(legend.overlaps(panel) for panel in panels)
    by_step, _ = drawn["trajectory_cosine_by_step.png"]
    assert [line.get_label() for line in by_step.axes[0].get_lines()] == [
        "step 10 of 40",
        "step 20 of 40",
        "step 40 (the fine-tuned model)",
    ]


def test_a_chart_of_every_layer_is_made_for_each_kept_step_and_the_last():
    summary, metrics = along([10, 20], 40)
    charts = trajectory_view.step_charts(summary, metrics)
    assert sorted(charts) == [10, 20, 40] and all(chart.ndim == 3 and chart.shape[2] == 3 for chart in charts.values())
    assert not np.array_equal(charts[10], charts[40])


def test_the_series_are_named_by_the_views_own_records_not_by_editing_names():
    """The metrics along fine-tuning are records (`Metric`), each named as its view names it: the
    cosine per layer a run logs, the dev score and its majority class; a series' pre-trained start is
    the same record's of the pre-trained checkpoint, never a name with one word replaced."""
    summary = json.loads(gzip.decompress((DATA / "tiny_run_summary.json.gz").read_bytes()))
    metrics = summary_metrics(summary)
    cosine = [
        metric.name
        for metric in summary_records(summary)
        if metric.analysis == CosineView.name and CosineView.along_layers(metric)
    ]
    assert trajectory_view.layer_names(metrics) == cosine and len(cosine) == 2
    main = EvaluationView.main_score(summary["analyses"][EvaluationView.name])
    stem = EvaluationView.main_metric(summary["analyses"][EvaluationView.name])
    assert dev_score(main).name in metrics and dev_score(main, MAJORITY).name in metrics
    summary["trajectory"] = {"of_steps": 10, "points": [{"step": 5, "metrics": {}}]}
    (start, _, end) = trajectory_view.series(summary, metrics, [dev_score(main)])[dev_score(main).name]
    assert start == metrics[f"{stem}_pretrained"] and end == metrics[f"{stem}_finetuned"]
