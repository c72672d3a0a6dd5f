"""When things change along fine-tuning: half-way points, and the statements on their order judged on
resamples, on hand-made series whose order is clear, reversed or noise by construction."""

from __future__ import annotations

import numpy as np

from harness.views.evidence import UnitSums
from harness.views.trajectory import EARLY, cosine_before_dev, half_way, share_early, study_series
from tasks.metrics import metric_rows

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
        [summary(0.9, 0.6), summary(0.8, 0.8)], {"last": "cosine_layer_2", "dev": "dev_accuracy_finetuned"}
    )
    assert found["fractions"] == [0.0, 0.1, 1.0]
    assert np.allclose(found["series"]["last"]["mean"][:2], [1.0, 0.85])  # the pre-trained maps against themselves: 1
    assert found["series"]["dev"]["mean"][0] is None  # no pre-trained score in these summaries
    assert round(found["series"]["dev"]["std"][1], 3) == 0.141
