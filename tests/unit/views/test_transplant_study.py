"""A study's figures and tables of the transplant and the representation change, from a study.json
alone: the score with each layer's attention transplanted beside each layer's change (attention
and representations, task inputs and running text), one panel per task, and the CKA by task with
the between-seeds yardstick."""

from __future__ import annotations

import logging

from harness.views.cka import CkaTextView, CkaView
from harness.views.saving import figure_formats
from harness.views.seeds import elementwise, spread
from harness.views.transplant import TransplantView


def task_entry(layers: int, offset: float) -> dict:
    """One task's aggregate over two seeds as the views' `across_seeds` keep it."""
    per_layer = lambda start, step: elementwise([[start + step * k for k in range(layers)]] * 2)  # noqa: E731
    return {
        "seeds": [42, 43],
        "cosine": {"per_layer": per_layer(0.98 - offset, -0.05)},
        "cka": {
            "tokens": per_layer(0.99 - offset, -0.04),
            "cls": per_layer(0.97, -0.1),
            "attention_cosine": per_layer(0.98, -0.05),
        },
        "cka_text": {
            "tokens": per_layer(0.995, -0.02),
            "cls": per_layer(0.99, -0.03),
            "attention_cosine": per_layer(0.99, -0.02),
        },
        "transplant": {
            "alone_score": per_layer(0.85, -0.02),
            "intact": spread([0.9, 0.9]),
            "majority": spread([0.5, 0.5]),
            "metric": "accuracy",
        },
        "between_seeds": {"cka": {"per_layer": per_layer(0.995, -0.01)}},
    }


def test_the_transplant_is_drawn_beside_each_layers_change_one_panel_per_task(tmp_path, caplog):
    study = {"model": "minilm", "tasks": {"rte": task_entry(6, 0.0), "sst2": task_entry(6, 0.02)}}
    with caplog.at_level(logging.WARNING, logger="harness.views.saving"), figure_formats(("png", "pdf")):
        paths = [
            *TransplantView.draw_study(study, tmp_path),
            *CkaView.draw_study(study, tmp_path),
            *CkaTextView.draw_study(study, tmp_path),
        ]
    assert not caplog.records, [record.getMessage() for record in caplog.records]  # layout, colours, wording
    assert {path.name for path in paths} == {
        "transplant_beside_change_by_task.png",
        "cka_per_layer_by_task.png",
        "cka_text_per_layer_by_task.png",
    }
    assert all(path.with_suffix(".pdf").is_file() for path in paths)
    table = TransplantView.study_tables(study)["transplant_by_task"]
    assert "| rte | 90.0 | 85.0 ± 0.0 | 83.0 ± 0.0 |" in table
    cka = CkaView.study_tables(study)["cka_per_layer_by_task"]
    assert "| sst2 | pre-trained vs fine-tuned | 0.970 ± 0.000 | 0.930 ± 0.000 |" in cka
    assert "| rte | between seeds (2 pairs) | 0.995 ± 0.000 |" in cka
    assert TransplantView.draw_study({"model": "minilm", "tasks": {"rte": {"seeds": [42]}}}, tmp_path) == []
