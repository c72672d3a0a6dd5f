"""Dev metrics of each checkpoint, beside the majority class, from the analysis pass itself.

Metrics: each checkpoint's GLUE metrics and mean loss per evaluation split, the majority
class's, and per compared checkpoint whether it learned, with the bounds of its paired
bootstrap intervals against the majority class and against a trained baseline; the headline
is the fine-tuned model's dev scores beside the majority class's. Table: Kovaleva et al.'s
Table 1 for the run, the paper's numbers beside ours when the model is hers. A run prints
each checkpoint's dev scores and a warning when a compared checkpoint learned nothing; a
study judges on each run that the fine-tuned model beats the majority class.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Final, NotRequired, TypedDict

import numpy as np

from harness.config import Settings, analysis_settings
from harness.options import option
from harness.recipes import describe_recipe
from harness.results.checkpoints import FINETUNED, FROZEN_ENCODER, MAIN_PAIR, PRETRAINED, RANDOM_INIT
from harness.results.entries import AnyEntry, PerCheckpoint
from harness.results.run_record import RunSection
from harness.results.study_record import StudyRecord, TaskAggregate, view_part
from harness.views.across_tasks import mean_sd
from harness.views.base import (
    Claim,
    Entry,
    PaperPoint,
    Row,
    View,
    per_checkpoint_results,
    per_pair_results,
    register_view,
)
from harness.views.evidence import EffectVerdict, interval_verdict
from harness.views.markdown import markdown_table
from harness.views.metrics import BOUNDS, Metric, chosen
from harness.views.papers import KOVALEVA_TABLE_1, KOVALEVA_TASKS, expected_for
from harness.views.samples import evaluation_samples
from harness.views.titles import checkpoint_title
from tasks.registry import get_task
from tasks.spec import Task, task_from_spec

PAPER_MODEL = "bert-base-uncased"
MAJORITY = "majority"  # the majority class: the reference every dev score is set beside
# A checkpoint's dev score minus the majority class's; named as a dev score, so that MLflow's tables (in
# name order) set it beside the dev scores, not first of a checkpoint's metrics (where the pre-trained
# checkpoint, which has none, shows NaN).
ABOVE_MAJORITY = "dev_above_majority"
MAIN_SCORE: Final = "main_score"  # a study's record of each task's main dev score: its split and metric
GLUE_DEV = "dev"  # GLUE's dev file (MNLI's are dev_matched and dev_mismatched)


class DevScores(TypedDict):
    """A checkpoint's stored dev evaluation: ``"<split>/<metric>"`` scores (the loss among them) and
    the majority class's, examples per split, the task (and its spec unless it is GLUE's), and each
    split's predictions and labels."""

    metrics: dict[str, float]
    majority: dict[str, float]
    examples: dict[str, int]
    task: str
    predictions: dict[str, list[float]]
    labels: dict[str, list[float]]
    task_spec: NotRequired[dict[str, Any]]  # a task of a spec file or flags (GLUE's: its name says it all)


class DevUnits(TypedDict):
    """What a trajectory point keeps of the dev evaluation (`EvaluationView.timed_units`): the
    fine-tuned checkpoint's predictions per split and its scores."""

    predictions: dict[str, list[float]]
    metrics: dict[str, float]


def stored_task(scores: DevScores) -> Task:
    """The task a checkpoint's stored dev evaluation was scored on."""
    spec = scores.get("task_spec")
    return task_from_spec(spec, f"the stored task {scores['task']}") if spec else get_task(scores["task"])


class PairedDifference(TypedDict):
    """One score minus another on the same examples, with its 95% paired bootstrap interval."""

    metric: str
    difference: float
    interval: list[float]


class DevComparison(TypedDict):
    """A pair (before, after): the change of every score, and ``after`` on the main metric against
    ``before`` and against the majority class; whether it ``learned``."""

    change: dict[str, float]
    main_metric: str
    against_before: PairedDifference
    against_majority: PairedDifference
    learned: bool


TABLE_COLUMNS = {
    "majority": "majority class",
    PRETRAINED: "pre-trained, untrained head",
    FROZEN_ENCODER: "pre-trained, frozen encoder",
    RANDOM_INIT: "random init + FT",
    FINETUNED: "pre-trained + FT",
}


def beats_majority(entry: EvaluationEntry) -> EffectVerdict:
    """Whether the fine-tuned model is clearly above the majority class on dev: the paired
    bootstrap interval of its main metric minus the majority class's, over the dev examples
    (the ``learned`` of the pre-trained vs fine-tuned comparison)."""
    comparison = per_pair_results(entry)[MAIN_PAIR]
    examples = next(iter(per_checkpoint_results(entry).values()))["examples"]
    return {
        "value": comparison["against_majority"]["difference"],
        **interval_verdict(
            comparison["against_majority"]["interval"],
            "dev examples",
            sum(examples.values()),
            f"fine-tuned minus majority class on {comparison['main_metric']}",
        ),
    }


def table_metric(split: str, metric: str) -> str:
    """How the study's dev table names a task's main score: its metric (``accuracy``), after its split
    where that is not GLUE's dev file: the part of the data a GLUE dev file holds (MNLI's ``dev_matched``:
    ``matched_accuracy``), else the split's name (``validation_accuracy``)."""
    part = "" if split == GLUE_DEV else split.removeprefix(f"{GLUE_DEV}_")
    return f"{part}_{metric}" if part else metric


class MainScore(TypedDict):
    """A task's main dev score, as its split and its metric (`EvaluationView.main_score`)."""

    split: str
    metric: str


class EvaluationAcrossSeeds(TypedDict):
    """What a study keeps of the evaluation in a task's aggregate (`EvaluationView.across_seeds`)."""

    main_score: MainScore  # under `MAIN_SCORE`


def evaluation_part(entry: TaskAggregate) -> EvaluationAcrossSeeds:
    """The evaluation's part of a task's aggregate, as declared (`view_part`)."""
    return view_part(entry, EvaluationAcrossSeeds)


def dev_table(study: StudyRecord) -> str:
    """Table 1: the fine-tuned model's main dev metric per task beside the pre-trained model
    (untrained head), the majority class and how many seeds beat it; with bert-base-uncased,
    Kovaleva et al.'s fine-tuned score (their metric, in percent) beside it."""
    if any(MAIN_SCORE not in entry for entry in study["tasks"].values()):
        raise ValueError(
            "the study was aggregated by an earlier harness, without each task's main score: run its "
            "`harness study` command again (its runs are reused) to aggregate it anew"
        )
    with_paper = study["model"] == PAPER_MODEL
    header = ["task", "metric", "pre-trained", "fine-tuned", "majority class", "seeds above majority"]
    learned = study["findings"].get("beats_majority")
    beats = learned["per_task"] if learned else {}
    rows = []
    for task, entry in study["tasks"].items():
        score, metrics = evaluation_part(entry)[MAIN_SCORE], entry["metrics"]
        main = Metric(EvaluationView.name, entry["main_metric"])
        majority = replace(main, reference=MAJORITY).name
        counts = beats.get(task)
        row = [
            task,
            table_metric(score["split"], score["metric"]),
            mean_sd(metrics[replace(main, checkpoint=PRETRAINED).name]),
            mean_sd(metrics[replace(main, checkpoint=FINETUNED).name]),
            mean_sd(metrics[majority]) if majority in metrics else "-",
            f"{counts['holds']}/{counts['seeds']}" if counts else "-",
        ]
        rows.append(row + ([KOVALEVA_TABLE_1.get(task, {}).get("finetuned", "-")] if with_paper else []))
    return markdown_table(header + (["Kovaleva et al. (fine-tuned)"] if with_paper else []), rows)


@analysis_settings
@dataclass
class DevSampleSettings(Settings):
    """How much of each evaluation split the dev source scores: it records it with the data it read
    (its identity, in every result's key)."""

    max_dev_examples: int | None = option(
        None,
        "seeded sample of at most N examples of each evaluation split that "
        "the dev metrics score (default: all, as the papers)",
        minimum=1,
        quick=256,
        after="ablation_examples",
    )


EvaluationEntry = Entry[PerCheckpoint[DevScores, DevComparison]]


@register_view
class EvaluationView(View[PerCheckpoint[DevScores, DevComparison]]):
    name = "evaluation"
    samples = evaluation_samples
    order = 10
    version = 2
    stored = DevScores
    compared = DevComparison
    claims = {"beats_majority": Claim("the fine-tuned model beats the majority class on dev", beats_majority)}
    papers = {
        "beats_majority": PaperPoint(
            "Kovaleva et al. 2019, Table 1",
            "fine-tuned bert-base-uncased on dev: MRPC 87.9/82.3 (F1/acc.), STS-B 82.7, "
            "SST-2 92.0, RTE 64.6 (majority class 52.7), QNLI 84.4",
            expected_for(KOVALEVA_TASKS),
        )
    }

    @classmethod
    def metrics(cls, entry: EvaluationEntry) -> list[Metric]:
        """``dev_accuracy_finetuned``, ``dev_accuracy_pretrained``, ``dev_accuracy_majority``, ... per
        split; per compared checkpoint whether it learned and how far it is above the majority class
        (``dev_above_majority_low_finetuned``: the low end of the interval), and above each trained
        baseline (``above_frozen-encoder_low_finetuned``: the pair's, said in its own words)."""
        results = per_checkpoint_results(entry)
        out = [
            Metric(
                cls.name, f"{split}_{metric}", checkpoint=checkpoint, value=stats["metrics"][score_key(split, metric)]
            )
            for checkpoint, stats in results.items()
            for split, metric in scored(stats, with_loss=True)
        ]
        first = next(iter(results.values()))
        task = stored_task(first)
        out += [
            Metric(
                cls.name,
                f"{split}_{metric}",
                reference=MAJORITY,
                value=None if undefined_for_baseline(task, metric) else first["majority"][score_key(split, metric)],
            )
            for split, metric in scored(first, with_loss=False)
        ]
        compared: dict[str, list[DevComparison]] = {}
        for (before, after), comparison in zip(entry["pairs"], per_pair_results(entry).values()):
            compared.setdefault(after, []).append(comparison)
            if before != PRETRAINED:  # a trained baseline: is the checkpoint clearly above it?
                out += [
                    Metric(
                        cls.name, f"above_{before}_{bound}_{after}", pair=(before, after), pair_said=False, value=value
                    )
                    for bound, value in zip(BOUNDS, comparison["against_before"]["interval"])
                ]
        for after, comparisons in compared.items():
            above = comparisons[0]["against_majority"]
            out += [
                Metric(cls.name, "learned", checkpoint=after, value=float(all(c["learned"] for c in comparisons))),
                Metric(cls.name, ABOVE_MAJORITY, checkpoint=after, value=above["difference"]),
                *(
                    Metric(cls.name, f"{ABOVE_MAJORITY}_{bound}", checkpoint=after, value=value)
                    for bound, value in zip(BOUNDS, above["interval"])
                ),
            ]
        return out

    @classmethod
    def headline(cls, entry: EvaluationEntry, metrics: list[Metric]) -> list[Metric]:
        """The dev scores (not the loss) of the fine-tuned model and the majority class, and how far
        the fine-tuned model is above the majority class with the low end of its interval: what a
        fine-tuning learned is measured against the majority class, not against the pre-trained
        encoder's untrained head (whose chance score makes any run's "change" look like learning); a
        majority class's undefined score (a correlation with the mean) has no metric to choose."""
        first = next(iter(per_checkpoint_results(entry).values()))
        scores = [Metric(cls.name, f"{split}_{metric}") for split, metric in scored(first, with_loss=False)]
        above = [ABOVE_MAJORITY, f"{ABOVE_MAJORITY}_{BOUNDS[0]}"]
        return chosen(
            metrics,
            [replace(score, checkpoint=FINETUNED) for score in scores]
            + [replace(score, reference=MAJORITY) for score in scores]
            + [Metric(cls.name, statistic, checkpoint=FINETUNED) for statistic in above],
        )

    @classmethod
    def tables(cls, entry: EvaluationEntry, run: RunSection) -> dict[str, str]:
        any_result = next(iter(per_checkpoint_results(entry).values()))  # every checkpoint's is of one task
        tags = tag_table(entry, run) if stored_task(any_result).is_tagging else None
        return {"evaluation_table": table_1_markdown(entry, run), **({"evaluation_tags_table": tags} if tags else {})}

    @classmethod
    def overview_rows(cls, entries: dict[str, AnyEntry], run: RunSection) -> list[Row]:
        """The fine-tuning recipe, each checkpoint's main dev score beside the majority class's and
        Kovaleva et al.'s Table 1, and the fine-tuned model against the majority class."""
        entry: EvaluationEntry = entries[cls.name]
        recipe = f"{describe_recipe(run['recipe'])}, {run['train_examples']} training examples"
        return [
            ("fine-tuning recipe", "", recipe, "batch 32, 3 epochs (Kovaleva et al.)"),
            *score_rows(entry),
            *majority_rows(entry),
        ]

    @classmethod
    def printed(cls, entry: EvaluationEntry) -> list[str]:
        """Each checkpoint's dev scores, what they are scored over (a tagging task's words), then
        whether the fine-tuned model learned: the warning when a compared checkpoint learned
        nothing, else by how much it is above the baseline."""
        verdict = learning_warning(entry) or learned_line(entry)
        return dev_lines(entry) + scored_over(entry) + ([verdict] if verdict else [])

    @classmethod
    def timed_units(cls, entry: EvaluationEntry) -> DevUnits:
        """The fine-tuned checkpoint's dev predictions and scores, which the findings on when the dev
        score changes resample."""
        scores = per_checkpoint_results(entry)[FINETUNED]
        return {"predictions": scores["predictions"], "metrics": scores["metrics"]}

    @classmethod
    def main_metric(cls, entry: EvaluationEntry) -> str:
        """The task's main dev metric as a metric-name stem (``dev_accuracy``)."""
        return "_".join(cls.main_score(entry))

    @classmethod
    def main_score(cls, entry: EvaluationEntry) -> tuple[str, str]:
        """The split and the metric of the task's main dev score (``("dev", "accuracy")``), as the
        comparisons score it: the fine-tuned checkpoint's first split scored, its task's first metric."""
        scores = per_checkpoint_results(entry)[FINETUNED]
        return next(iter(scores["predictions"])), stored_task(scores).metrics[0]

    @classmethod
    def across_seeds(cls, entries: list[EvaluationEntry]) -> EvaluationAcrossSeeds:
        """The task's main dev score, as its split and metric (``{"split": "dev", "metric": "accuracy"}``),
        which the study's dev table names."""
        split, metric = cls.main_score(entries[0])
        return {MAIN_SCORE: {"split": split, "metric": metric}}

    @classmethod
    def study_tables(cls, study: StudyRecord) -> dict[str, str]:
        return {"dev_scores_by_task": dev_table(study)} if study["tasks"] else {}


CORRELATIONS = ("pearson", "spearman")  # a score's metrics: undefined for the constant mean score
LOSS = "loss"


def score_key(split: str, metric: str) -> str:
    """The key a split's score is stored under in `DevScores` (``"dev/accuracy"``)."""
    return f"{split}/{metric}"


def scored(scores: DevScores, with_loss: bool) -> list[tuple[str, str]]:
    """The (split, metric) of each score a checkpoint's `DevScores` stores, in its order: per split
    scored, the task's metrics, then the loss ``with_loss`` (the majority class's have none)."""
    metrics = [*stored_task(scores).metrics, *([LOSS] if with_loss else [])]
    return [(split, metric) for split in scores["examples"] for metric in metrics]


def undefined_for_baseline(task: Task, metric: str) -> bool:
    """Whether ``metric`` (``"accuracy"``) is undefined for the task's baseline: a score's baseline
    is the mean, a constant, whose correlation with anything is undefined (stored as 0, the value
    the learning check compares against)."""
    return task.is_regression and metric in CORRELATIONS


def baseline_name(task: Task) -> str:
    """What a task's dev scores are set beside: the majority class, or for a score the mean."""
    return baseline_of(task.metrics[0]) if task.is_regression else "the majority class"


def baseline_of(metric: str) -> str:
    """The baseline a metric's score (``"pearson"``) is set beside: the mean for a correlation (a
    score's), else the majority class."""
    return "the mean score (no correlation)" if metric in CORRELATIONS else "the majority class"


def learning_warning(entry: EvaluationEntry) -> str | None:
    """One line when a compared checkpoint is not clearly above the majority class (or the
    frozen-encoder baseline), else None."""
    for (before, after), comparison in zip(entry["pairs"], per_pair_results(entry).values()):
        if comparison["learned"]:
            continue
        below_majority = comparison["against_majority"]["interval"][0] <= 0
        versus = comparison["against_majority" if below_majority else "against_before"]
        reference = (
            baseline_of(comparison["against_majority"]["metric"]) if below_majority else f"the {before} baseline"
        )
        low, high = versus["interval"]
        return (
            f"warning: {after} is not clearly above {reference} on {comparison['main_metric']} "
            f"(difference {versus['difference']:+.3f}, 95% bootstrap interval [{low:+.3f}, {high:+.3f}]): "
            "its attention changes are not what learning the task does"
        )
    return None


def dev_metrics(entry: EvaluationEntry) -> dict[str, dict[str, float]]:
    """``{checkpoint: {"<split>/<metric>": value}, "majority": {...}}`` from a stored entry."""
    results = per_checkpoint_results(entry)
    return {
        **{name: stats["metrics"] for name, stats in results.items()},
        "majority": next(iter(results.values()))["majority"],
    }


def dev_lines(entry: EvaluationEntry) -> list[str]:
    """``dev finetuned: dev/accuracy 0.6500, ...``: one line per checkpoint and one for the majority
    class (for a score, the mean, whose correlations are undefined: said so, not 0)."""
    scores = dev_metrics(entry)
    baseline = scores.pop("majority")
    first = next(iter(per_checkpoint_results(entry).values()))
    task = stored_task(first)
    lines = [
        f"dev {checkpoint}: " + ", ".join(f"{k} {v:.4f}" for k, v in values.items())
        for checkpoint, values in scores.items()
    ]
    if not task.is_regression:
        return lines + ["dev majority: " + ", ".join(f"{k} {v:.4f}" for k, v in baseline.items())]
    keys = [(score_key(split, metric), metric) for split, metric in scored(first, with_loss=False)]
    said = ", ".join(
        f"{key} undefined" if undefined_for_baseline(task, metric) else f"{key} {baseline[key]:.4f}"
        for key, metric in keys
    )
    return lines + [
        f"dev mean score (the baseline): {said} (a constant has no correlation; the learning check asks "
        "for one clearly above 0)"
    ]


def scored_over(entry: EvaluationEntry) -> list[str]:
    """For a tagging task, what its accuracy counts: the words of how many sentences, each scored
    at its first sub-token (other tasks' scores are over their examples, as said everywhere)."""
    first = per_checkpoint_results(entry)[FINETUNED]
    if not stored_task(first).is_tagging:
        return []
    sentences = entry.get("source", {}).get("notes", {}).get("examples")
    return [
        f"scored over {words:,} words"
        + (f" of {count:,} sentences" if (count := sentence_count(sentences, split)) else "")
        + f" ({split}), each word at its first sub-token: accuracy is the share of words tagged right"
        for split, words in first["examples"].items()
    ]


def sentence_count(notes: object, split: str) -> int | None:
    """How many inputs of ``split`` the dev source's notes count (a number: the main split's)."""
    if isinstance(notes, dict):
        return notes.get(split)
    return notes if isinstance(notes, int) else None


def learned_line(entry: EvaluationEntry) -> str | None:
    """The fine-tuned model's verdict when it learned: by how much its main score is above the
    baseline, with its interval and what that is over; None when it did not (`learning_warning`)."""
    comparison = per_pair_results(entry).get(MAIN_PAIR)
    if comparison is None or not comparison["learned"]:
        return None
    first = per_checkpoint_results(entry)[FINETUNED]
    task = stored_task(first)
    split, _ = EvaluationView.main_score(entry)
    versus = comparison["against_majority"]
    low, high = versus["interval"]
    unit = "words" if task.is_tagging else "examples"
    return (
        f"learned: fine-tuned above {baseline_name(task)} on {comparison['main_metric']} by "
        f"{versus['difference']:+.3f} (95% paired bootstrap interval [{low:+.3f}, {high:+.3f}] over "
        f"{first['examples'][split]:,} dev {unit})"
    )


def tag_table(entry: EvaluationEntry, run: RunSection) -> str:
    """A tagging task's dev words per tag (main split): how many, and each checkpoint's recall,
    precision and F1 on the tag, the most frequent tag (the majority baseline's) marked."""
    results = per_checkpoint_results(entry)
    first = results[FINETUNED]
    task = stored_task(first)
    split = next(iter(first["predictions"]))
    labels = np.asarray(first["labels"][split], dtype=int)
    counts = np.bincount(labels, minlength=task.num_labels)
    header = ["tag", "words", *(f"{checkpoint_title(name)}: {what}" for name in results for what in TAG_SCORES)]
    rows = []
    for index, tag in enumerate(task.label_names):
        cells = [f"{tag} (most frequent)" if index == counts.argmax() else tag, f"{counts[index]:,}"]
        for stats in results.values():
            predicted = np.asarray(stats["predictions"][split], dtype=int)
            cells += [f"{value:.3f}" if value is not None else "-" for value in tag_scores(predicted, labels, index)]
        rows.append(cells)
    return (
        f"# Dev words per tag: {run.get('model', 'the model')} on {task.title}\n\n"
        f"{int(counts.sum()):,} words of {split}, each scored at its first sub-token; recall is the share of the "
        "tag's words tagged right, precision the share of the words given the tag that have it.\n\n"
        + markdown_table(header, rows)
    )


TAG_SCORES = ("recall", "precision", "F1")


def tag_scores(predicted: np.ndarray, labels: np.ndarray, tag: int) -> tuple[float | None, float | None, float | None]:
    """Recall, precision and F1 of one tag (None where undefined: no word has the tag, or none is given it)."""
    hits = float(((predicted == tag) & (labels == tag)).sum())
    truth, given = float((labels == tag).sum()), float((predicted == tag).sum())
    recall = hits / truth if truth else None
    precision = hits / given if given else None
    f1 = 2 * hits / (truth + given) if truth + given else None
    return recall, precision, f1


def table_cell(task: Task, scores: dict[str, float], split: str) -> str:
    """A checkpoint's main score in percent, as Kovaleva et al.'s Table 1 writes it (F1/accuracy
    for MRPC and QQP, else the task's first metric)."""
    metrics = ("f1", "accuracy") if "f1" in task.metrics else task.metrics[:1]
    return "/".join(f"{100 * scores[score_key(split, metric)]:.1f}" for metric in metrics)


def baseline_cell(task: Task, scores: dict[str, float], split: str) -> str:
    """The majority class's main score as `table_cell` writes it; for a score, whose baseline is
    the constant mean, "undefined" where that is a correlation."""
    metric = task.metrics[0]
    return "undefined" if undefined_for_baseline(task, metric) else table_cell(task, scores, split)


def table_1_markdown(entry: EvaluationEntry, run: RunSection) -> str:
    """Kovaleva et al.'s Table 1 for this run: the majority class, the untrained pre-trained
    model, the baselines that were trained and the fine-tuned model, on the main split; the
    paper's numbers in brackets where the model is hers."""
    results = per_checkpoint_results(entry)
    first = next(iter(results.values()))
    task = stored_task(first)
    split = next(iter(first["predictions"]))
    scores = {"majority": first["majority"], **{name: stats["metrics"] for name, stats in results.items()}}
    columns = [name for name in TABLE_COLUMNS if name in scores]
    paper = KOVALEVA_TABLE_1.get(task.name, {}) if run.get("model") == PAPER_MODEL else {}
    cells = [
        (baseline_cell(task, scores[name], split) if name == MAJORITY else table_cell(task, scores[name], split))
        + (f" ({paper[name]})" if name in paper else "")
        for name in columns
    ]
    metric = "F1/accuracy" if "f1" in task.metrics else task.metrics[0]
    lines = [
        f"# Dev scores: {run.get('model', 'the model')} on {task.title}",
        "",
        f"Dev scores ({split}, {metric}, %) of {run.get('model', 'the model')} on {task.title}, "
        "as Kovaleva et al. 2019's Table 1" + (f"; the paper's numbers ({PAPER_MODEL}) in brackets." if paper else "."),
        "",
        "| task | " + " | ".join(TABLE_COLUMNS[name] for name in columns) + " |",
        "|---" * (len(columns) + 1) + "|",
        f"| {task.title} | " + " | ".join(cells) + " |",
    ]
    for (before, after), comparison in zip(entry["pairs"], per_pair_results(entry).values()):
        versus = comparison["against_before"]
        low, high = versus["interval"]
        lines.append(
            f"\n{checkpoint_title(after)} minus {checkpoint_title(before)} on {comparison['main_metric']}: "
            f"{versus['difference']:+.3f} (95% paired bootstrap interval [{low:+.3f}, {high:+.3f}])."
        )
    return "\n".join(lines) + "\n"


def score_rows(entry: EvaluationEntry) -> list[Row]:
    """Overview rows: the main dev score of the pre-trained and fine-tuned models beside the
    majority class's and Kovaleva et al.'s Table 1, then each trained baseline's."""
    results = per_checkpoint_results(entry)
    first = results[FINETUNED]
    task = stored_task(first)
    split = next(iter(first["predictions"]))
    paper = KOVALEVA_TABLE_1.get(task.name, {})
    context = " / ".join(f"{value} {TABLE_COLUMNS[name]}" for name, value in paper.items())
    metric = "F1/accuracy" if "f1" in task.metrics else task.metrics[0]
    rows: list[Row] = [
        (
            f"{task.title} {split} {metric} ({baseline_name(task).removeprefix('the ')}: "
            f"{baseline_cell(task, first['majority'], split)})",
            table_cell(task, results[PRETRAINED]["metrics"], split),
            table_cell(task, first["metrics"], split),
            f"{context} (Kovaleva Table 1)" if context else "",
        )
    ]
    return rows + [
        (f"{TABLE_COLUMNS[name]} baseline", "", table_cell(task, results[name]["metrics"], split), "")
        for name in results
        if name not in (PRETRAINED, FINETUNED)
    ]


def majority_rows(entry: EvaluationEntry) -> list[Row]:
    """Overview rows: per pair from the pre-trained model, the fine-tuned model minus the majority
    class in points with its paired bootstrap interval, and whether it learned."""
    rows: list[Row] = []
    for (before, _after), comparison in zip(entry["pairs"], per_pair_results(entry).values()):
        if before != PRETRAINED:
            continue
        versus = comparison["against_majority"]
        low, high = (100 * value for value in versus["interval"])
        rows.append(
            (
                "fine-tuned minus majority class (95% paired bootstrap interval)",
                "",
                f"{100 * versus['difference']:+.1f} [{low:+.1f}, {high:+.1f}]; "
                f"learned: {'yes' if comparison['learned'] else 'no'}",
                "",
            )
        )
    return rows
