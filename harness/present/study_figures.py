"""A study's cross-task figures and tables, drawn from its ``study.json`` only.

* ``cosine_per_head_by_task``: Kovaleva et al.'s Figure 5, per-head cosine of the
  pre-trained and fine-tuned attention, one panel per task (mean over seeds);
* ``cosine_per_layer_by_task``: the same per layer, a line per task with the seeds' spread;
* ``pattern_shares_by_task``: their Figure 2, the share of each attention pattern per task,
  pre-trained and fine-tuned side by side (mean over seeds);
* ``special_tokens_by_task``: attention to [CLS] and [SEP] per layer and task, both checkpoints;
* tables (Markdown): dev scores per task beside the majority class and, for
  bert-base-uncased, Kovaleva et al.'s Table 1; the headline metrics; the ablation per task
  (when it ran); the findings with their seed support.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np

from classifier import CLASSES
from harness.results.checkpoints import FINETUNED, PRETRAINED
from harness.views.evaluation import KOVALEVA_TABLE_1, PAPER_MODEL
from harness.views.patterns import CLASS_COLOURS, share_metric
from harness.views.style import (
    CHECKPOINT_COLOURS,
    OKABE_ITO,
    checkpoint_title,
    markdown_table,
    model_title,
    panels_for,
    save,
    style_head_axes,
    suptitle,
)
from tasks.files import atomic_write_text

CHECKPOINTS = (PRETRAINED, FINETUNED)
CHECKPOINT_STYLES = {PRETRAINED: "--", FINETUNED: "-"}
# Tasks take the palette's colours other than the checkpoints' (blue and vermillion mean
# pre-trained and fine-tuned in every figure of the harness).
TASK_COLOURS = [colour for colour in OKABE_ITO.values() if colour not in CHECKPOINT_COLOURS.values()]
TOKEN_TITLES = {"cls": "[CLS]", "sep": "[SEP]"}


def task_colour(index: int) -> str:
    """The colour of the task at ``index``, cycling through `TASK_COLOURS`."""
    return TASK_COLOURS[index % len(TASK_COLOURS)]


def study_title(study: dict[str, Any], what: str) -> str:
    """A figure title: ``what``, the model and how many seeds the means are over."""
    seeds = sorted({len(entry["seeds"]) for entry in study["tasks"].values()})
    seed_words = f"{seeds[0]} seeds" if len(seeds) == 1 else f"{seeds[0]}-{seeds[-1]} seeds"
    return f"{what} ({model_title(study['model'])}, mean over {seed_words})"


def draw_study(study: dict[str, Any], out_dir: Path) -> list[Path]:
    """Every figure (PNG and PDF) and table of the study; the files written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    tasks = study["tasks"]
    written = []
    if tasks and all("cosine" in entry for entry in tasks.values()):
        written += [draw_cosine_heads(study, out_dir / "cosine_per_head_by_task.png"),
                    draw_cosine_layers(study, out_dir / "cosine_per_layer_by_task.png")]
    if tasks and all(share_metric(PRETRAINED, CLASSES[0]) in entry["metrics"] for entry in tasks.values()):
        written.append(draw_pattern_shares(study, out_dir / "pattern_shares_by_task.png"))
    if tasks and all("special_tokens" in entry for entry in tasks.values()):
        written.append(draw_special_tokens(study, out_dir / "special_tokens_by_task.png"))
    written = [*written, *(path.with_suffix(".pdf") for path in written)]
    for stem, text in study_tables(study).items():
        written.append(atomic_write_text(out_dir / f"{stem}.md", text))
    return written


def draw_cosine_heads(study: dict[str, Any], path: Path) -> Path:
    """Per-head cosine grids (mean over seeds), a panel per task on one colour scale, saved at ``path``
    (PNG, with a PDF beside it); returns ``path``."""
    tasks = study["tasks"]
    grids = {task: np.asarray(entry["cosine"]["per_head"]["mean"]) for task, entry in tasks.items()}
    low, high = min(g.min() for g in grids.values()), max(g.max() for g in grids.values())
    figure, panels = panels_for(len(grids), columns=3, layout="constrained")
    for axes, (task, grid) in zip(panels, grids.items()):
        image = axes.imshow(grid, aspect="auto", vmin=low, vmax=high, cmap="viridis")
        style_head_axes(axes, *grid.shape, task, tick_size=6)
    figure.colorbar(image, ax=panels, label="cosine, pre-trained vs fine-tuned")
    suptitle(figure, study_title(study, "Per-head cosine similarity of the attention maps per task"))
    return save(figure, path)


def draw_cosine_layers(study: dict[str, Any], path: Path) -> Path:
    """Per-layer cosine, a line per task with a band of ±1 s.d. over seeds, saved at ``path`` (PNG, with a PDF
    beside it); returns ``path``."""
    figure, axes = plt.subplots(figsize=(5.4, 3.6), layout="constrained")
    for index, (task, entry) in enumerate(study["tasks"].items()):
        mean, std = (np.asarray(entry["cosine"]["per_layer"][k]) for k in ("mean", "std"))
        layers = np.arange(1, len(mean) + 1)
        axes.plot(layers, mean, marker="o", color=task_colour(index), label=task)
        axes.fill_between(layers, mean - std, mean + std, color=task_colour(index), alpha=0.2, linewidth=0)
        axes.set_xticks(layers)
    axes.set_xlabel("layer")
    axes.set_ylabel("cosine (band: ±1 s.d. over seeds)")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8, ncols=2)
    suptitle(figure, study_title(study, "Cosine similarity per layer and task"))
    return save(figure, path)


def draw_pattern_shares(study: dict[str, Any], path: Path) -> Path:
    """Stacked shares of each attention pattern per task, pre-trained and fine-tuned bars side by side (mean over
    seeds), saved at ``path`` (PNG, with a PDF beside it); returns ``path``."""
    tasks = list(study["tasks"])
    figure, axes = plt.subplots(figsize=(max(4.5, 1.3 * len(tasks) + 1.5), 3.8), layout="constrained")
    width = 0.38
    for offset, checkpoint in zip((-width / 2 - 0.01, width / 2 + 0.01), CHECKPOINTS):
        bottom = np.zeros(len(tasks))
        for name in CLASSES:
            shares = np.array([study["tasks"][task]["metrics"][share_metric(checkpoint, name)]["mean"]
                               for task in tasks])
            axes.bar(np.arange(len(tasks)) + offset, shares, width, bottom=bottom, color=CLASS_COLOURS[name],
                     edgecolor="black", linewidth=0.4, label=name if checkpoint == PRETRAINED else None)
            bottom += shares
    axes.set_xticks(np.arange(len(tasks)), [f"{task}\npre / fine" for task in tasks], fontsize=8)
    axes.set_ylabel("share of attention maps")
    axes.set_ylim(0, 1)
    axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    suptitle(figure, study_title(study, "Attention patterns per task, pre-trained (left) and fine-tuned (right)"))
    return save(figure, path)


def draw_special_tokens(study: dict[str, Any], path: Path) -> Path:
    """Mean attention to [CLS] and to [SEP] per layer, a line per task and checkpoint, a panel per token, saved at
    ``path`` (PNG, with a PDF beside it); returns ``path``."""
    figure, panels = panels_for(len(TOKEN_TITLES), columns=2)
    for axes, (token, title) in zip(panels, TOKEN_TITLES.items()):
        for index, (task, entry) in enumerate(study["tasks"].items()):
            for checkpoint in CHECKPOINTS:
                mean = np.asarray(entry["special_tokens"][checkpoint][token]["mean"])
                layers = np.arange(1, len(mean) + 1)
                axes.plot(layers, mean, color=task_colour(index), linestyle=CHECKPOINT_STYLES[checkpoint],
                          marker="o", markersize=3, label=f"{task}, {checkpoint_title(checkpoint)}")
                axes.set_xticks(layers)
        axes.set_title(f"attention to {title}", fontsize=9)
        axes.set_xlabel("layer")
        axes.set_ylabel("mean attention")
        axes.grid(alpha=0.3)
    panels[-1].legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    suptitle(figure, study_title(study, "Attention to [CLS] and [SEP] per layer: pre-trained dashed, fine-tuned solid"))
    return save(figure, path)


def mean_sd(values: dict[str, Any], digits: int = 3) -> str:
    """``values``' ``mean`` and ``std`` as "mean ± sd", to ``digits`` decimals."""
    return f"{values['mean']:.{digits}f} ± {values['std']:.{digits}f}"


def dev_table(study: dict[str, Any]) -> str:
    """Table 1: the fine-tuned model's main dev metric per task beside the pre-trained model
    (untrained head), the majority class and how many seeds beat it; with bert-base-uncased,
    Kovaleva et al.'s fine-tuned score (their metric, in percent) beside it."""
    with_paper = study["model"] == PAPER_MODEL
    header = ["task", "metric", "pre-trained", "fine-tuned", "majority class", "seeds above majority"]
    beats = study["findings"].get("beats_majority", {}).get("per_task", {})
    rows = []
    for task, entry in study["tasks"].items():
        stem, metrics = entry["main_metric"], entry["metrics"]
        counts = beats.get(task)
        row = [task, stem.removeprefix("dev_"), mean_sd(metrics[f"{stem}_{PRETRAINED}"]),
               mean_sd(metrics[f"{stem}_{FINETUNED}"]),
               mean_sd(metrics[f"{stem}_majority"]) if f"{stem}_majority" in metrics else "-",
               f"{counts['holds']}/{counts['seeds']}" if counts else "-"]
        rows.append(row + ([KOVALEVA_TABLE_1.get(task, {}).get("finetuned", "-")] if with_paper else []))
    return markdown_table(header + (["Kovaleva et al. (fine-tuned)"] if with_paper else []), rows)


def metric_table(study: dict[str, Any], names: list[str]) -> str:
    """Mean ± s.d. over seeds of ``names`` (rows) per task (columns); '-' where a task lacks one."""
    tasks = list(study["tasks"])
    rows = [[name] + [mean_sd(study["tasks"][task]["metrics"][name]) if name in study["tasks"][task]["metrics"]
                      else "-" for task in tasks] for name in names]
    return markdown_table(["metric", *tasks], rows)


def study_tables(study: dict[str, Any]) -> dict[str, str]:
    """The study's Markdown tables by file stem: ``findings`` always; with tasks, ``dev_scores_by_task`` and
    ``headline_by_task``, and ``ablation_by_task`` when the ablation ran."""
    tables = {"findings": "".join(f"- {finding['text']}\n" for finding in study["findings"].values())}
    if not study["tasks"]:
        return tables
    tables["dev_scores_by_task"] = dev_table(study)
    headline = list(dict.fromkeys(name for entry in study["tasks"].values() for name in entry["headline"]))
    tables["headline_by_task"] = metric_table(study, headline)
    ablation = sorted({name for entry in study["tasks"].values() for name in entry["metrics"]
                       if name.startswith("ablation_") and name.endswith(FINETUNED) and "_layer_" not in name
                       and "_head_" not in name})
    if ablation:
        tables["ablation_by_task"] = metric_table(study, ablation)
    return tables
