"""A metric as a record: one scalar a view reads from a stored result, with what it measures and whose it is.

Views give their scalars as `Metric`s (`harness.views.base.View.metrics`); MLflow, the child run
of each checkpoint, a study's spreads and the exported tables all take what they need from the
record's fields, and the name each of them shows is derived from those fields in one place
(`Metric.name`): the words of its ``statistic``, then whose value it is (its checkpoint, the
reference standing in a checkpoint's place, ``change`` for a fine-tuned minus pre-trained
difference, or the pair compared as ``before_to_after``), then its ``detail`` and its layer:
``syntax_finetuned_nsubj``, ``dev_accuracy_majority``, ``coref_all_change``, ``cosine_layer_2``,
``sinks_pretrained_to_finetuned_raw_share_cls_change``. Nothing reads a name back.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from harness.results.checkpoints import FINETUNED, PRETRAINED

CHANGE = "change"  # what a fine-tuned minus pre-trained difference says in its checkpoint's place
BOUNDS = ("low", "high")  # the ends of a 95% interval, as the names of their metrics say them


@dataclass(frozen=True)
class Metric:
    """One scalar of a view: ``value`` (None: undefined on this run, and not logged) of the
    ``statistic`` that ``analysis`` measured, with its ``detail`` and ``layer`` (1-based), and whose
    it is: a ``checkpoint``'s, a ``reference``'s (a baseline that is no checkpoint: the majority
    class, chance, a probe without attention), or a ``pair``'s (before, after), which is the
    fine-tuned minus pre-trained ``change`` of two checkpoints' records (`changes`) or what the
    analysis compared itself. ``pair_said`` is False where the name leaves the pair unsaid (the
    first pair of the cosine's names) or says it in the statistic's own words (``above_frozen-
    encoder_low_finetuned``). A record without its value names the metric: what a study keeps
    under that name is read with it."""

    analysis: str
    statistic: str
    detail: str = ""
    checkpoint: str | None = None
    pair: tuple[str, str] | None = None
    reference: str | None = None
    layer: int | None = None
    change: bool = False
    pair_said: bool = True
    value: float | None = None

    @property
    def owner(self) -> str:
        """Whose value the name says it is: the checkpoint or reference, ``change``, the pair as
        ``before_to_after``, or nothing."""
        if self.change:
            return CHANGE
        if self.pair is not None:
            return f"{self.pair[0]}_to_{self.pair[1]}" if self.pair_said else ""
        return self.checkpoint or self.reference or ""

    @property
    def name(self) -> str:
        """Its name in MLflow, a study and the exported tables (``vig_finetuned_next_max``)."""
        layer = "" if self.layer is None else f"layer_{self.layer}"
        return "_".join(part for part in (self.statistic, self.owner, self.detail, layer) if part)

    @property
    def key(self) -> Metric:
        """The record without its value: what names the metric, equal for every run's value of it."""
        return replace(self, value=None)

    @property
    def unowned_name(self) -> str:
        """A checkpoint's metric's name without the checkpoint (``dev_accuracy``): what the checkpoint's
        child run logs it as, the same for every checkpoint and task."""
        return replace(self, checkpoint=None).name

    def changed(self) -> Metric:
        """The fine-tuned minus pre-trained change of this checkpoint metric, without its value."""
        return replace(self, checkpoint=None, pair=(PRETRAINED, FINETUNED), change=True, value=None)


def changes(metrics: Iterable[Metric]) -> list[Metric]:
    """For each metric of the fine-tuned checkpoint whose record has a pre-trained counterpart
    (the same record but for the checkpoint and the value), the difference fine-tuned minus
    pre-trained (`Metric.changed`): what MLflow's compare view lines up."""
    metrics = list(metrics)
    before = {metric.key: metric.value for metric in metrics if metric.checkpoint == PRETRAINED}
    found = []
    for metric in metrics:
        pretrained = before.get(replace(metric.key, checkpoint=PRETRAINED))
        if metric.checkpoint == FINETUNED and metric.value is not None and pretrained is not None:
            found.append(replace(metric.changed(), value=metric.value - pretrained))
    return found


def chosen(metrics: Iterable[Metric], keys: Iterable[Metric]) -> list[Metric]:
    """Those of ``metrics`` named by ``keys`` (records without their values), in the order of ``keys``."""
    found = {metric.key: metric for metric in metrics}
    return [found[key] for key in keys if key in found]


def defined(metrics: Iterable[Metric]) -> list[Metric]:
    """The metrics that have a value on this run."""
    return [metric for metric in metrics if metric.value is not None]


def values(metrics: Iterable[Metric]) -> dict[str, float]:
    """``{name: value}`` of the metrics that have one, in their order."""
    return {metric.name: metric.value for metric in metrics if metric.value is not None}
