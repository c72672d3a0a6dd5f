"""The ablation's metric names: a trained checkpoint's statistics (``ablation_intact_finetuned``),
its best and worst single head and layer, and the cross-fitted pruning's metrics.
"""

from __future__ import annotations

from harness.results.checkpoints import FINETUNED
from harness.views.ablation_results import BASELINES, RANKED, Pruning, versus
from harness.views.metrics import BOUNDS, Metric

ANALYSIS = "ablation"


def ablation_metric(statistic: str, checkpoint: str = FINETUNED, value: float | None = None) -> Metric:
    """A trained checkpoint's ablation metric: ``ablation_intact_finetuned``."""
    return Metric(ANALYSIS, f"ablation_{statistic}", checkpoint=checkpoint, value=value)


def extreme_statistic(extreme: str, scope: str, mode: str, what: str) -> str:
    """The statistic of a family's ``best`` or ``worst`` single head or layer: its ``delta``, ``layer``
    or ``head`` (``best_head_uniform_delta``)."""
    return f"{extreme}_{scope[:-1]}_{mode}_{what}"


def area_statistic(baseline: str) -> str:
    """The statistic of the importance order's pruning area minus the ``baseline``'s."""
    return f"importance_minus_{baseline}_area"


def pruning_metrics(pruning: Pruning, checkpoint: str) -> list[Metric]:
    """The heads the importance and the oracle order prune within one point, and the importance
    order's area minus each baseline's with its interval's bounds (all cross-fitted)."""
    out = [
        ablation_metric(
            f"pruned_within_one_point_{order}",
            checkpoint,
            float(pruning["heads_pruned"][pruning["steps_within_one_point"][order]]),
        )
        for order in RANKED
        if order in pruning["steps_within_one_point"]
    ]
    for baseline in BASELINES:
        if (evidence := versus(pruning, baseline)) is not None:
            area = area_statistic(baseline)
            out += [
                ablation_metric(area, checkpoint, evidence["value"]),
                *(
                    ablation_metric(f"{area}_{bound}", checkpoint, value)
                    for bound, value in zip(BOUNDS, evidence["interval"])
                ),
            ]
    return out
