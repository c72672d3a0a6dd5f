"""Progress bars that read well in a terminal and in a log file.

In a terminal (standard error a TTY) a bar is tqdm's, redrawn in place. Redirected to a file,
tqdm's redrawing leaves every intermediate state behind a carriage return, the last one twice
(the update that reaches the end, then the close), and nested bars move the cursor up with
escape codes. There a bar is a `LogBar` instead: plain lines, no carriage return and no cursor
movement, one line when it ends and one a minute on long work in between.
"""

from __future__ import annotations

import sys
import time
from typing import IO, Any

from tqdm import tqdm

LOG_INTERVAL = 60.0  # seconds between two lines of a bar written to a file


class Lines:
    """A file that takes whole lines only: tqdm's own carriage returns and bare newlines are dropped."""

    def __init__(self, file: IO[str]) -> None:
        self.file = file

    def write(self, text: str) -> None:
        if text.strip("\r\n"):
            self.file.write(text)

    def flush(self) -> None:
        self.file.flush()


class LogBar(tqdm):
    """A tqdm bar for a file: its state as a line of its own at most every ``mininterval``
    seconds (`LOG_INTERVAL`), never twice at the same count, and once when it closes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.pop("position", None)  # a line of its own needs no place among nested bars
        kwargs.setdefault("mininterval", LOG_INTERVAL)
        kwargs["file"] = Lines(kwargs.get("file") or sys.stderr)
        self.shown_count: float | None = None
        self.shown_time = time.monotonic()  # the opening 0% line is not worth one
        self.closing = False
        super().__init__(*args, **kwargs)

    def display(self, msg: str | None = None, pos: int | None = None) -> bool:
        now = time.monotonic()
        due = self.closing or now - self.shown_time >= self.mininterval
        if self.n != self.shown_count and due:
            self.fp.write(f"{self}\n")
            self.fp.flush()
            self.shown_count, self.shown_time = self.n, now
        return True

    def close(self) -> None:
        if not self.disable:
            self.closing = True
        super().close()


def progress_bar(**options: Any) -> tqdm:
    """A progress bar on standard error: tqdm's in a terminal, a `LogBar` when it is redirected."""
    return tqdm(**options) if sys.stderr.isatty() else LogBar(**options)
