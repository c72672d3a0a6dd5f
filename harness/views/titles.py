"""How figures and tables name things: checkpoints by their titles ("pre-trained"), models
and runs, difference panels; and titles broken into lines that fit the figure or panel they head.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from harness.results.run_record import RunSection
from harness.views.lazy import plt

if TYPE_CHECKING:
    from matplotlib.text import Text

CHECKPOINT_TITLES = {"pretrained": "pre-trained", "finetuned": "fine-tuned"}


def checkpoint_title(name: str) -> str:
    """How a checkpoint is named in figures and tables ("pre-trained", "fine-tuned", or its own name)."""
    return CHECKPOINT_TITLES.get(name, name)


def model_title(model: str) -> str:
    """A model as figures name it: a hub id or alias as given, a local folder by its name (never
    a path of the machine that ran it)."""
    return Path(model).name if Path(model).is_absolute() else model


def run_title(run: RunSection) -> str:
    """``"minilm on rte"``: the model and the task of a run, for figure titles."""
    return f"{model_title(run.get('model', 'model'))} on {run.get('task', 'task')}"


def wrapped(title: str, width_inches: float, fontsize: float = 9) -> str:
    """``title`` broken into lines that fit ``width_inches`` at ``fontsize`` points (a character
    is about 0.55 em wide); its own line breaks kept."""
    width = max(24, int(width_inches * 72 / (0.55 * fontsize)))
    return "\n".join(textwrap.fill(line, width) for line in title.split("\n"))


def axes_title(axes: plt.Axes, title: str, fontsize: float = 9) -> None:
    """A panel's title, broken into lines that fit the panel's width (a long model name or hub id
    must not push it off the canvas)."""
    figure = axes.get_figure()  # not root=True: matplotlib 3.8 and 3.9 take none; the harness draws no subfigures
    if not isinstance(figure, plt.Figure):
        raise ValueError("a panel's title is fitted to its figure's width, and this panel is in no figure of its own")
    width = axes.get_position().width * figure.get_figwidth()
    axes.set_title(wrapped(title, width, fontsize), fontsize=fontsize)


def suptitle(figure: plt.Figure, title: str, fontsize: float = 10) -> Text:
    """The figure's title, broken into lines that fit its width."""
    return figure.suptitle(wrapped(title, figure.get_figwidth() - 0.5, fontsize), fontsize=fontsize)


def difference_title(before: str, after: str) -> str:
    """``"fine-tuned − pre-trained"``: the title of a panel showing ``after`` minus ``before``."""
    return f"{checkpoint_title(after)} − {checkpoint_title(before)}"


def titled_pairs(pairs: Sequence[Sequence[str]]) -> list[tuple[str, str]]:
    """A run's declared (before, after) checkpoint pairs by their titles, as the panels are keyed."""
    return [(checkpoint_title(before), checkpoint_title(after)) for before, after in pairs]
