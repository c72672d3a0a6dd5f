"""How much fine-tuning changes the representations, beside the attention: linear CKA (Kornblith
et al. 2019) between two checkpoints' hidden states, per layer, on the task's dev inputs (`cka`)
and on running text (`cka_text`).

For each declared pair and layer, linear CKA(X, Y) = ‖YᵀX‖²_F / (‖XᵀX‖_F ‖YᵀY‖_F) of the two
checkpoints' column-centred hidden states on the same inputs as the attention cosine: over the
ordinary tokens (up to `TOKENS_PER_EXAMPLE` seeded tokens of each input, special tokens left out)
and over the first token ([CLS], what a classification head reads); 1 for representations that
are the same up to a rotation and a scale. Beside each, its chance level (the same CKA with the
second checkpoint's rows shuffled: what unrelated inputs give at this sample size and width) and
the attention's cosine per layer on the same inputs. Intervals: the inputs fall in `BLOCKS`
seeded groups (`grams` keeps, per group pair, what the CKA of any resample is computed from); a
layer's CKA has a 95% jackknife interval over the groups (`layer_intervals`), the findings 95%
intervals over bootstrap resamples of the groups. Findings, judged on each run: representation change (1 - CKA) grows
with depth as attention change (1 - cosine) does (their rank correlation over layers), and
representations make half their change lower in the network than attention does (Hao et al.
2020); on running text (`cka_text`), both change less than on the task's inputs (Merchant et
al. 2020). Between seeds of a task, the same CKA of two fine-tunings is the yardstick.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import ClassVar, Literal, TypedDict

import numpy as np

from harness.results.checkpoints import MAIN_PAIR
from harness.results.entries import AnyEntry
from harness.results.run_record import RunSection
from harness.results.study_record import Elementwise, StudyRecord, TaskAggregate, view_part
from harness.views.across_tasks import study_title, task_colour
from harness.views.base import Claim, Entry, PaperPoint, Row, View, per_pair_results, register_view
from harness.views.evidence import (
    LEVEL,
    SEED,
    Changes,
    EffectVerdict,
    Packed,
    StoredUnits,
    UnitSums,
    Verdict,
    direction,
    interval_of,
    interval_verdict,
    resample_weights,
    unpack,
)
from harness.views.lazy import scipy_stats
from harness.views.markdown import markdown_table
from harness.views.metrics import Metric
from harness.views.palette import OKABE_ITO
from harness.views.samples import running_text_sample
from harness.views.saving import plt, save
from harness.views.seeds import elementwise
from harness.views.titles import checkpoint_title, run_title, suptitle

Kind = Literal["tokens", "cls"]
KINDS: tuple[Kind, ...] = ("tokens", "cls")  # the rows CKA is taken over: ordinary tokens, and each input's first token
KIND_TITLES = {"tokens": "tokens", "cls": "[CLS]"}
TOKENS_PER_EXAMPLE = 8  # seeded ordinary tokens of each input: the token rows stay few times the width
BLOCKS = 40  # seeded groups of inputs the bootstrap resamples: the stored grams are BLOCKS x BLOCKS per layer
GRAMS = ("xy", "xx", "yy")  # the three inner products CKA is a ratio of


class Similarity(TypedDict):
    """One kind's linear CKA per layer between a pair's hidden states, its 95% interval, its chance
    level, how many rows and how wide, and ``grams``: (layers, 3, groups, groups), the inner products
    of the groups' centred cross-products, ⟨X_gᵀY_g, X_hᵀY_h⟩ (and XX, YY), from which the CKA of
    any resample of the groups follows (`cka_of`)."""

    per_layer: list[float]
    low_per_layer: list[float]
    high_per_layer: list[float]
    chance_per_layer: list[float]
    rows: int
    width: int
    grams: Packed


class CkaPair(TypedDict):
    """A pair's representation change on one input source: each kind's `Similarity`, the
    attention's mean cosine per layer on the same inputs, each input's mean cosine per layer
    (``units``), how many inputs, and the seeded group of each input (``blocks``)."""

    tokens: Similarity
    cls: Similarity
    attention_cosine_per_layer: list[float]
    units: StoredUnits
    num_examples: int
    blocks: list[int]


class CkaResult(TypedDict):
    """What the analysis stores (one result for all checkpoints): each declared pair's, by pair name."""

    per_pair: dict[str, CkaPair]


def example_blocks(count: int, seed: int) -> np.ndarray:
    """The seeded group (of min(count, `BLOCKS`)) of each of ``count`` inputs: sizes differ by at most one."""
    return np.random.default_rng(seed).permutation(count) % max(min(count, BLOCKS), 1)


def cka_of(grams: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Linear CKA on each resample of the groups: ``grams`` (layers, 3, G, G) as `Similarity`
    keeps them, ``weights`` (R, G) how often each group is drawn; (R, layers). Each resample keeps
    the whole sample's centring (its own mean moves by O(1/√n), the CKA by O(1/n): below the
    interval's width), so a resample's CKA is a ratio of quadratic forms in its weights; with
    weights of 1 it is the sample's CKA exactly."""
    inner = np.einsum("rg,lkgh,rh->rlk", weights, grams, weights, optimize=True)
    return inner[..., 0] / np.sqrt(np.clip(inner[..., 1] * inner[..., 2], 1e-300, None))


def similarity_of(stored: Similarity) -> np.ndarray:
    """A stored similarity's grams as an array (layers, 3, G, G)."""
    return unpack(stored["grams"])


def layer_intervals(grams: np.ndarray) -> tuple[list[float], list[float], list[float]]:
    """Per layer, the CKA and the bounds of its 95% interval: the CKA plus or minus 1.96 jackknife
    standard errors over the groups (each left out once). A bootstrap of the groups draws some
    twice, and a duplicated group raises the CKA (its rows agree with themselves), so where the
    CKA is small its percentile interval can lie wholly above it (MiniLM on MRPC, layer 6: 0.136
    [0.137, 0.165]); leaving groups out duplicates none."""
    groups = grams.shape[-1]
    observed = cka_of(grams, np.ones((1, groups)))[0]
    left_out = cka_of(grams, 1 - np.eye(groups))  # (groups, layers)
    error = np.sqrt((groups - 1) / groups * ((left_out - left_out.mean(axis=0)) ** 2).sum(axis=0))
    spread = scipy_stats.norm.ppf(0.5 + LEVEL / 2) * error
    return observed.tolist(), (observed - spread).tolist(), (observed + spread).tolist()


def group_weights(pair: CkaPair, seed: int = SEED) -> np.ndarray:
    """Bootstrap weights of a pair's groups of inputs (R, groups)."""
    return resample_weights(int(max(pair["blocks"]) + 1), seed=seed)


def changes(pair: CkaPair, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of group ``weights`` (R, G), each layer's representation change (1 - the tokens'
    CKA) and attention change (1 - the mean cosine of the maps): two (R, layers) arrays."""
    representations = 1 - cka_of(similarity_of(pair["tokens"]), weights)
    per_input = weights[:, np.asarray(pair["blocks"])]  # each input weighs as its group is drawn
    attention = 1 - UnitSums.read(pair["units"]).ratios(per_input)
    return representations, attention


def rank_correlations(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Spearman's rho of each row of ``first`` with the same row of ``second`` (R, K): (R,), 0 where
    a row is constant."""
    a, b = (scipy_stats.rankdata(values, axis=1) for values in (first, second))
    a, b = a - a.mean(axis=1, keepdims=True), b - b.mean(axis=1, keepdims=True)
    scale = np.sqrt((a * a).sum(axis=1) * (b * b).sum(axis=1))
    return np.divide((a * b).sum(axis=1), scale, out=np.zeros(len(a)), where=scale > 0)


def half_way_layer(change: np.ndarray) -> np.ndarray:
    """Per row (R, layers) of per-layer changes, the layer by which half their sum over the layers
    is reached, interpolated within the layer that crosses it (layer 1 spans 0 to 1): (R,)."""
    steps = np.clip(change, 0, None)
    total = steps.sum(axis=1, keepdims=True)
    reached = np.divide(np.cumsum(steps, axis=1), total, out=np.zeros_like(steps), where=total > 0)
    crossing = (reached >= 0.5).argmax(axis=1)
    rows = np.arange(len(steps))
    before = np.where(crossing > 0, reached[rows, crossing - 1], 0.0)
    inside = np.divide(
        0.5 - before, reached[rows, crossing] - before, out=np.zeros(len(steps)), where=reached[rows, crossing] > before
    )
    return crossing + inside


def layer_series(stats: CkaPair, series: str) -> list[float]:
    """One of a pair's per-layer series (`CkaView.series`): a kind's CKA, or the attention's cosine."""
    if series == "tokens":
        return stats["tokens"]["per_layer"]
    if series == "cls":
        return stats["cls"]["per_layer"]
    if series == "attention_cosine":
        return stats["attention_cosine_per_layer"]
    raise ValueError(f"no per-layer series {series!r} in a CKA pair's result")


def main_pair(entry: CkaEntry) -> CkaPair | None:
    """The pre-trained to fine-tuned pair's stored result, or None."""
    return per_pair_results(entry).get(MAIN_PAIR)


def interval_evidence(observed: float, samples: np.ndarray, unit: str, count: int, statistic: str) -> EffectVerdict:
    """A statistic with its 95% interval over ``samples`` and its verdict: holds above 0, fails below."""
    return {"value": float(observed), **interval_verdict(interval_of(samples), unit, count, statistic)}


def follows_attention(entry: CkaEntry) -> Verdict | None:
    """Spearman's rho over layers of the representation change (1 - CKA of the tokens) with the
    attention change (1 - cosine), with its 95% interval over resamples of the inputs; holds when
    the interval lies above 0. None without the main pair, or under three layers to rank."""
    pair = main_pair(entry)
    if pair is None or len(pair["tokens"]["per_layer"]) < 3:
        return None
    observed = rank_correlations(*changes(pair, np.ones((1, int(max(pair["blocks"]) + 1)))))[0]
    samples = rank_correlations(*changes(pair, group_weights(pair)))
    return interval_evidence(
        observed,
        samples,
        entry_unit(pair),
        pair["num_examples"],
        "Spearman's rho over layers of 1 - CKA of the tokens' hidden states with 1 - cosine of the attention maps",
    )


def changes_lower(entry: CkaEntry) -> Verdict | None:
    """The layer by which the attention makes half its summed change over the layers, minus the
    layer by which the representations do (`half_way_layer`), with its 95% interval; above 0 (the
    representations' change sits lower) holds. None without the main pair or a second layer."""
    pair = main_pair(entry)
    if pair is None or len(pair["tokens"]["per_layer"]) < 2:
        return None

    def difference(weights: np.ndarray) -> np.ndarray:
        representations, attention = changes(pair, weights)
        return half_way_layer(attention) - half_way_layer(representations)

    observed = difference(np.ones((1, int(max(pair["blocks"]) + 1))))[0]
    return interval_evidence(
        observed,
        difference(group_weights(pair)),
        entry_unit(pair),
        pair["num_examples"],
        "the layer by which 1 - cosine of the attention makes half its summed change minus the layer by "
        "which 1 - CKA of the tokens' hidden states does",
    )


def entry_unit(pair: CkaPair) -> str:
    """What the pair's inputs are (its units' name)."""
    return pair["units"]["unit"]


class AgainstInputs(EffectVerdict):
    """A measure's change on the task's inputs minus on running text (`against_other_inputs`): its
    mean over layers as a verdict, and each layer's difference with its interval and direction."""

    per_layer: list[float]
    per_layer_interval: list[list[float]]
    per_layer_direction: list[str]


def against_other_inputs(own: CkaPair, other: CkaPair) -> dict[str, AgainstInputs]:
    """Per measure (``representations``: 1 - CKA of the tokens; ``attention``: 1 - cosine), its
    change on ``other``'s inputs (the task's) minus on ``own``'s (running text): the mean over
    layers with its 95% interval (the two samples resampled each on its own) and verdict (above 0:
    less change on ``own``'s inputs), and each layer's difference with its interval."""
    count = int(max(own["blocks"]) + 1)
    mine, theirs = changes(own, group_weights(own, SEED + 1)), changes(other, group_weights(other))
    observed_mine = changes(own, np.ones((1, count)))
    observed_theirs = changes(other, np.ones((1, int(max(other["blocks"]) + 1))))
    found: dict[str, AgainstInputs] = {}
    for index, measure in enumerate(("representations", "attention")):
        samples = theirs[index] - mine[index]
        observed = observed_theirs[index][0] - observed_mine[index][0]
        intervals = np.asarray(interval_of(samples)).T
        evidence = interval_evidence(
            observed.mean(),
            samples.mean(axis=1),
            f"{entry_unit(other)} and {entry_unit(own)}",
            other["num_examples"] + own["num_examples"],
            f"mean over layers of {MEASURES[measure]} on the task's dev inputs minus on running text",
        )
        found[measure] = {
            **evidence,
            "per_layer": observed.tolist(),
            "per_layer_interval": intervals.tolist(),
            "per_layer_direction": [direction(bounds) for bounds in intervals],
        }
    return found


MEASURES = {"representations": "1 - CKA of the tokens' hidden states", "attention": "1 - cosine of the attention maps"}


def out_of_domain_judge(measure: str) -> Callable[[CkaEntry], Verdict | None]:
    """A judge: whether ``measure`` changes less on running text than on the task's inputs, from what
    the running-text entry's ``related`` part holds for the main pair."""

    def judge(entry: CkaEntry) -> Verdict | None:
        related = (entry.get("related") or {}).get("task_inputs", {}).get(MAIN_PAIR)
        return None if related is None else related[measure]

    return judge


def cka_change(before: CkaPair, after: CkaPair) -> Changes:
    """Per layer, the tokens' CKA of ``after`` minus that of ``before``, two pairs measured on the same
    inputs in the same groups (two seeds' fine-tuned models against the pre-trained and fine-tuned
    model of the first): the change, its 95% paired interval and its direction."""
    weights = group_weights(before)
    groups = weights.shape[1]
    first, second = similarity_of(before["tokens"]), similarity_of(after["tokens"])
    observed = cka_of(second, np.ones((1, groups)))[0] - cka_of(first, np.ones((1, groups)))[0]
    intervals = np.asarray(interval_of(cka_of(second, weights) - cka_of(first, weights))).T
    return {
        "value": observed.tolist(),
        "interval": intervals.tolist(),
        "unit": entry_unit(before),
        "n": before["num_examples"],
        "direction": [direction(bounds) for bounds in intervals],
    }


def interval_cells(stored: Similarity) -> list[str]:
    """Per layer, ``0.912 [0.905, 0.920] (chance 0.08)``."""
    return [
        f"{value:.3f} [{low:.3f}, {high:.3f}] (chance {chance:.2f})"
        for value, low, high, chance in zip(
            stored["per_layer"], stored["low_per_layer"], stored["high_per_layer"], stored["chance_per_layer"]
        )
    ]


CkaEntry = Entry[CkaResult]


class CkaSeries(TypedDict):
    """The main pair's CKA per layer over a task's seeds, element by element: each kind's (`KINDS`)
    and the attention's cosine on the same inputs."""

    tokens: Elementwise
    cls: Elementwise
    attention_cosine: Elementwise


# What a study keeps of a CKA view in a task's aggregate (`CkaView.across_seeds`): its series under the
# view's name, which differs between `CkaView` and `CkaTextView` (a TypedDict's keys are fixed names).
CkaAcrossSeeds = dict[str, CkaSeries]


def cka_part(entry: TaskAggregate, name: str) -> CkaSeries | None:
    """The CKA view ``name``'s part of a task's aggregate, as declared (`view_part`), or None where
    the task has none."""
    return view_part(entry, CkaAcrossSeeds).get(name)


def cka_series(
    entry: TaskAggregate, name: str, kind: Literal["tokens", "cls", "attention_cosine"]
) -> Elementwise | None:
    """One series of the CKA view ``name``'s part of a task's aggregate, or None where the task has none."""
    kept = cka_part(entry, name)
    return None if kept is None else kept[kind]


@register_view
class CkaView(View[CkaResult]):
    """Class attributes beyond `View`'s: ``inputs`` (what was measured, as titles name it)."""

    name = "cka"
    order = 25
    version = 2  # 2: a layer's interval by the jackknife over groups (the bootstrap's lay above small CKAs)
    stored = CkaResult
    per_layer_keys = {f"{kind}_per_layer": kind for kind in ("attention_cosine", "chance", "high", "low")}
    # nothing left out of the docs' snapshots: every interval shown is recomputed from the grams and units
    inputs: ClassVar[str] = "the task's dev inputs"
    claims = {
        "representation_change_follows_attention_change": Claim(
            "representation change (1 - linear CKA of the tokens' hidden states) grows with depth as attention "
            "change (1 - cosine) does: their rank correlation over layers is above 0",
            follows_attention,
        ),
        "representations_change_lower_than_attention": Claim(
            "representations make half their change (summed over layers) in a lower layer than attention does",
            changes_lower,
        ),
    }
    papers = {
        "representations_change_lower_than_attention": PaperPoint(
            "Hao et al. 2020, Sections 4-5",
            "fine-tuning BERT changes the attention (JS divergence) mainly in the last layers and the features "
            "(SVCCA distance) in the intermediate and last layers too (measured over fine-tuning steps; here "
            "cosine of the maps and linear CKA at the end of fine-tuning)",
            "holds",
        )
    }

    @classmethod
    def along_layers(cls, metric: Metric) -> bool:
        """The first pair's CKA of the tokens per layer (``cka_tokens_layer_2``)."""
        return metric.layer is not None and not metric.pair_said and metric.detail == KINDS[0]

    @classmethod
    def metrics(cls, entry: CkaEntry) -> list[Metric]:
        """Per pair, each kind's CKA per layer and its mean over layers (the first pair's names leave
        the pair unsaid: ``cka_tokens_layer_2``, ``cka_cls_mean``)."""
        out = []
        for index, (pair, stats) in enumerate(zip(entry["pairs"], per_pair_results(entry).values())):
            record = Metric(cls.name, cls.name, pair=(pair[0], pair[1]), pair_said=index > 0)
            for kind in cls.series():
                values = layer_series(stats, kind)
                out += [replace(record, detail=kind, layer=layer, value=v) for layer, v in enumerate(values, 1)]
                out.append(replace(record, detail=f"{kind}_mean", value=float(np.mean(values))))
        return out

    @classmethod
    def series(cls) -> tuple[str, ...]:
        """The per-layer series its metrics give: each kind's CKA (and, where the cosine analysis does
        not give it on these inputs, the attention's cosine)."""
        return KINDS

    @classmethod
    def headline(cls, entry: CkaEntry, metrics: list[Metric]) -> list[Metric]:
        """The first pair's mean CKA over layers, of the tokens and of [CLS]."""
        wanted = {f"{kind}_mean" for kind in KINDS}
        return [metric for metric in metrics if not metric.pair_said and metric.detail in wanted]

    @classmethod
    def draw(cls, entry: CkaEntry, run: RunSection, out_dir: Path) -> list[Path]:
        """Per layer, 1 - CKA of each kind with its 95% band, and 1 - cosine of the attention, per pair."""
        pairs = per_pair_results(entry)
        if not pairs:
            return []
        figure, axes = plt.subplots(figsize=(6, 3.8))
        styles = {"tokens": "-", "cls": ":"}
        for index, ((before, after), stats) in enumerate(zip(entry["pairs"], pairs.values())):
            colour = list(OKABE_ITO.values())[index % len(OKABE_ITO)]
            compared = f"{checkpoint_title(before)} vs {checkpoint_title(after)}"
            layers = np.arange(1, len(stats["tokens"]["per_layer"]) + 1)
            for kind in KINDS:
                similarity = stats[kind]
                axes.plot(
                    layers,
                    1 - np.asarray(similarity["per_layer"]),
                    color=colour,
                    linestyle=styles[kind],
                    marker="o",
                    label=f"1 - CKA, {KIND_TITLES[kind]} ({compared})",
                )
                axes.fill_between(
                    layers,
                    1 - np.asarray(similarity["high_per_layer"]),
                    1 - np.asarray(similarity["low_per_layer"]),
                    color=colour,
                    alpha=0.15,
                    linewidth=0,
                )
            axes.plot(
                layers,
                1 - np.asarray(stats["attention_cosine_per_layer"]),
                color=colour,
                linestyle="--",
                marker="s",
                label=f"1 - cosine of the attention ({compared})",
            )
            axes.set_xticks(layers)
        axes.set_xlabel("layer")
        axes.set_ylabel("change (1 - similarity)")
        axes.grid(alpha=0.3)
        axes.legend(fontsize=7)
        suptitle(figure, f"{run_title(run)}: representation and attention change per layer on {cls.input_title(entry)}")
        return [save(figure, out_dir / f"{cls.name}_per_layer.png")]

    @classmethod
    def input_title(cls, entry: CkaEntry) -> str:
        """What the entry was measured on, for titles."""
        return cls.inputs

    @classmethod
    def tables(cls, entry: CkaEntry, run: RunSection) -> dict[str, str]:
        pair = main_pair(entry)
        if pair is None:
            return {}
        rows = [
            [str(layer), tokens, cls_cell, f"{cosine:.3f}"]
            for layer, (tokens, cls_cell, cosine) in enumerate(
                zip(interval_cells(pair["tokens"]), interval_cells(pair["cls"]), pair["attention_cosine_per_layer"]), 1
            )
        ]
        title = (
            f"# Linear CKA of the pre-trained and fine-tuned hidden states: {run_title(run)}, {cls.input_title(entry)} "
            f"({pair['num_examples']} {entry_unit(pair)}; {pair['tokens']['rows']} token rows, width "
            f"{pair['tokens']['width']}; 95% jackknife intervals over {max(pair['blocks']) + 1} groups of the inputs)"
        )
        return {
            f"{cls.name}_table": f"{title}\n\n"
            + markdown_table(["layer", "CKA, tokens", "CKA, [CLS]", "attention cosine"], rows)
        }

    @classmethod
    def printed(cls, entry: CkaEntry) -> list[str]:
        pair = main_pair(entry)
        if pair is None:
            return []
        return [
            f"linear CKA per layer on {cls.inputs} ({KIND_TITLES[kind]}): "
            + " ".join(f"{value:.3f}" for value in pair[kind]["per_layer"])
            for kind in KINDS
        ]

    @classmethod
    def overview_rows(cls, entries: dict[str, AnyEntry], run: RunSection) -> list[Row]:
        """The tokens' CKA per layer between the pre-trained and fine-tuned hidden states."""
        pair = main_pair(entries[cls.name])
        if pair is None:
            return []
        values = pair["tokens"]["per_layer"]
        return [
            (
                f"linear CKA of the hidden states per layer 1..{len(values)} ({cls.inputs})",
                "",
                " ".join(f"{value:.3f}" for value in values),
                "",
            )
        ]

    @classmethod
    def across_seeds(cls, entries: list[CkaEntry]) -> CkaAcrossSeeds:
        """Each kind's CKA per layer and the attention's cosine on the same inputs, over seeds."""
        pairs = [pair for entry in entries if (pair := main_pair(entry)) is not None]
        if not pairs:
            return {}
        return {
            cls.name: {
                "tokens": elementwise([pair["tokens"]["per_layer"] for pair in pairs]),
                "cls": elementwise([pair["cls"]["per_layer"] for pair in pairs]),
                "attention_cosine": elementwise([pair["attention_cosine_per_layer"] for pair in pairs]),
            }
        }

    @classmethod
    def study_parts(cls, study: StudyRecord) -> dict[str, tuple[CkaSeries, TaskAggregate]]:
        """Each task of ``study`` with this view's part: the part, and the task's whole aggregate
        (which holds the comparison between its seeds)."""
        return {
            task: (kept, entry)
            for task, entry in study["tasks"].items()
            if (kept := cka_part(entry, cls.name)) is not None
        }

    @classmethod
    def study_tables(cls, study: StudyRecord) -> dict[str, str]:
        """The tokens' CKA per layer and task (mean ± s.d. over seeds) and, under each task with two
        seeds or more, the CKA between two seeds' fine-tuned models."""
        tasks = cls.study_parts(study)
        if not tasks:
            return {}
        layers = max(len(kept["tokens"]["mean"]) for kept, _ in tasks.values())
        rows = []
        for task, (kept, entry) in tasks.items():
            rows.append([task, "pre-trained vs fine-tuned", *spread_cells(kept["tokens"])])
            between = entry.get("between_seeds", {}).get(cls.name)
            if between is not None:
                rows.append(
                    [task, f"between seeds ({between['per_layer']['n']} pairs)", *spread_cells(between["per_layer"])]
                )
        return {
            f"{cls.name}_per_layer_by_task": markdown_table(
                ["task", "compared", *(f"layer {n}" for n in range(1, layers + 1))],
                [row + ["-"] * (layers + 2 - len(row)) for row in rows],
            )
        }

    @classmethod
    def draw_study(cls, study: StudyRecord, out_dir: Path) -> list[Path]:
        """1 - CKA of the tokens per layer, a line per task, and dashed the same between two seeds."""
        tasks = cls.study_parts(study)
        if not tasks:
            return []
        figure, axes = plt.subplots(figsize=(5.4, 3.6), layout="constrained")
        for index, (task, (kept, entry)) in enumerate(tasks.items()):
            mean = 1 - np.asarray(kept["tokens"]["mean"])
            layers = np.arange(1, len(mean) + 1)
            axes.plot(layers, mean, marker="o", color=task_colour(index), label=task)
            between = entry.get("between_seeds", {}).get(cls.name)
            if between is not None:
                axes.plot(
                    layers, 1 - np.asarray(between["per_layer"]["mean"]), linestyle="--", color=task_colour(index)
                )
            axes.set_xticks(layers)
        axes.set_xlabel("layer")
        axes.set_ylabel("1 - linear CKA of the tokens")
        axes.grid(alpha=0.3)
        axes.legend(fontsize=8, ncols=2)
        suptitle(
            figure,
            study_title(
                study,
                f"Representation change per layer on {cls.inputs}: pre-trained vs fine-tuned (solid), "
                "two seeds' fine-tunings (dashed)",
            ),
        )
        return [save(figure, out_dir / f"{cls.name}_per_layer_by_task.png")]


def spread_cells(per_layer: Elementwise) -> list[str]:
    """A spread per layer as table cells: ``0.912 ± 0.004``."""
    return [f"{mean:.3f} ± {std:.3f}" for mean, std in zip(per_layer["mean"], per_layer["std"])]


RUNNING_TEXT = "two-paragraph segments of running text"


@register_view
class CkaTextView(CkaView):
    name = "cka_text"
    samples = running_text_sample
    order = 75
    version = 2
    inputs = RUNNING_TEXT
    claims = {
        "representations_change_less_out_of_domain": Claim(
            "fine-tuning changes the representations (1 - CKA of the tokens, mean over layers) less on running "
            "text than on the task's dev inputs",
            out_of_domain_judge("representations"),
        ),
        "attention_changes_less_out_of_domain": Claim(
            "fine-tuning changes the attention (1 - cosine of the maps, mean over layers) less on running text "
            "than on the task's dev inputs",
            out_of_domain_judge("attention"),
        ),
    }
    papers = {
        "representations_change_less_out_of_domain": PaperPoint(
            "Merchant et al. 2020, Section 5",
            "fine-tuning changes the representations of out-of-domain sentences less than in-domain ones (RSA "
            "of BERT-base's layers, MNLI and SQuAD; here linear CKA, and running text of another kind and length "
            "than the task's inputs)",
            "holds",
        )
    }

    @classmethod
    def series(cls) -> tuple[str, ...]:
        return (*KINDS, "attention_cosine")

    @classmethod
    def along_layers(cls, metric: Metric) -> bool:
        """None: along fine-tuning, the per-layer CKA charted is the task inputs' (`CkaView`)."""
        return False

    @classmethod
    def input_title(cls, entry: CkaEntry) -> str:
        """``two-paragraph segments of UD English EWT r2.16`` (or of the ``--corpus`` file)."""
        notes = entry.get("source", {}).get("notes", {})
        text = notes.get("text") or notes.get("corpus")
        return f"two-paragraph segments of {text}" if text else cls.inputs

    @classmethod
    def overview_rows(cls, entries: dict[str, AnyEntry], run: RunSection) -> list[Row]:
        return []
