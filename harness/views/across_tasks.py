"""What every cross-task figure and table of a study shares: the checkpoints' line styles,
the tasks' colours, titles that say over how many seeds a mean is, and mean ± s.d. cells."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

from harness.results.checkpoints import FINETUNED, PRETRAINED
from harness.results.study_record import Spread, StudyRecord, TaskAggregate
from harness.views.drawing import panels_for
from harness.views.markdown import markdown_table
from harness.views.palette import CHECKPOINT_COLOURS, OKABE_ITO
from harness.views.saving import save
from harness.views.titles import axes_title, checkpoint_title, model_title, suptitle

CHECKPOINTS = (PRETRAINED, FINETUNED)
CHECKPOINT_STYLES = {PRETRAINED: "--", FINETUNED: "-"}
# Tasks take the palette's colours other than the checkpoints' (blue and vermillion mean
# pre-trained and fine-tuned in every figure of the harness).
TASK_COLOURS = [colour for colour in OKABE_ITO.values() if colour not in CHECKPOINT_COLOURS.values()]


def task_colour(index: int) -> str:
    """The colour of the task at ``index``, cycling through `TASK_COLOURS`."""
    return TASK_COLOURS[index % len(TASK_COLOURS)]


def study_title(study: StudyRecord, what: str) -> str:
    """A figure title: ``what``, the model and how many seeds the means are over."""
    seeds = sorted({len(entry["seeds"]) for entry in study["tasks"].values()})
    seed_words = f"{seeds[0]} seeds" if len(seeds) == 1 else f"{seeds[0]}-{seeds[-1]} seeds"
    return f"{what} ({model_title(study['model'])}, mean over {seed_words})"


def mean_sd(values: Spread, digits: int = 3) -> str:
    """``values``' ``mean`` and ``std`` as "mean ± sd", to ``digits`` decimals."""
    return f"{values['mean']:.{digits}f} ± {values['std']:.{digits}f}"


def metric_table(study: StudyRecord, names: list[str]) -> str:
    """Mean ± s.d. over seeds of ``names`` (rows) per task (columns); '-' where a task lacks one."""
    tasks = list(study["tasks"])
    rows = [
        [name]
        + [
            mean_sd(study["tasks"][task]["metrics"][name]) if name in study["tasks"][task]["metrics"] else "-"
            for task in tasks
        ]
        for name in names
    ]
    return markdown_table(["metric", *tasks], rows)


def draw_per_layer_by_task(
    study: StudyRecord,
    panels: Mapping[str, Callable[[TaskAggregate, str], list[float]]],
    ylabel: str,
    title: str,
    path: Path,
) -> Path:
    """Per layer, a line per task and checkpoint (pre-trained dashed, fine-tuned solid), a panel per
    entry of ``panels`` (its title -> the series of a task's entry and a checkpoint), saved at
    ``path`` (PNG, with a PDF beside it); returns ``path``."""
    figure, axes_list = panels_for(len(panels), columns=2)
    for axes, (panel, series) in zip(axes_list, panels.items()):
        for index, (task, entry) in enumerate(study["tasks"].items()):
            for checkpoint in CHECKPOINTS:
                mean = np.asarray(series(entry, checkpoint))
                layers = np.arange(1, len(mean) + 1)
                axes.plot(
                    layers,
                    mean,
                    color=task_colour(index),
                    linestyle=CHECKPOINT_STYLES[checkpoint],
                    marker="o",
                    markersize=3,
                    label=f"{task}, {checkpoint_title(checkpoint)}",
                )
                axes.set_xticks(layers)
        axes_title(axes, panel)
        axes.set_xlabel("layer")
        axes.set_ylabel(ylabel)
        axes.grid(alpha=0.3)
    axes_list[-1].legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    suptitle(figure, study_title(study, f"{title}: pre-trained dashed, fine-tuned solid"))
    return save(figure, path)
