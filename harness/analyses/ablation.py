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
  at a time, no retraining; against five seeded random orders and the oracle order of the
  disabling sweep (the heads whose removal hurt least first).

Many variants share each forward pass (`harness.model.forward.forward_variants`). The importance
and the oracle order are both chosen on the same dev examples the pruning curve is scored
on (as HF's bertology script); the random orders are not.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch
from matplotlib.colors import TwoSlopeNorm
from matplotlib.ticker import MaxNLocator
from scipy.stats import ConstantInputWarning, spearmanr

from harness.analyses.base import GATE_GRADIENTS, INTERVENES, LOGITS, Analysis, AnalysisContext, register_analysis
from harness.views.base import pair_name, per_checkpoint_results
from harness.inputs.batches import AttentionBatch
from harness.views.style import GREY, OKABE_ITO, checkpoint_title, plt, run_title, save, style_head_axes, suptitle
from harness.model.forward import UNTRAINED_TASK_LOSS, Interventions
from harness.analyses.significance import ALPHA, holm, metric_rows, paired_differences
from tasks.metrics import predictions_from_logits

MODES = ("uniform", "zero")
MODE_TITLES = {"uniform": "attention replaced by 1/L (Kovaleva et al.)",
               "zero": "head output gated to 0 (Michel et al.)"}
PRUNING_FRACTIONS = tuple(step / 10 for step in range(11))  # Michel et al.: 10% of all heads at a time
RANDOM_ORDERS = 5
ONE_POINT = 0.01  # "a drop of 1 point": 0.01 of the metric (1 percentage point of accuracy)
NO_IMPORTANCE = {
    UNTRAINED_TASK_LOSS: "untrained classifier head and no masked-LM head: its loss measures nothing, so no "
                         "importance is computed for this checkpoint",
}


def single_variants(layers: int, heads: int) -> tuple[list[dict[str, Any]], Interventions]:
    """Every single head and every single layer, disabled each way: their descriptions and the
    stacked (V, layers, heads) masks, in the order heads (layer-major) then layers, per mode."""
    described = [{"mode": mode, "layer": layer, "head": head}
                 for mode in MODES for layer in range(layers) for head in [*range(heads), None]]
    gates = torch.ones(len(described), layers, heads)
    uniform = torch.zeros(len(described), layers, heads, dtype=torch.bool)
    for index, variant in enumerate(described):
        chosen = (index, variant["layer"], slice(None) if variant["head"] is None else variant["head"])
        if variant["mode"] == "zero":
            gates[chosen] = 0.0
        else:
            uniform[chosen] = True
    return described, Interventions(head_gates=gates, uniform_heads=uniform)


def pruning_orders(importance: np.ndarray | None, zero_deltas: np.ndarray, seed: int) -> dict[str, list[int]]:
    """Orders of the flat head indices (layer * heads + head) to prune: by increasing
    importance, the oracle (the single-head deltas of gating to 0, least harmful first) and
    `RANDOM_ORDERS` seeded random permutations; ties keep the head order."""
    count = zero_deltas.size
    orders = {"oracle": np.argsort(-zero_deltas.ravel(), kind="stable").tolist()}
    if importance is not None:
        orders["importance"] = np.argsort(importance.ravel(), kind="stable").tolist()
    for index in range(RANDOM_ORDERS):
        orders[f"random{index + 1}"] = np.random.default_rng(seed + index).permutation(count).tolist()
    return orders


def pruned_counts(count: int) -> list[int]:
    """Heads pruned at each step of `PRUNING_FRACTIONS` of ``count`` heads."""
    return [round(fraction * count) for fraction in PRUNING_FRACTIONS]


def pruning_masks(orders: dict[str, list[int]], layers: int, heads: int) -> tuple[list[tuple[str, int]], torch.Tensor]:
    """The distinct (V, layers, heads) gates of every order's pruning steps past 0 heads, and
    for each (order, step) the index of its mask among them."""
    masks: dict[tuple[int, ...], int] = {}
    where = []
    for name, order in orders.items():
        for step, pruned in enumerate(pruned_counts(layers * heads)):
            if pruned == 0:
                continue
            key = tuple(sorted(order[:pruned]))
            where.append((name, step, masks.setdefault(key, len(masks))))
    gates = torch.ones(len(masks), layers * heads)
    for key, index in masks.items():
        gates[index, list(key)] = 0.0
    return where, gates.view(-1, layers, heads)


def within_one_point(scores: list[float], intact: float) -> int:
    """How many pruning steps go before the score first drops by more than one point."""
    steps = 0
    for score in scores[1:]:
        if score < intact - ONE_POINT:
            break
        steps += 1
    return steps


def family(differences: Any, shape: tuple[int, ...]) -> dict[str, Any]:
    """One family of tests (all heads or all layers of one mode) as grids: the deltas, their
    interval bounds, the p-values and the Holm-adjusted p-values."""
    adjusted = holm(differences.p_values)
    return {"delta": differences.differences.reshape(shape).tolist(),
            "low": differences.intervals[:, 0].reshape(shape).tolist(),
            "high": differences.intervals[:, 1].reshape(shape).tolist(),
            "p": differences.p_values.reshape(shape).tolist(), "p_holm": adjusted.reshape(shape).tolist(),
            "significant": int((adjusted < ALPHA).sum())}


def spearman(first: Any, second: Any) -> float | None:
    """Spearman's rho of two flattened grids; None when either is constant."""
    with warnings.catch_warnings():  # a constant grid (all deltas 0 on a tiny dev set) is answered with None
        warnings.simplefilter("ignore", ConstantInputWarning)
        rho = spearmanr(np.ravel(first), np.ravel(second))[0]
    return None if np.isnan(rho) else float(rho)


@register_analysis
class Ablation(Analysis):
    """Per checkpoint: disabling deltas with intervals, importance, pruning curves (see the module)."""

    name = "ablation"
    version = 1
    source = "ablation"
    needs = frozenset({LOGITS, GATE_GRADIENTS, INTERVENES})
    uses_head = True
    on_by_default = False  # hundreds of dev passes: `--ablation` decides (see harness.run.pipeline)
    settings_used = ("analysis_seed",)  # the random pruning orders and the masked-LM masking
    reference = {
        "kovaleva_disabling": "single heads: gains of 0.1% (STS-B) to 1.2% (MRPC); layer 1 on RTE: +3.2% "
                              "(bert-base-uncased, attention replaced by 1/L)",
        "michel_pruning": "up to 40% of bert-base's heads pruned on MNLI-m with little loss (importance order, "
                          "normalised per layer, 10% steps, no retraining)",
    }

    def __init__(self, context: AnalysisContext) -> None:
        super().__init__(context)
        self.logits: dict[str, list[torch.Tensor]] = {name: [] for name in context.checkpoints}
        self.gates: dict[str, torch.Tensor] = {}
        self.losses: dict[str, str] = {}
        self.skipped: dict[str, str] = {}
        self.labels: list[float] = []

    def update(self, batch: AttentionBatch) -> None:
        for name in self.context.checkpoints:
            self.logits[name].append(batch.logits[name].float().cpu())
            gradients = batch.gradients.get(name)
            if gradients is None:
                self.skipped[name] = batch.skipped_gradients.get(name, "no gradients captured")
                continue
            self.losses[name] = gradients.loss
            summed = gradients.gates.abs().double().sum(dim=0).cpu()  # |dL(x)/d xi_h| per example, summed
            self.gates[name] = self.gates.get(name, torch.zeros_like(summed)) + summed
        self.labels += [item.label for item in batch.items]

    def result(self) -> dict[str, Any]:
        return {name: self.checkpoint_result(name) for name in self.context.checkpoints}

    def importance(self, name: str) -> dict[str, Any]:
        """The checkpoint's head importance, raw and normalised per layer, or why there is none."""
        loss = self.losses.get(name)
        reason = self.skipped.get(name) or NO_IMPORTANCE.get(loss)
        if reason is not None or name not in self.gates:
            return {"loss": None, "skipped_because": reason or "no gradients captured"}
        raw = self.gates[name] / len(self.labels)
        norms = raw.norm(dim=1, keepdim=True)
        normalised = torch.where(norms > 0, raw / norms.clamp(min=1e-30), raw)
        return {"loss": loss, "raw": raw.tolist(), "normalised": normalised.tolist()}

    def checkpoint_result(self, name: str) -> dict[str, Any]:
        importance = self.importance(name)
        if name not in self.context.trained:
            return {"trained": False, "importance": importance,
                    "note": "untrained classifier head: disabling heads changes nothing the task measures"}
        task = self.context.task
        metric = task.metrics[0]
        labels = np.asarray(self.labels)
        intact = predictions_from_logits(task, torch.cat(self.logits[name]).numpy())
        score = float(metric_rows(metric, intact[None], labels)[0])
        layers, heads = self.context.num_layers, self.context.num_heads
        described, variants = single_variants(layers, heads)
        predictions = self.predictions(name, variants)
        families = {}
        for mode in MODES:
            rows = [i for i, v in enumerate(described) if v["mode"] == mode and v["head"] is not None]
            families[f"heads_{mode}"] = family(paired_differences(metric, predictions[rows], intact, labels),
                                               (layers, heads))
            rows = [i for i, v in enumerate(described) if v["mode"] == mode and v["head"] is None]
            families[f"layers_{mode}"] = family(paired_differences(metric, predictions[rows], intact, labels),
                                                (layers,))
        zero_deltas = np.asarray(families["heads_zero"]["delta"])
        scores = np.asarray(importance["normalised"]) if "normalised" in importance else None
        pruning = self.pruning(name, pruning_orders(scores, zero_deltas, self.context.seed), score, labels, metric)
        correlations = {f"importance_vs_{mode}_delta": spearman(scores, families[f"heads_{mode}"]["delta"])
                        for mode in MODES} if scores is not None else {}
        return {"trained": True, "metric": metric, "examples": len(labels), "intact": score,
                "heads": {mode: families[f"heads_{mode}"] for mode in MODES},
                "layers": {mode: families[f"layers_{mode}"] for mode in MODES},
                "importance": importance, "pruning": pruning, "correlations": correlations,
                "variants": len(described) + pruning["variants"]}

    def predictions(self, name: str, variants: Interventions) -> np.ndarray:
        """(V, examples) predictions of checkpoint ``name`` under each variant, in the update order."""
        logits = self.context.evaluate(name, variants)
        if logits.shape[1] != len(self.labels):
            raise RuntimeError(f"the ablation source streamed {logits.shape[1]} items, not {len(self.labels)}")
        return np.stack([predictions_from_logits(self.context.task, part.numpy()) for part in logits])

    def pruning(self, name: str, orders: dict[str, list[int]], intact: float, labels: np.ndarray,
                metric: str) -> dict[str, Any]:
        """The score after each pruning step of each order (step 0 is the intact model)."""
        layers, heads = self.context.num_layers, self.context.num_heads
        where, gates = pruning_masks(orders, layers, heads)
        scores = metric_rows(metric, self.predictions(name, Interventions(head_gates=gates)), labels)
        curves = {order: [intact] for order in orders}
        for order, _, index in where:
            curves[order].append(float(scores[index]))
        randoms = np.asarray([curve for order, curve in curves.items() if order.startswith("random")])
        return {"fractions": list(PRUNING_FRACTIONS), "heads_pruned": pruned_counts(layers * heads),
                "curves": curves, "random_mean": randoms.mean(axis=0).tolist(),
                "random_std": randoms.std(axis=0).tolist(),
                "steps_within_one_point": {order: within_one_point(curve, intact) for order, curve in curves.items()},
                "orders": orders, "variants": len(gates)}

    @classmethod
    def compare(cls, per_checkpoint: dict[str, Any], pairs: list[tuple[str, str]]) -> dict[str, Any]:
        """Per pair whose checkpoints both have an importance: Spearman's rho between them."""
        out = {}
        for before, after in pairs:
            first, second = per_checkpoint[before]["importance"], per_checkpoint[after]["importance"]
            if "normalised" in first and "normalised" in second:
                out[pair_name((before, after))] = {"importance_spearman": spearman(first["normalised"],
                                                                                   second["normalised"])}
        return out

    @classmethod
    def relate(cls, entry: dict[str, Any], entries: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
        """Against each head's cosine similarity between the checkpoints (the ``cosine`` entry):
        do the heads that fine-tuning changed most matter most?"""
        cosine = entries.get("cosine")
        if cosine is None:
            return None
        out = {}
        for pair, stats in cosine["result"]["per_pair"].items():
            after = pair.split("->")[1]
            result = per_checkpoint_results(entry).get(after, {})
            if not result.get("trained"):
                continue
            importance = result["importance"].get("normalised")
            out[pair] = {"cosine_per_head": stats["per_head"],
                         "importance_vs_cosine": None if importance is None else spearman(importance,
                                                                                          stats["per_head"]),
                         **{f"{mode}_delta_vs_cosine": spearman(result["heads"][mode]["delta"], stats["per_head"])
                            for mode in MODES}}
        return {"cosine": out} if out else None

    @classmethod
    def metrics(cls, entry: dict[str, Any]) -> list[tuple[str, float]]:
        """Per trained checkpoint: the intact score, the best and worst single head and layer of
        each mode (delta and 1-indexed position), the heads significant after Holm, the pruning
        steps within one point, and the importance correlations."""
        out = []
        for checkpoint, result in per_checkpoint_results(entry).items():
            if not result["trained"]:
                continue
            out.append((f"ablation_intact_{checkpoint}", result["intact"]))
            for mode in MODES:
                for scope in ("heads", "layers"):
                    deltas = np.asarray(result[scope][mode]["delta"])
                    for extreme, position in (("best", deltas.argmax()), ("worst", deltas.argmin())):
                        where = np.unravel_index(position, deltas.shape)
                        prefix = f"ablation_{extreme}_{scope[:-1]}_{mode}"
                        out.append((f"{prefix}_delta_{checkpoint}", float(deltas[where])))
                        out.append((f"{prefix}_layer_{checkpoint}", float(where[0] + 1)))
                        if scope == "heads":
                            out.append((f"{prefix}_head_{checkpoint}", float(where[1] + 1)))
                    out.append((f"ablation_significant_{scope}_{mode}_{checkpoint}",
                                float(result[scope][mode]["significant"])))
            for order in ("importance", "oracle"):
                if order in result["pruning"]["steps_within_one_point"]:
                    steps = result["pruning"]["steps_within_one_point"][order]
                    out.append((f"ablation_pruned_within_one_point_{order}_{checkpoint}",
                                float(result["pruning"]["heads_pruned"][steps])))
            out += [(f"ablation_spearman_{name}_{checkpoint}", value)
                    for name, value in result["correlations"].items() if value is not None]
        return out

    @classmethod
    def draw(cls, entry: dict[str, Any], run: dict[str, Any], out_dir: Path) -> list[Path]:
        written = []
        for checkpoint, result in per_checkpoint_results(entry).items():
            if result["trained"]:
                written += [draw_head_deltas(result, run, checkpoint, out_dir / f"ablation_heads_{checkpoint}.png"),
                            draw_layer_deltas(result, run, checkpoint, out_dir / f"ablation_layers_{checkpoint}.png"),
                            draw_pruning(result, run, checkpoint, out_dir / f"ablation_pruning_{checkpoint}.png")]
        importances = {c: r["importance"]["normalised"] for c, r in per_checkpoint_results(entry).items()
                       if "normalised" in r["importance"]}
        if importances:
            written.append(draw_importance(importances, entry, run, out_dir / "ablation_importance.png"))
        return written

    @classmethod
    def tables(cls, entry: dict[str, Any], run: dict[str, Any]) -> dict[str, str]:
        return {"ablation_table": ablation_markdown(entry, run)}


def summary_lines(entry: dict[str, Any]) -> list[str]:
    """What ``harness run`` and ``harness ablate`` print of a stored entry: per trained checkpoint,
    the intact score, the single head and layer whose disabling helps and hurts most (each
    mode), what is significant after Holm, and the pruning."""
    lines = []
    for checkpoint, result in per_checkpoint_results(entry).items():
        if not result["trained"]:
            continue
        lines.append(f"ablation ({checkpoint}): intact dev {result['metric']} {100 * result['intact']:.1f} on "
                     f"{result['examples']} examples; changes in points, 95% bootstrap intervals")
        for mode in MODES:
            for scope in ("heads", "layers"):
                stats = {key: np.asarray(result[scope][mode][key]) for key in ("delta", "low", "high")}
                parts = []
                for label, flat in (("best", stats["delta"].argmax()), ("worst", stats["delta"].argmin())):
                    where = np.unravel_index(flat, stats["delta"].shape)
                    name = "-".join(str(int(i) + 1) for i in where)
                    parts.append(f"{label} {name} {percent(stats['delta'][where])} "
                                 f"[{percent(stats['low'][where])}, {percent(stats['high'][where])}]")
                parts.append(f"{result[scope][mode]['significant']} significant after Holm")
                lines.append(f"  {mode}, single {scope[:-1]}: " + "; ".join(parts))
        lines.append(f"  pruning: {pruning_sentence(result['pruning'])}")
    return lines


def pruning_sentence(pruning: dict[str, Any]) -> str:
    """How many heads each order prunes before the score first drops by more than one point."""
    pruned = {order: pruning["heads_pruned"][steps] for order, steps in pruning["steps_within_one_point"].items()}
    named = ", ".join(f"{order} order {count}" for order, count in pruned.items() if not order.startswith("random"))
    randoms = [count for order, count in pruned.items() if order.startswith("random")]
    return (f"heads pruned before the score first drops by more than one point: {named}, random orders "
            f"{', '.join(map(str, randoms))} (of {pruning['heads_pruned'][-1]}; 10% steps, no retraining)")


def percent(value: float) -> str:
    return f"{100 * value:+.1f}"


def draw_head_deltas(result: dict[str, Any], run: dict[str, Any], checkpoint: str, path: Path) -> Path:
    """Layers x heads heatmaps of the single-head deltas (percentage points) per mode, on one
    diverging scale centred on 0; heads significant after Holm's correction are boxed."""
    grids = {mode: 100 * np.asarray(result["heads"][mode]["delta"]) for mode in MODES}
    limit = max(max(abs(grid).max() for grid in grids.values()), 0.1)
    layers, heads = grids[MODES[0]].shape
    figure, axes = plt.subplots(1, len(MODES), figsize=(0.42 * heads * len(MODES) + 2.8, 0.42 * layers + 1.9),
                                squeeze=False, layout="constrained")
    norm = TwoSlopeNorm(vcenter=0.0, vmin=-limit, vmax=limit)
    for panel, mode in zip(axes[0], MODES):
        image = panel.imshow(grids[mode], cmap="RdBu", norm=norm, aspect="auto")
        significant = np.argwhere(np.asarray(result["heads"][mode]["p_holm"]) < ALPHA)
        for layer, head in significant:
            panel.add_patch(plt.Rectangle((head - 0.5, layer - 0.5), 1, 1, fill=False, edgecolor="black", lw=1.5))
        style_head_axes(panel, layers, heads, MODE_TITLES[mode], tick_size=7)
    figure.colorbar(image, ax=list(axes[0]), label=f"change of dev {result['metric']} (points)")
    suptitle(figure, f"Disabling one head: {run_title(run)}, {checkpoint_title(checkpoint)} (intact "
                     f"{100 * result['intact']:.1f}; boxed: significant after Holm)")
    return save(figure, path)


def draw_layer_deltas(result: dict[str, Any], run: dict[str, Any], checkpoint: str, path: Path) -> Path:
    """Per-layer bars of the whole-layer deltas per mode, with their 95% bootstrap intervals."""
    figure, axes = plt.subplots(figsize=(5.6, 3.6))
    layers = np.arange(1, len(result["layers"][MODES[0]]["delta"]) + 1)
    width = 0.8 / len(MODES)
    for index, (mode, colour) in enumerate(zip(MODES, (OKABE_ITO["blue"], OKABE_ITO["orange"]))):
        stats = {key: 100 * np.asarray(result["layers"][mode][key]) for key in ("delta", "low", "high")}
        errors = [stats["delta"] - stats["low"], stats["high"] - stats["delta"]]
        axes.bar(layers + (index - (len(MODES) - 1) / 2) * width, stats["delta"], width, yerr=errors, capsize=2,
                 color=colour, label=MODE_TITLES[mode])
    axes.axhline(0, color="black", lw=0.8)
    axes.set_xticks(layers)
    axes.set_xlabel("layer disabled")
    axes.set_ylabel(f"change of dev {result['metric']} (points)")
    axes.set_title(f"Disabling one layer: {run_title(run)}, {checkpoint_title(checkpoint)}\n"
                   f"intact {100 * result['intact']:.1f}; 95% paired bootstrap intervals", fontsize=9)
    axes.legend(fontsize=7)
    axes.grid(axis="y", alpha=0.3)
    return save(figure, path)


def draw_pruning(result: dict[str, Any], run: dict[str, Any], checkpoint: str, path: Path) -> Path:
    """Score against the share of heads pruned: importance order, oracle order, and the random
    orders' mean with their spread (one standard deviation)."""
    pruning = result["pruning"]
    fractions = 100 * np.asarray(pruning["fractions"])
    figure, axes = plt.subplots(figsize=(5.4, 3.6))
    mean, std = 100 * np.asarray(pruning["random_mean"]), 100 * np.asarray(pruning["random_std"])
    axes.plot(fractions, mean, color=GREY, marker=".", label=f"random order (mean of {RANDOM_ORDERS})")
    axes.fill_between(fractions, mean - std, mean + std, color=GREY, alpha=0.25)
    for order, colour in (("importance", OKABE_ITO["blue"]), ("oracle", OKABE_ITO["green"])):
        if order in pruning["curves"]:
            axes.plot(fractions, 100 * np.asarray(pruning["curves"][order]), color=colour, marker="o",
                      label=f"{order} order")
    axes.axhline(100 * result["intact"], color="black", lw=0.8, ls="--", label="intact")
    axes.set_xlabel("heads pruned (%)")
    axes.set_ylabel(f"dev {result['metric']} (%)")
    axes.set_title(f"Pruning heads (no retraining): {run_title(run)}, {checkpoint_title(checkpoint)}", fontsize=9)
    axes.legend(fontsize=7)
    axes.grid(alpha=0.3)
    return save(figure, path)


def draw_importance(importances: dict[str, Any], entry: dict[str, Any], run: dict[str, Any], path: Path) -> Path:
    """Michel et al.'s importance per head (normalised per layer) of each checkpoint that has
    one, and, for the fine-tuned one, against how much fine-tuning changed the head."""
    cosine = (entry.get("related") or {}).get("cosine", {})
    panels = len(importances) + len(cosine)
    layers, heads = np.asarray(next(iter(importances.values()))).shape
    figure, axes = plt.subplots(1, panels, figsize=(0.42 * heads * panels + 3.2, 0.42 * layers + 2.0),
                                squeeze=False, layout="constrained")
    for panel, (checkpoint, grid) in zip(axes[0], importances.items()):
        image = panel.imshow(np.asarray(grid), cmap="viridis", aspect="auto", vmin=0)
        style_head_axes(panel, layers, heads, f"{checkpoint_title(checkpoint)}: importance", tick_size=7)
        figure.colorbar(image, ax=panel, fraction=0.046)
    for panel, (pair, stats) in zip(axes[0][len(importances):], cosine.items()):
        after = pair.split("->")[1]
        if after in importances:
            panel.scatter(np.ravel(stats["cosine_per_head"]), np.ravel(importances[after]), s=10)
        rho = stats["importance_vs_cosine"]
        panel.set_xlabel("cosine similarity of the head's maps\n(pre-trained vs fine-tuned)")
        panel.xaxis.set_major_locator(MaxNLocator(4))  # similarities near 1 have long tick labels
        panel.set_ylabel(f"{checkpoint_title(after)} importance")
        panel.set_title("Spearman rho " + ("n/a" if rho is None else f"{rho:.2f}"), fontsize=9)
        panel.grid(alpha=0.3)
    suptitle(figure, f"Head importance (Michel et al., normalised per layer): {run_title(run)}")
    return save(figure, path)


def extremes(result: dict[str, Any], mode: str, count: int = 3) -> list[str]:
    """Table rows of the ``count`` heads whose disabling helps most and hurts most."""
    stats = {key: np.asarray(value) for key, value in result["heads"][mode].items() if key != "significant"}
    order = np.argsort(stats["delta"].ravel(), kind="stable")
    rows = []
    for label, chosen in (("helps", order[::-1][:count]), ("hurts", order[:count])):
        for flat in chosen:
            layer, head = np.unravel_index(flat, stats["delta"].shape)
            rows.append(f"| {mode} | {label} | {layer + 1}-{head + 1} | {percent(stats['delta'][layer, head])} | "
                        f"[{percent(stats['low'][layer, head])}, {percent(stats['high'][layer, head])}] | "
                        f"{stats['p'][layer, head]:.3g} | {stats['p_holm'][layer, head]:.3g} |")
    return rows


def ablation_markdown(entry: dict[str, Any], run: dict[str, Any]) -> str:
    """The disabling, importance and pruning results of each trained checkpoint as Markdown."""
    lines = [f"# Heads that matter: {run_title(run)}", ""]
    related = (entry.get("related") or {}).get("cosine", {})
    for checkpoint, result in per_checkpoint_results(entry).items():
        if not result["trained"]:
            note = result["importance"].get("skipped_because") or "importance below"
            lines += [f"{checkpoint_title(checkpoint)}: {result['note']}; importance: {note}.", ""]
            continue
        metric = result["metric"]
        lines += [f"**{checkpoint_title(checkpoint)}**: intact dev {metric} {100 * result['intact']:.1f} "
                  f"on {result['examples']} examples.", "",
                  "Changes in points, 95% paired bootstrap intervals, p-values "
                  + ("(exact McNemar)" if metric == "accuracy" else "(paired permutation test)")
                  + ", Holm-adjusted within each family.", "",
                  "| mode | disabling the head | layer-head | change | 95% interval | p | p (Holm) |", "|---|---|---|---|---|---|---|"]
        for mode in MODES:
            lines += extremes(result, mode)
        lines += ["", "| layer | " + " | ".join(f"{mode}: change [interval] (p Holm)" for mode in MODES) + " |",
                  "|---" * (len(MODES) + 1) + "|"]
        for layer in range(len(result["layers"][MODES[0]]["delta"])):
            cells = []
            for mode in MODES:
                stats = result["layers"][mode]
                cells.append(f"{percent(stats['delta'][layer])} [{percent(stats['low'][layer])}, "
                             f"{percent(stats['high'][layer])}] ({stats['p_holm'][layer]:.3g})")
            lines.append(f"| {layer + 1} | " + " | ".join(cells) + " |")
        lines += ["", "Significant after Holm (alpha 0.05): "
                  + ", ".join(f"{result[scope][mode]['significant']} {scope} ({mode})"
                              for scope in ("heads", "layers") for mode in MODES) + "."]
        lines += ["", f"Pruning: {pruning_sentence(result['pruning'])}."]
        correlations = ", ".join(f"{name.replace('_', ' ')} {value:+.2f}"
                                 for name, value in result["correlations"].items() if value is not None)
        if correlations:
            lines.append(f"Spearman: {correlations}.")
        for pair, stats in related.items():
            if pair.endswith(f"->{checkpoint}"):
                values = ", ".join(f"{name.replace('_', ' ')} {value:+.2f}" for name, value in stats.items()
                                   if name != "cosine_per_head" and value is not None)
                lines.append(f"Against each head's cosine similarity ({pair}): {values}.")
        lines.append("")
    return "\n".join(lines)
