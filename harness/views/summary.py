"""What a whole run's summary says, gathered from each analysis's view: its scalar metrics
with their fine-tuned minus pre-trained changes, the headline among them, and the lines
printed at the end of a run."""

from __future__ import annotations

from harness.results.entries import AnyEntry
from harness.results.run_record import Analysed
from harness.views.base import ViewClass, current_entries
from harness.views.metrics import Metric, changes, defined, values


def view_metrics(view: ViewClass, entry: AnyEntry) -> list[Metric]:
    """A view's metrics of its entry that have a value, then their fine-tuned minus pre-trained `changes`."""
    metrics = defined(view.metrics(entry))
    return metrics + changes(metrics)


def summary_records(summary: Analysed) -> list[Metric]:
    """Every scalar of a stored summary as a record (`view_metrics` of each view, in analysis order)."""
    return [metric for view, entry in current_entries(summary).values() for metric in view_metrics(view, entry)]


def summary_metrics(summary: Analysed) -> dict[str, float]:
    """Every scalar of a stored summary, as MLflow metrics: ``{name: value}``."""
    return values(summary_records(summary))


def headline_records(summary: Analysed) -> list[Metric]:
    """The few metrics that answer the run's question (`View.headline`), in analysis order."""
    return [
        metric
        for view, entry in current_entries(summary).values()
        for metric in view.headline(entry, view_metrics(view, entry))
    ]


def headline_names(summary: Analysed) -> list[str]:
    """The names of `headline_records`."""
    return [metric.name for metric in headline_records(summary)]


def printed_lines(summary: Analysed) -> list[str]:
    """What each analysis of the run says in the terminal (`View.printed`), in analysis order."""
    return [line for view, entry in current_entries(summary).values() for line in view.printed(entry)]
