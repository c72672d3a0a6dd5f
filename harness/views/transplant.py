"""Does the fine-tuned model need its changed attention? The attention transplant: the fine-tuned
model scored with the pre-trained model's attention maps in place of its own.

On the main dev split (the ablation's examples: ``--ablation-examples``), the fine-tuned model
runs with the post-softmax attention of one head, of one layer, of every layer from k up, of
every layer but k, or of all layers replaced by the pre-trained model's maps of the same input
(its values, output projections and feed-forward layers stay the fine-tuned ones). Per variant,
the dev score and its change from the intact fine-tuned model; each family (single heads; single
layers; layers k and up; every layer but k) tested with paired tests (exact McNemar for accuracy,
a permutation test otherwise) and Holm's correction, each change shown with its simultaneous
interval (Bonferroni over the family), and "helps" or "hurts" said by the Holm test alone; the
share of the fine-tuned model's gain over the majority class that it keeps with all attention
pre-trained, and whether the last two layers' attention costs more to replace than the first
two layers', each with its 95% paired bootstrap interval. A tagging task scores its words. Each
variant's predictions are stored, so every number can be recomputed. A study draws, per task,
the score with each layer's attention transplanted beside how much that layer's attention and
representations changed (`harness.views.cka`).
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Generic, Literal, NotRequired, TypedDict, TypeVar, final

import numpy as np

from harness.config import SWITCH_CHOICES, Settings, analysis_settings
from harness.options import option
from harness.results.checkpoints import MAIN_PAIR
from harness.results.entries import AnyEntry
from harness.results.run_record import RunSection
from harness.results.study_record import Elementwise, Spread, StudyRecord, TaskAggregate, view_part
from harness.views.across_tasks import study_title
from harness.views.base import Claim, Entry, Members, PaperPoint, Row, View, pair_name, per_pair_results, register_view
from harness.views.cka import CkaTextView, CkaView, cka_series
from harness.views.cosine import cosine_per_layer
from harness.views.drawing import draw_head_grid, panels_for
from harness.views.evidence import EffectVerdict, Verdict, described
from harness.views.markdown import markdown_table
from harness.views.metrics import BOUNDS, Metric
from harness.views.palette import GREY, OKABE_ITO
from harness.views.samples import intervention_sample
from harness.views.saving import plt, save
from harness.views.seeds import elementwise, spread
from harness.views.titles import run_title, suptitle

ANALYSIS = "transplant"
ALPHA = 0.05  # the family-wise error rate of Holm's correction and of the simultaneous intervals
EDGE_LAYERS = 2  # the finding compares the first two layers' attention with the last two layers'
# The variants in the order their predictions are stored, each a family's rows: the intact model,
# every single head (layer-major), then per layer k: k alone, k and up, all but k; the first two layers.
ROWS = ("intact", "heads", "alone", "from", "all_but", "first_two")
LAYER_FAMILIES = ("alone", "from", "all_but")  # the families of one variant per layer
FAMILY_TITLES = {
    "heads": "one head",
    "alone": "layer k alone",
    "from": "layers k and up",
    "all_but": "every layer but k",
}


def family_rows(family: str, layers: int, heads: int) -> slice:
    """The rows of ``family``'s variants among the stored predictions (`ROWS`)."""
    sizes = {"intact": 1, "heads": layers * heads, "alone": layers, "from": layers, "all_but": layers, "first_two": 1}
    start = sum(sizes[name] for name in ROWS[: ROWS.index(family)])
    return slice(start, start + sizes[family])


def variant_count(layers: int, heads: int) -> int:
    """How many variants the transplant scores on a model of ``layers`` x ``heads``."""
    return family_rows(ROWS[-1], layers, heads).stop


class Encoded(TypedDict):
    """A numeric array as JSON: its shape, its dtype and its bytes in base64."""

    shape: list[int]
    dtype: str
    data: str


def encode(array: np.ndarray, dtype: str) -> Encoded:
    """``array`` as `Encoded`, in ``dtype`` (little-endian)."""
    values = np.ascontiguousarray(array, dtype=np.dtype(dtype).newbyteorder("<"))
    return {"shape": list(values.shape), "dtype": dtype, "data": base64.b64encode(values.tobytes()).decode("ascii")}


def decode(encoded: Encoded) -> np.ndarray:
    """`encode`'s JSON back to the array."""
    raw = np.frombuffer(base64.b64decode(encoded["data"]), dtype=np.dtype(encoded["dtype"]).newbyteorder("<"))
    return raw.reshape(encoded["shape"]).copy()


class StoredPredictions(TypedDict):
    """Every variant's predictions (variants, units), kept as the intact model's (row 0) and, for
    the other rows, only where they differ from it: their flat positions and their values (most
    single heads change a handful of predictions)."""

    shape: list[int]
    intact: Encoded
    changed_at: Encoded
    changed_to: Encoded


def store_predictions(rows: np.ndarray) -> StoredPredictions:
    """(variants, units) predictions as `StoredPredictions`."""
    changed = np.flatnonzero((rows != rows[0]).ravel())
    return {
        "shape": list(rows.shape),
        "intact": encode(rows[0], "float32"),
        "changed_at": encode(changed, "int64"),
        "changed_to": encode(rows.ravel()[changed], "float32"),
    }


def stored_predictions(stored: StoredPredictions) -> np.ndarray:
    """The (variants, units) predictions `store_predictions` kept (float64)."""
    rows = np.tile(decode(stored["intact"]).astype(np.float64), (stored["shape"][0], 1))
    rows.ravel()[decode(stored["changed_at"])] = decode(stored["changed_to"])
    return rows


Grid = TypeVar("Grid", bound=Members)  # a family's shape: layers x heads (every head) or per layer


class TransplantFamily(TypedDict, Generic[Grid]):
    """One family of variants (every head, or one variant per layer): the score of each, its change
    from the intact model, the simultaneous interval of that change (Bonferroni over the family:
    ``low``, ``high``), the paired p-values and Holm's adjustment, and how many members help and
    hurt after Holm."""

    score: Grid
    delta: Grid
    low: Grid
    high: Grid
    p: Grid
    p_holm: Grid
    helps: int
    hurts: int


class KeptShare(EffectVerdict):
    """The share of the fine-tuned model's gain over the majority class that it keeps with all
    attention pre-trained (`harness.analyses.transplant.share_kept`): its value, interval and
    verdict against one half, and how many resamples had no gain (left out)."""

    undefined_resamples: int


@final
class NoGain(TypedDict):
    """`KeptShare` where the fine-tuned model is not above the majority class: no value, and why."""

    value: None
    note: str
    unit: str
    n: int
    statistic: str


ShareKept = KeptShare | NoGain


class TransplantPair(TypedDict):
    """The transplant of one pair's first checkpoint's attention into its second (trained) one: the
    metric and its units, the intact and majority-class scores, the families (``heads``, and
    per layer ``layers``: ``alone``, ``from``, ``all_but``), the share of the gain over the majority
    class kept with all attention transplanted, the last two layers against the first two
    (models of more than two layers), and the labels and every variant's predictions (`ROWS`)."""

    metric: str
    unit: str
    examples: int
    intact: float
    majority: float
    majority_prediction: float
    heads: TransplantFamily[list[list[float]]]
    layers: dict[str, TransplantFamily[list[float]]]
    share_kept: ShareKept
    last_two_vs_first_two: NotRequired[EffectVerdict]
    labels: Encoded
    predictions: StoredPredictions


class TransplantResult(TypedDict):
    """What the transplant stores (one result for all checkpoints): each transplanted pair's, by pair name."""

    per_pair: dict[str, TransplantPair]


def main_result(entry: TransplantEntry) -> TransplantPair | None:
    """The pre-trained into fine-tuned transplant of a run, or None where it has none."""
    return per_pair_results(entry).get(MAIN_PAIR)


def evidence_judge(key: Literal["share_kept", "last_two_vs_first_two"]) -> Callable[[TransplantEntry], Verdict | None]:
    """A judge reading the main pair's stored evidence under ``key`` (None where it is undefined)."""

    def judge(entry: TransplantEntry) -> Verdict | None:
        result = main_result(entry)
        evidence = None if result is None else result.get(key)
        return evidence if evidence and "verdict" in evidence else None  # a verdict is a word, never empty

    return judge


def points(value: float) -> str:
    """A change of the score in points, signed, to one decimal."""
    return f"{100 * value:+.1f}"


def change_cell(family: TransplantFamily[Grid], index: tuple[int, ...]) -> str:
    """``-4.2 [-7.9, -0.5] p=0.003 hurts``: a member's change with its simultaneous interval, its
    Holm-adjusted p, and what the Holm test says (nothing where it says nothing)."""

    def at(values: Members) -> float:
        return float(np.asarray(values, dtype=float)[index])

    delta, p_holm = at(family["delta"]), at(family["p_holm"])
    said = verdict_word(delta, p_holm)
    return (
        f"{points(delta)} [{points(at(family['low']))}, {points(at(family['high']))}] "
        f"p={p_holm:.2g}{' ' + said if said else ''}"
    )


def verdict_word(delta: float, p_holm: float) -> str:
    """``helps`` or ``hurts`` where the Holm-adjusted test rejects no change, else nothing."""
    if p_holm >= ALPHA or delta == 0:
        return ""
    return "helps" if delta > 0 else "hurts"


def share_sentence(share: ShareKept) -> str:
    """The share of the gain over the majority class kept with all attention transplanted."""
    if share["value"] is None:
        return f"share of the gain over the majority class kept: undefined ({share['note']})"
    low, high = share["interval"]
    return (
        f"with all attention pre-trained the model keeps {share['value']:.2f} of its gain over the majority "
        f"class [{low:.2f}, {high:.2f}] (95% bootstrap over {share['n']} {share['unit']}; {share['verdict']})"
    )


def transplant_metric(
    statistic: str,
    pair: tuple[str, str],
    index: int,
    value: float | None,
    detail: str = "",
    layer: int | None = None,
) -> Metric:
    """A pair's transplant metric (the first pair's name leaves it unsaid: ``transplant_share_kept``)."""
    return Metric(ANALYSIS, f"transplant_{statistic}", detail, pair=pair, layer=layer, pair_said=index > 0, value=value)


def family_grid(
    result: TransplantPair, family: str
) -> TransplantFamily[list[list[float]]] | TransplantFamily[list[float]]:
    """The stored grids of a family: ``heads``, or a per-layer one."""
    return result["heads"] if family == "heads" else result["layers"][family]


def layer_table(result: TransplantPair) -> str:
    """Per layer, the score with its attention alone transplanted and the change of each per-layer
    family with its simultaneous interval and Holm-adjusted p."""
    alone = result["layers"]["alone"]
    rows = [
        [
            str(layer + 1),
            f"{100 * alone['score'][layer]:.1f}",
            *(change_cell(result["layers"][family], (layer,)) for family in LAYER_FAMILIES),
        ]
        for layer in range(len(alone["score"]))
    ]
    return markdown_table(
        [
            "layer k",
            f"dev {result['metric']}, layer k's attention pre-trained",
            *(f"change: {FAMILY_TITLES[family]}" for family in LAYER_FAMILIES),
        ],
        rows,
    )


def head_lines(result: TransplantPair) -> list[str]:
    """The single heads whose transplant helps or hurts after Holm's correction over all heads."""
    heads = result["heads"]
    deltas, adjusted = np.asarray(heads["delta"]), np.asarray(heads["p_holm"])
    found = [
        f"{layer + 1}-{head + 1}: {change_cell(heads, (layer, head))}"
        for layer, head in zip(*np.nonzero(adjusted < ALPHA))
        if deltas[layer, head] != 0
    ]
    return found or [f"no single head's transplant changes the score after Holm's correction over {deltas.size} heads"]


def summary_lines(result: TransplantPair) -> list[str]:
    """What the run says overall: the intact and majority scores, the share kept, the edge layers."""
    everything = result["layers"]["from"]
    lines = [
        f"intact fine-tuned dev {result['metric']} {100 * result['intact']:.1f}, majority class "
        f"{100 * result['majority']:.1f} ({result['examples']} {result['unit']})",
        f"all layers' attention pre-trained: {100 * everything['score'][0]:.1f} "
        f"({change_cell(everything, (0,))}, the first member of the 'layers k and up' family)",
        share_sentence(result["share_kept"]),
    ]
    if "last_two_vs_first_two" in result:
        evidence = result["last_two_vs_first_two"]
        lines.append(
            "score with the first two layers' attention pre-trained minus with the last two layers': "
            f"{described(evidence)} ({evidence['verdict']})"
        )
    return lines


@analysis_settings
@dataclass
class TransplantSwitch(Settings):
    """Whether a run adds the transplant (`harness.analyses.transplant.Transplant.switch`): a choice of
    what runs, in no result's key."""

    transplant: str = option(
        "auto",
        "attention transplant: the fine-tuned model scored with the pre-trained model's attention in "
        "one head, one layer, layers k and up, all but layer k, all layers (docs/transplant.md): a "
        "few hundred passes over the dev split, each starting at its first changed layer; auto = "
        "on when the model runs on a GPU, off on the CPU",
        choices=SWITCH_CHOICES,
        before="ablation_examples",
    )


TransplantEntry = Entry[TransplantResult]


class TransplantSeries(TypedDict):
    """The main pair's transplant over a task's seeds: per layer the score with that layer's attention
    alone pre-trained (element by element), the intact and majority scores, and their metric."""

    alone_score: Elementwise
    intact: Spread
    majority: Spread
    metric: str


class TransplantAcrossSeeds(TypedDict, total=False):
    """What a study keeps of the transplant in a task's aggregate (`TransplantView.across_seeds`):
    nothing where no seed has the main pair."""

    transplant: TransplantSeries


def transplant_part(entry: TaskAggregate) -> TransplantSeries | None:
    """The transplant's part of a task's aggregate, as declared (`view_part`), or None where the task has none."""
    return view_part(entry, TransplantAcrossSeeds).get("transplant")


def transplant_parts(study: StudyRecord) -> dict[str, tuple[TransplantSeries, TaskAggregate]]:
    """Each task of ``study`` with the transplant's part: the part, and the task's whole aggregate
    (which holds the other views' series drawn beside it)."""
    return {
        task: (kept, entry) for task, entry in study["tasks"].items() if (kept := transplant_part(entry)) is not None
    }


@register_view
class TransplantView(View[TransplantResult]):
    name = ANALYSIS
    samples = intervention_sample
    order = 165
    version = 1
    stored = TransplantResult
    # nothing left out of the docs' snapshots: every interval shown is recomputed from the stored predictions
    claims = {
        "last_two_layers_cost_more": Claim(
            "replacing the last two layers' attention with the pre-trained one costs the fine-tuned model more "
            "dev score than replacing the first two layers'",
            evidence_judge("last_two_vs_first_two"),
        ),
        "pretrained_attention_keeps_most_of_the_gain": Claim(
            "with all attention pre-trained, the fine-tuned model keeps over half of its dev gain over the "
            "majority class (the share's 95% interval above one half; below it, the claim fails)",
            evidence_judge("share_kept"),
        ),
    }
    papers = {
        "last_two_layers_cost_more": PaperPoint(
            "Kovaleva et al. 2019, Fig. 5",
            "fine-tuning changes the last two layers' attention most; whether the model needs that change "
            "was not measured (no paper transplanted attention)",
        ),
    }

    @classmethod
    def metrics(cls, entry: TransplantEntry) -> list[Metric]:
        """Per pair: the intact and majority scores, all attention transplanted (score, change and the
        share kept with its bounds), the edge layers' comparison with its bounds, per layer each
        family's score and change, and how many members of each family help and hurt after Holm."""
        out = []
        pairs = {pair_name((before, after)): (before, after) for before, after in entry["pairs"]}
        for index, (name, result) in enumerate(per_pair_results(entry).items()):
            named = partial(transplant_metric, pair=pairs[name], index=index)
            everything = result["layers"]["from"]
            out += [
                named("intact", value=result["intact"]),
                named("majority", value=result["majority"]),
                named("score", detail="all", value=everything["score"][0]),
                named("delta", detail="all", value=everything["delta"][0]),
            ]
            share = result["share_kept"]
            if share["value"] is not None:
                out.append(named("share_kept", value=share["value"]))
                out += [named("share_kept", detail=bound, value=v) for bound, v in zip(BOUNDS, share["interval"])]
            if "last_two_vs_first_two" in result:
                edge = result["last_two_vs_first_two"]
                out.append(named("first_minus_last_two", value=edge["value"]))
                out += [named("first_minus_last_two", detail=b, value=v) for b, v in zip(BOUNDS, edge["interval"])]
            for family in LAYER_FAMILIES:
                grids = result["layers"][family]
                for layer, (score, delta) in enumerate(zip(grids["score"], grids["delta"]), 1):
                    out += [
                        named("score", detail=family, layer=layer, value=score),
                        named("delta", detail=family, layer=layer, value=delta),
                    ]
            for family in ("heads", *LAYER_FAMILIES):
                tested = family_grid(result, family)
                out += [named(word, detail=family, value=float(tested[word])) for word in ("helps", "hurts")]
        return out

    @classmethod
    def headline(cls, entry: TransplantEntry, metrics: list[Metric]) -> list[Metric]:
        """The first pair's share of its gain kept with all attention pre-trained, and that score's change."""
        wanted = {("transplant_share_kept", ""), ("transplant_delta", "all")}
        return [metric for metric in metrics if not metric.pair_said and (metric.statistic, metric.detail) in wanted]

    @classmethod
    def draw(cls, entry: TransplantEntry, run: RunSection, out_dir: Path) -> list[Path]:
        """The main pair's per-layer changes (each family, with simultaneous intervals) and per-head changes."""
        result = main_result(entry)
        if result is None:
            return []
        return [draw_layers(result, run, out_dir / "transplant_per_layer.png"), draw_heads(result, run, out_dir)]

    @classmethod
    def tables(cls, entry: TransplantEntry, run: RunSection) -> dict[str, str]:
        result = main_result(entry)
        if result is None:
            return {}
        return {
            "transplant_table": f"# Attention transplant: {run_title(run)}, the pre-trained attention in the "
            "fine-tuned model (changes in points with simultaneous 95% intervals, Bonferroni over each family; "
            "p: Holm-adjusted)\n\n"
            + layer_table(result)
            + "\n"
            + "\n".join(f"- {line}" for line in [*summary_lines(result), *head_lines(result)])
            + "\n"
        }

    @classmethod
    def printed(cls, entry: TransplantEntry) -> list[str]:
        result = main_result(entry)
        if result is None:
            return []
        alone = result["layers"]["alone"]
        return [
            "transplant, dev score with one layer's attention pre-trained, layers 1..: "
            + " ".join(f"{100 * score:.1f}" for score in alone["score"]),
            *summary_lines(result)[1:],
        ]

    @classmethod
    def overview_rows(cls, entries: dict[str, AnyEntry], run: RunSection) -> list[Row]:
        """The share of the gain kept with all attention pre-trained."""
        result = main_result(entries[cls.name])
        if result is None:
            return []
        share = result["share_kept"]
        if share["value"] is None:
            return []
        low, high = share["interval"]
        return [
            (
                "fine-tuned model with all attention pre-trained: share of its gain over the majority class kept",
                "",
                f"{share['value']:.2f} [{low:.2f}, {high:.2f}]",
                "",
            )
        ]

    @classmethod
    def across_seeds(cls, entries: list[TransplantEntry]) -> TransplantAcrossSeeds:
        """Per layer, the score with that layer's attention pre-trained (each seed's own), and the
        intact and majority scores, over the seeds."""
        results = [result for entry in entries if (result := main_result(entry)) is not None]
        if not results:
            return {}
        return {
            "transplant": {
                "alone_score": elementwise([result["layers"]["alone"]["score"] for result in results]),
                "intact": spread([result["intact"] for result in results]),
                "majority": spread([result["majority"] for result in results]),
                "metric": results[0]["metric"],
            }
        }

    @classmethod
    def study_tables(cls, study: StudyRecord) -> dict[str, str]:
        """Per task, the dev score with each layer's attention pre-trained (mean ± s.d. over seeds)."""
        tasks = {task: kept for task, (kept, _) in transplant_parts(study).items()}
        if not tasks:
            return {}
        layers = max(len(entry["alone_score"]["mean"]) for entry in tasks.values())
        rows = [
            [
                task,
                f"{100 * entry['intact']['mean']:.1f}",
                *(
                    f"{100 * mean:.1f} ± {100 * sd:.1f}"
                    for mean, sd in zip(entry["alone_score"]["mean"], entry["alone_score"]["std"])
                ),
            ]
            for task, entry in tasks.items()
        ]
        return {
            "transplant_by_task": markdown_table(
                ["task", "intact", *(f"layer {n} pre-trained" for n in range(1, layers + 1))],
                [row + ["-"] * (layers + 2 - len(row)) for row in rows],
            )
        }

    @classmethod
    def draw_study(cls, study: StudyRecord, out_dir: Path) -> list[Path]:
        """Per task, the score with each layer's attention transplanted beside the change of each
        layer's attention and representations."""
        if not any("transplant" in entry for entry in study["tasks"].values()):
            return []
        return [draw_transplant_beside_change(study, out_dir / "transplant_beside_change_by_task.png")]


def draw_layers(result: TransplantPair, run: RunSection, path: Path) -> Path:
    """Per layer, the change of the score with each per-layer family's attention pre-trained, in
    points, with simultaneous intervals; the majority class's level dashed."""
    figure, axes = plt.subplots(figsize=(7.6, 3.8))
    colours = (OKABE_ITO["blue"], OKABE_ITO["vermillion"], OKABE_ITO["green"])
    layers = np.arange(1, len(result["layers"]["alone"]["delta"]) + 1)
    for offset, family, colour in zip((-0.2, 0.0, 0.2), LAYER_FAMILIES, colours):
        grids = result["layers"][family]
        delta, low, high = (100 * np.asarray(grids[key], dtype=float) for key in ("delta", "low", "high"))
        axes.errorbar(
            layers + offset,
            delta,
            yerr=[delta - low, high - delta],
            fmt="o",
            capsize=2,
            color=colour,
            label=FAMILY_TITLES[family],
        )
    axes.axhline(0, color=GREY, linewidth=0.8)
    axes.axhline(
        100 * (result["majority"] - result["intact"]), color=GREY, linestyle="--", linewidth=0.8, label="majority class"
    )
    axes.set_xticks(layers)
    axes.set_xlabel("layer k")
    axes.set_ylabel(f"change of dev {result['metric']} (points)")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))  # beside the axes: no interval hidden
    suptitle(
        figure,
        f"{run_title(run)}: pre-trained attention in the fine-tuned model "
        "(simultaneous 95% intervals over each family)",
    )
    return save(figure, path)


def draw_heads(result: TransplantPair, run: RunSection, out_dir: Path) -> Path:
    """Each head's change of the score with its attention alone pre-trained (points)."""
    deltas = 100 * np.asarray(result["heads"]["delta"], dtype=float)
    reach = max(float(np.abs(deltas).max()), 0.1)
    return draw_head_grid(
        deltas.tolist(),
        out_dir / "transplant_per_head.png",
        title=f"{run_title(run)}: one head's attention pre-trained",
        colorbar_label=f"change of dev {result['metric']} (points)",
        vmin=-reach,
        vmax=reach,
        cmap="RdBu",
    )


def change_series(kept: Elementwise | None) -> np.ndarray | None:
    """1 minus a per-layer similarity a study kept over seeds (its mean), or None where it kept none."""
    return None if kept is None else 1 - np.asarray(kept["mean"], dtype=float)


def draw_transplant_beside_change(study: StudyRecord, path: Path) -> Path:
    """A panel per task: the dev score with each layer's attention transplanted (left axis, the
    intact and majority scores as lines), and on the right axis each layer's change, 1 - cosine of
    the attention maps and 1 - linear CKA of the tokens' hidden states, on the task's inputs
    (solid) and on running text (dashed), means over seeds."""
    tasks = transplant_parts(study)
    figure, panels = panels_for(len(tasks), columns=3, layout="constrained")
    changes: tuple[tuple[Callable[[TaskAggregate], Elementwise | None], str, str, str], ...] = (
        (cosine_per_layer, OKABE_ITO["vermillion"], "-", "1 - cosine, task inputs"),
        (partial(cka_series, name=CkaView.name, kind="tokens"), OKABE_ITO["green"], "-", "1 - CKA, task inputs"),
        (
            partial(cka_series, name=CkaTextView.name, kind="attention_cosine"),
            OKABE_ITO["vermillion"],
            "--",
            "1 - cosine, running text",
        ),
        (partial(cka_series, name=CkaTextView.name, kind="tokens"), OKABE_ITO["green"], "--", "1 - CKA, running text"),
    )
    for index, (axes, (task, (transplant, entry))) in enumerate(zip(panels, tasks.items())):
        scores = 100 * np.asarray(transplant["alone_score"]["mean"], dtype=float)
        layers = np.arange(1, len(scores) + 1)
        axes.plot(layers, scores, marker="o", color=OKABE_ITO["blue"], label="layer's attention pre-trained")
        axes.axhline(100 * transplant["intact"]["mean"], color=OKABE_ITO["blue"], linewidth=0.8, label="intact")
        axes.axhline(100 * transplant["majority"]["mean"], color=GREY, linestyle="--", linewidth=0.8, label="majority")
        axes.set_xticks(layers)
        axes.set_xlabel("layer")
        axes.set_ylabel(f"dev {transplant['metric']}", color=OKABE_ITO["blue"])
        axes.set_title(task, fontsize=9)
        axes.grid(alpha=0.3)
        other = axes.twinx()
        for read, colour, style, label in changes:
            values = change_series(read(entry))
            if values is not None:
                other.plot(layers[: len(values)], values, color=colour, linestyle=style, marker=".", label=label)
        other.set_ylabel("change (1 - similarity)")
        if index == 0:
            handles = [*axes.get_legend_handles_labels()[0], *other.get_legend_handles_labels()[0]]
            labels = [*axes.get_legend_handles_labels()[1], *other.get_legend_handles_labels()[1]]
            figure.legend(handles, labels, fontsize=7, loc="outside lower center", ncols=4)
    suptitle(
        figure,
        study_title(study, "Dev score with one layer's attention pre-trained, beside each layer's change"),
    )
    return save(figure, path)
