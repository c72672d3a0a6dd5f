"""Heads that matter: Kovaleva et al.'s disabling (§6) and Michel et al.'s importance and pruning.

On every checkpoint with a trained classification head (the fine-tuned one), evaluation
only, no retraining, on the main dev split (`harness.inputs.sources.dev.AblationSource`):

- **Disabling**, one head at a time and one layer at a time, two ways: the head's attention
  replaced by 1/L over the L real tokens (``uniform``, Kovaleva et al.) or its output gated
  to 0 (``zero``, Michel et al.). Each configuration's score minus the intact score, with a
  95% paired bootstrap interval, a paired p-value (exact McNemar for accuracy, a permutation
  test otherwise) and Holm's correction within each family (all heads of one mode; all
  layers of one mode).
- **Importance** I_h = E_x |dL(x)/d xi_h| (Michel et al., eq. 2): the absolute gradient of each
  example's loss with respect to the head's gate, averaged over the examples (the paper's
  formula: the absolute value per example, where HF's bertology script takes it per batch),
  then divided by the L2 norm of its layer. The checkpoint's own loss: the task loss for a
  trained head; for the pre-trained encoder the masked-LM loss when it ships a complete
  masked-LM head, else a recorded note (an untrained classifier's loss measures nothing).
- **Pruning** (Michel et al. §4): heads gated to 0 in increasing importance, 10% of all heads
  at a time, no retraining; against the individual oracle order of the disabling sweep (the
  heads whose removal hurt least first; Michel et al.'s Fig. 3) and 20 seeded random orders
  (ours). Cross-fitted: the examples are split in two seeded halves, the importance and the
  oracle order are ranked on one half (from its examples' gate gradients and single-head
  predictions, which the sweep already has) and the curve is scored on the other, and the
  halves swapped; the two held-out halves are pooled into one curve per order. Importance
  against random and against the oracle: the area under the curve, with a 95% paired
  bootstrap interval over the examples (and, against random, over the random orders too:
  they are a sample of all orders, and their spread is as large as the examples').

Beside each family's Holm-adjusted p-values the intervals shown are simultaneous (Bonferroni's
level over the family); each member's own 95% interval is kept for the equivalence test of
"disabling some head helps" (`harness.views.ablation_evidence.disabling_gain`). Every prediction the
statistics are computed from is stored (``units``: labels, the intact predictions, each
single variant's, each pruning order's cross-fitted ones), so every interval can be
recomputed from the stored result alone.

Many variants share each forward pass (`harness.model.forward.forward_variants`); every mask
is scored on every example once, and each pruning mask's predictions are read on the half its
order was not ranked on. The variants' masks are built in `harness.analyses.ablation_masks`,
the tests, curves and correlations in `harness.analyses.ablation_statistics`; what a stored
sweep says, in `harness.views.ablation`.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch

from harness.analyses.ablation_masks import (
    PRUNING_FRACTIONS,
    Variant,
    cross_fitted_orders,
    cross_fitting_halves,
    pruned_counts,
    pruning_masks,
    single_variants,
)
from harness.analyses.ablation_statistics import (
    area_comparisons,
    family,
    gain_bounds,
    held_out_predictions,
    normalised_per_layer,
    spearman,
    within_one_point,
)
from harness.analyses.base import GATE_GRADIENTS, INTERVENES, LOGITS, Analysis, AnalysisContext, register_analysis
from harness.analyses.significance import metric_rows, paired_differences
from harness.inputs.batches import AttentionBatch
from harness.model.forward import UNTRAINED_TASK_LOSS, Interventions
from harness.results.entries import AnyEntry, decoded
from harness.results.store import JsonObject
from harness.views.ablation import AblationEntry, AblationView
from harness.views.ablation_results import (
    IMPORTANCE_VS_DELTA,
    MODES,
    SCOPES,
    VS_COSINE,
    AblationResult,
    Family,
    Importance,
    ImportanceAgreement,
    Pruning,
    is_random,
)
from harness.views.base import pair_name, per_checkpoint_results, per_pair_results
from harness.views.cosine import CosineEntry, CosineView
from harness.views.evidence import pack
from tasks.metrics import predictions_from_logits

NO_IMPORTANCE = {
    UNTRAINED_TASK_LOSS: "untrained classifier head and no masked-LM head: its loss measures nothing, so no "
    "importance is computed for this checkpoint",
}
Families = dict[str, dict[str, Family]]  # {scope: {mode: one family's grids}}


@register_analysis
class Ablation(Analysis):
    """Per checkpoint: disabling deltas with intervals, importance, pruning curves (see the module)."""

    view = AblationView
    source = "ablation"
    needs = frozenset({LOGITS, GATE_GRADIENTS, INTERVENES})
    uses_head = True
    on_by_default = False  # hundreds of dev passes: `--ablation` decides (harness.run.plan.switch_on)
    switch = "ablation"
    per_input_scores = True  # each variant's metric over the inputs' predictions
    settings_used = ("analysis_seed",)  # the random pruning orders, the cross-fitting halves, the masked-LM masking
    reference = {
        "kovaleva_disabling": "single heads: gains of 0.1% (STS-B) to 1.2% (MRPC); layer 1 on RTE: +3.2% "
        "(bert-base-uncased, attention replaced by 1/L)",
        "michel_pruning": "up to 40% of bert-base's heads pruned on MNLI-m with little loss (importance order, "
        "normalised per layer, 10% steps, no retraining)",
    }

    def __init__(self, context: AnalysisContext) -> None:
        super().__init__(context)
        self.logits: dict[str, list[torch.Tensor]] = {name: [] for name in context.checkpoints}
        self.gates: dict[str, list[np.ndarray]] = {}  # |dL(x)/d xi_h| per example: (batch, layers, heads) each
        self.losses: dict[str, str] = {}
        self.skipped: dict[str, str] = {}
        self.labels: list[float] = []
        self.guids: list[str] = []  # the examples' ids, in stream order: what the stored halves name
        self.held_out: dict[str, dict[str, np.ndarray]] = {}  # per checkpoint and order: (steps, examples)

    def update(self, batch: AttentionBatch) -> None:
        for name in self.context.checkpoints:
            self.logits[name].append(batch.logits[name].float().cpu())
            gradients = batch.gradients.get(name)
            if gradients is None:
                self.skipped[name] = batch.skipped_gradients.get(name, "no gradients captured")
                continue
            self.losses[name] = gradients.loss
            self.gates.setdefault(name, []).append(gradients.gate_gradients.abs().double().cpu().numpy())
        self.labels += [item.label for item in batch.items]
        self.guids += [item.guid for item in batch.items]

    def result(self) -> dict[str, AblationResult]:
        return {name: self.checkpoint_result(name) for name in self.context.checkpoints}

    def importance(self, name: str) -> Importance:
        """The checkpoint's head importance on all the examples, raw and normalised per layer, or
        why there is none."""
        loss = self.losses.get(name)
        reason = self.skipped.get(name) or (NO_IMPORTANCE.get(loss) if loss is not None else None)
        if reason is not None or name not in self.gates:
            return {"loss": None, "skipped_because": reason or "no gradients captured"}
        raw = np.concatenate(self.gates[name]).mean(axis=0)
        return {"loss": loss, "raw": raw.tolist(), "normalised": normalised_per_layer(raw).tolist()}

    def checkpoint_result(self, name: str) -> AblationResult:
        """Checkpoint ``name``'s entry: for a trained head, the intact score, the disabling families, the
        importance, the cross-fitted pruning curves and the importance-vs-delta correlations; for an
        untrained head, the importance and a note."""
        importance = self.importance(name)
        if name not in self.context.trained:
            return {
                "trained": False,
                "importance": importance,
                "note": "untrained classifier head: disabling heads changes nothing the task measures",
            }
        metric = self.context.run_task.metrics[0]
        labels = np.asarray(self.labels)
        intact = predictions_from_logits(self.context.run_task, torch.cat(self.logits[name]).numpy())
        score = float(metric_rows(metric, intact[None], labels)[0])
        described, variants = single_variants(self.context.num_layers, self.context.num_heads)
        single = self.predictions(name, variants)
        families = self.disabling(described, single, intact, labels, metric)
        zero_heads = single[[i for i, v in enumerate(described) if v["mode"] == "zero" and v["head"] is not None]]
        gates = np.concatenate(self.gates[name]) if "normalised" in importance else None
        pruning = self.pruning(name, gates, zero_heads, intact, labels, metric)
        scores = np.asarray(importance["normalised"]) if "normalised" in importance else None
        correlations = (
            {IMPORTANCE_VS_DELTA[mode]: spearman(scores, families["heads"][mode]["delta"]) for mode in MODES}
            if scores is not None
            else {}
        )
        return {
            "trained": True,
            "metric": metric,
            "examples": len(labels),
            "intact": score,
            "heads": families["heads"],
            "layers": families["layers"],
            "importance": importance,
            "pruning": pruning,
            "correlations": correlations,
            "variants": len(described) + pruning["variants"],
            "units": {
                "labels": pack(labels),
                "intact": pack(intact),
                "single": pack(single),
                "held_out": {order: pack(rows) for order, rows in self.held_out[name].items()},
            },
        }

    def disabling(
        self,
        described: list[Variant],
        predictions: np.ndarray,
        intact: np.ndarray,
        labels: np.ndarray,
        metric: str,
    ) -> Families:
        """Each family of single-head and single-layer variants (``described``, their ``predictions``)
        against the ``intact`` predictions, mode by mode."""
        layers, heads = self.context.num_layers, self.context.num_heads
        scopes = ["layers" if variant["head"] is None else "heads" for variant in described]
        families: Families = {scope: {} for scope in SCOPES}
        for mode in MODES:
            for scope, shape in zip(SCOPES, ((layers, heads), (layers,))):
                rows = [i for i, variant in enumerate(described) if (variant["mode"], scopes[i]) == (mode, scope)]
                differences = paired_differences(metric, predictions[rows], intact, labels)
                families[scope][mode] = family(
                    differences, shape, gain_bounds(metric, predictions[rows], intact, labels)
                )
        return families

    def predictions(self, name: str, variants: Interventions) -> np.ndarray:
        """(V, examples) predictions of checkpoint ``name`` under each variant, in the update order."""
        logits = self.context.variant_scorer(name, variants)
        if logits.shape[1] != len(self.labels):
            raise RuntimeError(f"the ablation source streamed {logits.shape[1]} items, not {len(self.labels)}")
        return np.stack([predictions_from_logits(self.context.run_task, part.numpy()) for part in logits])

    def pruning(
        self,
        name: str,
        gates: np.ndarray | None,
        zero_heads: np.ndarray,
        intact: np.ndarray,
        labels: np.ndarray,
        metric: str,
    ) -> Pruning:
        """The cross-fitted score after each pruning step of each order (step 0 is the intact
        model), each order ranked on one half of the examples (from their gate gradients
        ``gates`` and the single heads' gated-to-0 predictions ``zero_heads``, see
        `cross_fitted_orders`) and scored on the other; the areas under the curves and the
        importance order's against the others."""
        layers, heads = self.context.num_layers, self.context.num_heads
        halves = cross_fitting_halves(len(labels), self.context.seed)
        orders = cross_fitted_orders(halves, gates, zero_heads, intact, labels, metric, self.context.seed)
        where, masks = pruning_masks(orders, layers, heads)
        predictions = self.predictions(name, Interventions(head_gates=masks))
        held_out = held_out_predictions(where, predictions, halves, intact, len(PRUNING_FRACTIONS))
        self.held_out[name] = held_out
        curves = {order: metric_rows(metric, rows, labels).tolist() for order, rows in held_out.items()}
        randoms = np.asarray([curve for order, curve in curves.items() if is_random(order)])
        return {
            "fractions": list(PRUNING_FRACTIONS),
            "heads_pruned": pruned_counts(layers * heads),
            "halves": [[self.guids[index] for index in half] for half in halves],
            "curves": curves,
            "random_mean": randoms.mean(axis=0).tolist(),
            "random_std": randoms.std(axis=0).tolist(),
            "steps_within_one_point": {
                order: within_one_point(curve, curve[0])  # step 0: the intact score
                for order, curve in curves.items()
            },
            **area_comparisons(metric, held_out, labels, PRUNING_FRACTIONS),
            "orders": orders,
            "variants": len(masks),
        }

    @classmethod
    def compare(
        cls, per_checkpoint: dict[str, AblationResult], pairs: list[tuple[str, str]]
    ) -> dict[str, ImportanceAgreement]:
        """Per pair whose checkpoints both have an importance: Spearman's rho between them."""
        out: dict[str, ImportanceAgreement] = {}
        for before, after in pairs:
            first, second = per_checkpoint[before]["importance"], per_checkpoint[after]["importance"]
            if "normalised" in first and "normalised" in second:
                out[pair_name((before, after))] = {
                    "importance_spearman": spearman(first["normalised"], second["normalised"])
                }
        return out

    @classmethod
    def relate(cls, entry: AnyEntry, entries: Mapping[str, AnyEntry]) -> JsonObject | None:
        """Against each head's cosine similarity between the checkpoints (the ``cosine`` entry):
        do the heads that fine-tuning changed most matter most?"""
        found = entries.get(CosineView.name)
        if found is None:
            return None
        cosine: CosineEntry = decoded(found)
        ablation: AblationEntry = decoded(entry)
        out = {}
        for (_, after), (pair, stats) in zip(cosine["pairs"], per_pair_results(cosine).items()):
            result = per_checkpoint_results(ablation).get(after)
            if result is None or not result["trained"] or "heads" not in result:
                continue
            importance = result["importance"].get("normalised")
            out[pair] = {
                "cosine_per_head": stats["per_head"],
                VS_COSINE["importance"]: None if importance is None else spearman(importance, stats["per_head"]),
                **{VS_COSINE[mode]: spearman(result["heads"][mode]["delta"], stats["per_head"]) for mode in MODES},
            }
        return {CosineView.name: out} if out else None
