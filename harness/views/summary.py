"""What a whole run's summary says, gathered from each analysis's view: its scalar metrics
with their fine-tuned minus pre-trained changes, the headline among them, and the lines
printed at the end of a run."""

from __future__ import annotations

from typing import Any

from harness.results.checkpoints import FINETUNED, PRETRAINED
from harness.views.base import current_entries


def summary_metrics(summary: dict[str, Any]) -> dict[str, float]:
    """Every scalar of a stored summary, as MLflow metrics: each view's `View.metrics` and
    their fine-tuned minus pre-trained `changes`."""
    metrics = [(name, value) for view, entry in current_entries(summary).values()
               for name, value in view.metrics(entry) if value is not None]
    return dict(metrics + changes(metrics))


def headline_names(summary: dict[str, Any], metrics: dict[str, float]) -> list[str]:
    """The few of ``metrics`` that answer the run's question (`View.headline`), in analysis order."""
    return [name for view, _ in current_entries(summary).values() for name in view.headline(metrics)]


def changes(metrics: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """For each metric of the fine-tuned checkpoint that has a pre-trained counterpart, the
    difference fine-tuned minus pre-trained, named with ``change`` in place of ``finetuned``
    (``dev_accuracy_change``, ``pattern_change_vertical``): what MLflow's compare view lines up."""
    values = dict(metrics)
    return [(name.replace(FINETUNED, "change"), value - values[name.replace(FINETUNED, PRETRAINED)])
            for name, value in metrics if FINETUNED in name and name.replace(FINETUNED, PRETRAINED) in values]


def printed_lines(summary: dict[str, Any]) -> list[str]:
    """What each analysis of the run says in the terminal (`View.printed`), in analysis order."""
    return [line for view, entry in current_entries(summary).values() for line in view.printed(entry)]
