"""Heads that matter: Kovaleva et al.'s disabling (§6) and Michel et al.'s importance and pruning.

What a stored sweep says, per checkpoint with a trained classification head: the single head
and the single layer whose disabling changes the score most up and down in each mode (with
simultaneous intervals, at the level of the Holm-adjusted tests beside them), how many of each
family are significant after Holm's correction, and whether disabling helps at all (some gain
significant after Holm over its family; fails when every member is shown, by its interval, to
gain less than the paper's smallest reported gain: metrics, claims, and the lines a run prints); the
cross-fitted pruning (each order ranked on one half of the examples, scored on the other):
how many heads each order removes before the score first drops by more than one point, and
the area under the importance order's curve against the random orders' (ours) and the oracle
order's, with paired bootstrap intervals; figures of the single-head and single-layer
changes, the pruning curves and the importance (against each head's cosine similarity where
the run has the cosine); and all of it as a Markdown table. The view is here; its parts beside
it: the stored result's types (`ablation_results`), metric names (`ablation_metrics`), the
tests' verdicts (`ablation_evidence`), figures (`ablation_figures`) and words (`ablation_text`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness.config import SWITCH_CHOICES, Settings, analysis_settings
from harness.options import option
from harness.results.entries import PerCheckpoint
from harness.results.run_record import RunSection
from harness.results.study_record import StudyRecord
from harness.views.ablation_evidence import (
    best_and_worst,
    disabling_gain,
    disabling_helps,
    importance_beats,
    percent,
    significant_gains,
)
from harness.views.ablation_figures import draw_head_deltas, draw_importance, draw_layer_deltas, draw_pruning
from harness.views.ablation_metrics import ANALYSIS, ablation_metric, extreme_statistic, pruning_metrics
from harness.views.ablation_results import (
    BASELINES,
    MODES,
    RANKED,
    SCOPES,
    AblationEntry,
    AblationResult,
    ImportanceAgreement,
    families,
    family_grids,
)
from harness.views.ablation_text import (
    ablation_markdown,
    area_cell,
    areas_sentence,
    extreme_cell,
    pruned_cell,
    pruning_sentence,
    significant_cell,
)
from harness.views.base import Claim, PaperPoint, View, per_checkpoint_results, register_view
from harness.views.markdown import markdown_table
from harness.views.metrics import Metric
from harness.views.papers import KOVALEVA_TASKS, expected_for
from harness.views.samples import intervention_sample


@analysis_settings
@dataclass
class AblationSwitch(Settings):
    """Whether a run adds the ablation (`harness.analyses.ablation.Ablation.switch`): a choice of what
    runs, in no result's key."""

    ablation: str = option(
        "auto",
        "head disabling, importance and pruning (Kovaleva et al. section 6, Michel et al. "
        "2019): hundreds of passes over the dev split; auto = on when the model runs on a "
        "GPU, off on the CPU (then `harness ablate` runs it on the stored checkpoint)",
        choices=SWITCH_CHOICES,
        after="max_corpus_items",
    )


@register_view
class AblationView(View[PerCheckpoint[AblationResult, ImportanceAgreement]]):
    name = ANALYSIS
    samples = intervention_sample
    order = 160
    timed_apart = "ablation"  # its source, the dev sample it scores under hundreds of masks
    version = 3  # 3: simultaneous intervals, the equivalence margin, 20 random orders resampled, predictions stored
    stored = AblationResult
    compared = ImportanceAgreement
    left_out = ("halves", "orders")
    claims = {
        "disabling_a_head_helps": Claim(
            "making some single head's attention uniform raises the fine-tuned model's dev score, significant "
            "after Holm's correction over all heads (fails: every head's gain below 0.1 point by its interval)",
            disabling_helps("heads"),
        ),
        "disabling_a_layer_helps": Claim(
            "making some whole layer's attention uniform raises the fine-tuned model's dev score, significant "
            "after Holm's correction over all layers (fails: every layer's gain below 0.1 point by its interval)",
            disabling_helps("layers"),
        ),
        "importance_beats_random": Claim(
            "pruning heads in order of importance keeps a higher dev score than "
            "our random orders: area under the cross-fitted pruning curve",
            importance_beats("random"),
        ),
        "importance_beats_oracle": Claim(
            "pruning heads in order of importance keeps a higher dev score than "
            "the individual oracle order: area under the cross-fitted pruning "
            "curve",
            importance_beats("oracle"),
        ),
    }
    papers = {
        "disabling_a_head_helps": PaperPoint(
            "Kovaleva et al. 2019, Section 6",
            "disabling single heads of fine-tuned bert-base-uncased helps on "
            "every task: gains of 0.1 (STS-B) to 1.2 points (MRPC)",
            expected_for(KOVALEVA_TASKS),
        ),
        "disabling_a_layer_helps": PaperPoint(
            "Kovaleva et al. 2019, Section 6",
            "disabling a whole layer helps on some tasks: layer 1 on RTE +3.2 points",
            {"rte": "holds"},
        ),
        "importance_beats_oracle": PaperPoint(
            "Michel et al. 2019, Fig. 3",
            "bert-base on MNLI-m pruned by importance beside the individual "
            'oracle order ("pruned according to I_h (solid blue) and individual oracle performance '
            'difference (dashed green)"), no retraining; up to 40% of heads pruned with little loss. MNLI '
            "is not among these tasks, and the paper ran no random orders",
        ),
    }

    @classmethod
    def metrics(cls, entry: AblationEntry) -> list[Metric]:
        """Per trained checkpoint: the intact score, the best and worst single head and layer of
        each mode (delta and 1-indexed position), the heads significant after Holm (and those of
        them that are gains), the cross-fitted pruning (`pruning_metrics`), and the importance
        correlations."""
        out = []
        for checkpoint, result in per_checkpoint_results(entry).items():
            if not result["trained"]:
                continue
            out.append(ablation_metric("intact", checkpoint, result["intact"]))
            for mode, scope, family in families(result):
                for extreme, where in best_and_worst(family):
                    places = {"delta": float(np.asarray(family["delta"])[where]), "layer": float(where[0] + 1)}
                    if scope == "heads":
                        places["head"] = float(where[1] + 1)
                    out += [
                        ablation_metric(extreme_statistic(extreme, scope, mode, what), checkpoint, value)
                        for what, value in places.items()
                    ]
                out.append(ablation_metric(f"significant_{scope}_{mode}", checkpoint, float(family["significant"])))
                out.append(
                    ablation_metric(f"significant_gains_{scope}_{mode}", checkpoint, float(significant_gains(family)))
                )
            out += pruning_metrics(result["pruning"], checkpoint)
            out += [
                ablation_metric(f"spearman_{name}", checkpoint, value) for name, value in result["correlations"].items()
            ]
        return out

    @classmethod
    def draw(cls, entry: AblationEntry, run: RunSection, out_dir: Path) -> list[Path]:
        written = []
        for checkpoint, result in per_checkpoint_results(entry).items():
            if result["trained"]:
                written += [
                    draw_head_deltas(result, run, checkpoint, out_dir / f"ablation_heads_{checkpoint}.png"),
                    draw_layer_deltas(result, run, checkpoint, out_dir / f"ablation_layers_{checkpoint}.png"),
                    draw_pruning(result, run, checkpoint, out_dir / f"ablation_pruning_{checkpoint}.png"),
                ]
        importances = {
            c: r["importance"]["normalised"]
            for c, r in per_checkpoint_results(entry).items()
            if "normalised" in r["importance"]
        }
        if importances:
            written.append(draw_importance(importances, entry, run, out_dir / "ablation_importance.png"))
        return written

    @classmethod
    def tables(cls, entry: AblationEntry, run: RunSection) -> dict[str, str]:
        return {"ablation_table": ablation_markdown(entry, run)}

    @classmethod
    def printed(cls, entry: AblationEntry) -> list[str]:
        """What ``harness run`` and ``harness ablate`` print: per trained checkpoint, the intact
        score, the single head and layer whose disabling changes the score most up and down (each
        mode, with simultaneous intervals), what is significant after Holm and whether disabling
        helps (`disabling_gain`), and the cross-fitted pruning."""
        lines = []
        for checkpoint, result in per_checkpoint_results(entry).items():
            if not result["trained"]:
                continue
            lines.append(
                f"ablation ({checkpoint}): intact dev {result['metric']} {100 * result['intact']:.1f} on "
                f"{result['examples']} examples; changes in points, simultaneous bootstrap intervals over each "
                "family (the level of its Holm-adjusted tests)"
            )
            for mode, scope, family in families(result):
                stats = family_grids(family)
                extremes = dict(best_and_worst(family))
                parts = [
                    f"{word} {'-'.join(str(int(i) + 1) for i in where)} {percent(stats['delta'][where])} "
                    f"[{percent(stats['low_simultaneous'][where])}, {percent(stats['high_simultaneous'][where])}]"
                    for word, where in (("largest change", extremes["best"]), ("smallest", extremes["worst"]))
                ]
                parts.append(
                    f"{family['significant']} significant after Holm, {significant_gains(family)} of "
                    f"them gains: disabling helps {disabling_gain(result, scope, mode)['verdict']}"
                )
                lines.append(f"  {mode}, single {scope[:-1]}: " + "; ".join(parts))
            lines.append(f"  pruning: {pruning_sentence(result['pruning'])}")
            lines.append(f"  pruning: {areas_sentence(result['pruning'], result['examples'])}")
        return lines

    @classmethod
    def study_tables(cls, study: StudyRecord) -> dict[str, str]:
        """Per task where it ran, the fine-tuned model's single head and layer whose disabling changes
        the score most up and down (Kovaleva et al. section 6; ranked, not tested), the heads and
        layers significant after Holm (the gains among them), the heads each pruning order removes
        within a point and the importance order's area against our random orders' and the oracle's
        (Michel et al.), all cross-fitted, over its seeds."""
        intact = ablation_metric("intact").name
        tasks = {task: entry["metrics"] for task, entry in study["tasks"].items() if intact in entry["metrics"]}
        if not tasks:
            return {}
        rows = [
            [
                task,
                str(metrics[intact]["n"]),
                f"{100 * metrics[intact]['mean']:.1f}",
                *(
                    extreme_cell(metrics, extreme, scope, "uniform")
                    for scope in SCOPES
                    for extreme in ("best", "worst")
                ),
                " / ".join(significant_cell(metrics, scope, mode) for scope in SCOPES for mode in MODES),
                " / ".join(pruned_cell(metrics, order) for order in RANKED),
                *(area_cell(metrics, baseline) for baseline in BASELINES),
            ]
            for task, metrics in tasks.items()
        ]
        header = [
            "task",
            "seeds",
            "intact score",
            "largest change, head, 1/L",
            "smallest change, head, 1/L",
            "largest change, layer, 1/L",
            "smallest change, layer, 1/L",
            "significant after Holm, gains of all: heads 1/L / heads 0 / layers 1/L / layers 0",
            "heads pruned within a point, cross-fitted: importance / oracle order",
            *(f"pruning area in points, cross-fitted: importance minus {title}" for title in BASELINES.values()),
        ]
        return {"ablation_by_task": markdown_table(header, rows)}
