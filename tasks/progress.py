"""Progress bars that read well in a terminal and in a log file.

In a terminal (standard error a TTY) a bar is tqdm's, redrawn in place. Redirected to a file,
tqdm's redrawing leaves every intermediate state behind a carriage return, the last one twice
(the update that reaches the end, then the close), and nested bars move the cursor up with
escape codes. There a bar is a `LogBar` instead: plain lines, no carriage return and no cursor
movement, one line when it ends and one a minute on long work in between.

tqdm draws a bar only from ``update`` (and its monitor thread only lowers ``miniters``, the
count an update must add before it draws), and a bar here drew only at a new count: one long
step (a batch of a large model on a CPU, a slow training step) showed nothing until it ended,
and a stage read from a file seemed silent. A `LogBar` has a timer of its own that writes the
bar's state whenever its last line is a minute old, between updates too.
"""

from __future__ import annotations

import sys
import threading
import time
import weakref
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
    """A tqdm bar for a file: its state as a line of its own every ``mininterval`` seconds
    (`LOG_INTERVAL`) while it is open, whether or not it was updated (a timer writes it), and
    once when it closes unless its last line already showed the final count."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # Any: tqdm's arguments
        kwargs.pop("position", None)  # a line of its own needs no place among nested bars
        kwargs.setdefault("mininterval", LOG_INTERVAL)
        kwargs["file"] = Lines(kwargs.get("file") or sys.stderr)
        self.shown_count: float | None = None
        self.shown_time = time.monotonic()  # the opening 0% line is not worth one
        self.closing = False
        self.stopped = threading.Event()
        self.timer: threading.Thread | None = None
        super().__init__(*args, **kwargs)
        if not self.disable:
            self.timer = threading.Thread(
                target=keep_showing, args=(weakref.ref(self), self.stopped), name="LogBar timer", daemon=True
            )
            self.timer.start()

    def display(self, msg: str | None = None, pos: int | None = None) -> bool:
        if (self.n != self.shown_count) if self.closing else self.overdue() >= 0:
            self.show()
        return True

    def overdue(self) -> float:
        """Seconds since the last line was due (negative: until the next one is)."""
        return time.monotonic() - self.shown_time - self.mininterval

    def show(self) -> None:
        """Write the bar's state as a line."""
        self.fp.write(f"{self}\n")
        self.fp.flush()
        self.shown_count, self.shown_time = self.n, time.monotonic()

    def close(self) -> None:
        if not self.disable:
            self.closing = True
        self.stopped.set()
        super().close()
        if self.timer is not None and self.timer is not threading.current_thread():
            self.timer.join()


def keep_showing(bar_reference: weakref.ref, stopped: threading.Event) -> None:
    """A `LogBar`'s timer: its state whenever its last line is ``mininterval`` old, until it is
    closed (or collected: the timer holds it weakly, so a bar left open does not live on)."""
    wait = 0.0
    while not stopped.wait(wait):
        bar = bar_reference()
        if bar is None:
            return
        with bar.get_lock():  # the lock tqdm takes to draw: no line is written half over another
            if not bar.disable and bar.overdue() >= 0:
                bar.show()
            wait = max(-bar.overdue(), 0.05)
        del bar


def progress_bar(**options: Any) -> tqdm:  # Any: tqdm's keyword arguments
    """A progress bar on standard error: tqdm's in a terminal, a `LogBar` when it is redirected."""
    return tqdm(**options) if sys.stderr.isatty() else LogBar(**options)
