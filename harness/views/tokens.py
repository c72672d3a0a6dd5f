"""Special tokens named as the run's model names them: the figures and tables name them by role,
as BERT calls them ("[CLS]"), and within `model_tokens` each role is written as the model calls
it ("<s>"), in tables (`own_tokens`) and in every text of a figure (`rename_tokens`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from harness.views.lazy import mpl, plt

# The figures and tables name special tokens by role, as BERT calls them; while a run's are drawn
# (`model_tokens`) each role is written as the model calls it ({"[CLS]": "<s>", "[SEP]": "</s>"}).
TOKEN_NAMES: ContextVar[dict[str, str] | None] = ContextVar("token_names", default=None)


@contextmanager
def model_tokens(names: dict[str, str] | None) -> Iterator[None]:
    """Within the block figures (`save`) and tables (`own_tokens`) name the special tokens as
    ``names`` does (role -> the model's token; the run's ``special_tokens``)."""
    token = TOKEN_NAMES.set(dict(names or {}))
    try:
        yield
    finally:
        TOKEN_NAMES.reset(token)


def own_tokens(text: str, markdown: bool = False, names: dict[str, str] | None = None) -> str:
    """``text`` with each special token's role name replaced by the model's own token (``names``,
    default those of `model_tokens`); in ``markdown`` as code, so RoBERTa's ``<s>`` is no tag."""
    for role, name in ((TOKEN_NAMES.get() or {}) if names is None else names).items():
        if name != role:
            text = text.replace(role, f"`{name}`" if markdown else name)
    return text


def rename_tokens(figure: plt.Figure) -> None:
    """Every text of ``figure`` (titles, labels, ticks, legends) with the model's own token names."""
    names = TOKEN_NAMES.get()
    if not names or all(name == role for role, name in names.items()):  # BERT's own names: nothing to rename
        return
    for axes in figure.axes:  # tick labels are made again from their formatter at each drawing
        for axis in (axes.xaxis, axes.yaxis):
            if any(own_tokens(label.get_text()) != label.get_text() for label in axis.get_ticklabels()):
                formatter = axis.get_major_formatter()
                axis.set_major_formatter(
                    mpl.ticker.FuncFormatter(
                        lambda value, position, named=formatter: own_tokens(named(value, position), names=names)
                    )
                )
    for text in figure.findobj(mpl.text.Text):
        renamed = own_tokens(text.get_text())
        if renamed != text.get_text():
            text.set_text(renamed)
