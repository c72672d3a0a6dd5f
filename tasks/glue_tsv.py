"""Reader for the original GLUE TSV folders (the layout of the GLUE download script).

Quirks handled on purpose: CoLA has no header; MRPC's header starts with a UTF-8 BOM;
SST-2 sentences end with a space; quotes are literal text, so no CSV quoting is applied
(a lone ``"`` in MRPC would otherwise swallow the following lines).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from tasks.errors import InputError
from tasks.examples import Example
from tasks.files import text_lines
from tasks.spec import GlueLayout, Task


def split_path(data_dir: str | Path, task: Task, split: str) -> Path:
    """Path of ``<data_dir>/<Task folder>/<split>.tsv``, or a clear error if missing."""
    folder = layout(task).folder
    path = Path(data_dir) / folder / f"{split}.tsv"
    if not path.is_file():
        raise InputError(
            f"{path} not found: the GLUE folder {data_dir} has no {folder}/{split}.tsv; "
            f"download {task.name} with the GLUE script or drop --data-dir/GLUE_DIR to use `datasets`"
        )
    return path


def read_glue_tsv(data_dir: str | Path, task: Task, split: str) -> Iterator[Example]:
    """Yield the examples of one split, checking every row's shape and label."""
    path, files = split_path(data_dir, task, split), layout(task)
    lines = (line.rstrip("\r\n") for line in text_lines(path, "utf-8-sig"))
    first = next(lines, None) if files.header else ""
    if first is None:
        raise InputError(
            f"{path} has no examples (the file is empty); check that it is the {task.name.upper()} {split} file of GLUE"
        )
    header = first.split("\t") if files.header else []
    text, second, label = files.columns
    positions = (
        _column_index(path, header, text),
        _optional_column(path, header, second),
        _column_index(path, header, label),
    )
    first_line = 2 if files.header else 1
    rows = 0
    for line_number, line in enumerate(lines, start=first_line):
        if not line.strip():
            continue
        rows += 1
        yield _parse_row(path, line_number, line.split("\t"), positions, task, split)
    if not rows:
        raise InputError(
            f"{path} has no examples{' below its header' if files.header else ''}; "
            f"check that it is the {task.name.upper()} {split} file of GLUE"
        )


def layout(task: Task) -> GlueLayout:
    """The GLUE folder's layout of ``task``; a task of another kind has none (its data comes from `datasets`)."""
    if task.glue is None:
        raise InputError(f"{task.name} is not a GLUE task; its data comes from its spec's dataset, not --data-dir")
    return task.glue


def _optional_column(path: Path, header: list[str], column: str | int | None) -> int | None:
    return None if column is None else _column_index(path, header, column)


def _column_index(path: Path, header: list[str], column: str | int) -> int:
    if isinstance(column, int):
        return column
    if column not in header:
        raise InputError(
            f"{path}:1: header has no column {column!r} (found {header}); is this the GLUE TSV for the right task?"
        )
    return header.index(column)


def _parse_row(
    path: Path, line_number: int, cells: list[str], positions: tuple[int, int | None, int], task: Task, split: str
) -> Example:
    a_pos, b_pos, label_pos = positions
    needed = max(p for p in positions if p is not None)
    if len(cells) <= needed:
        raise InputError(
            f"{path}:{line_number}: malformed row with {len(cells)} columns, "
            f"expected at least {needed + 1}; fix or remove that line"
        )
    raw_label = cells[label_pos].strip()
    return Example(
        guid=f"{task.name}-{line_number}",
        text_a=cells[a_pos].strip(),
        text_b=cells[b_pos].strip() if b_pos is not None else None,
        label=_parse_label(path, line_number, raw_label, task),
        split=split,
    )


def _parse_label(path: Path, line_number: int, raw: str, task: Task) -> int | float:
    if task.is_regression:
        try:
            return float(raw)
        except ValueError:
            raise InputError(f"{path}:{line_number}: score {raw!r} is not a number") from None
    values = layout(task).values
    if raw not in values:
        raise InputError(f"{path}:{line_number}: label {raw!r} is not one of {list(values)}")
    return values.index(raw)
