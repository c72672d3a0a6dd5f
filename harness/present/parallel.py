"""Figures drawn on every core: the pieces of a drawing (a run's analyses, a study's views) each
in a process of a pool.

Drawing is Python (matplotlib's artists, text layout, Agg's rasteriser) on one core per process,
and the pieces are independent (each writes files of its own), so N processes draw a run in about
1/N of one's time. The processes come from multiprocessing's fork server (spawn where there is
none), which imports the drawing layer once: the process that asks, a run holding torch and its
threads, is never forked, and a worker imports what it unpickles, `harness.views` and
`harness.present`, which import no torch (and the main script, as multiprocessing's workers do:
`harness`'s imports the CLI alone).

A worker draws a piece as the asking process would: with its special-token names and file
formats (`harness.views.tokens.model_tokens`, `harness.views.saving.figure_formats`), its collector frozen
(`tasks.collector.frozen_heap`), each text laid out and shaped once (`harness.views.text_layout.kept_layouts`,
as in the asking process, and only while drawing); it sends back the piece's value and the warnings it logged (the
figure checks' among them), which are handled again here under their own loggers, so a figure's
problem reads the same from either. Results are taken in the order the pieces were given, so what
is recorded of a drawing does not depend on which process finished first. One piece, one process
asked for, or a process that may not have children (a daemon) draws here, in order.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from functools import partial
from typing import TypeVar

from harness.views.saving import DrawingSettings, drawing_settings, drawn_as
from harness.views.text_layout import kept_layouts
from tasks.collector import frozen_heap

Value = TypeVar("Value")
# What the fork server imports before it forks a worker: the drawing layer, once for every worker.
PRELOADED = ["harness.present.redraw", "harness.present.study_figures"]
# The fewest pieces drawn in parallel unasked: a fork server starts in about 2 s (a Python with the
# drawing layer imported), about what drawing four analyses' figures takes on one core.
ENOUGH_PIECES = 6
# What the fork server imports besides the drawing layer (`preload_also`).
_ALSO_PRELOADED: list[str] = []


def allowed_cores() -> int:
    """The cores this process may run on: its affinity (which `taskset` and container limits set)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def cores() -> int:
    """The cores this process may use: `allowed_cores`, or fewer where OMP_NUM_THREADS says so (a
    scheduler's share of a node, a test worker's)."""
    allowed = allowed_cores()
    share = os.environ.get("OMP_NUM_THREADS", "")
    return max(1, min(allowed, int(share))) if share.isdigit() and int(share) > 0 else allowed


def drawing_processes(asked: int, pieces: int) -> int:
    """How many processes draw ``pieces``: ``asked``, or with 0 one per core (`cores`) where there
    are `ENOUGH_PIECES` or more (fewer draw here in less time than a fork server takes to start)."""
    if asked:
        return asked
    return cores() if pieces >= ENOUGH_PIECES else 1


@contextmanager
def drawn(pieces: Sequence[Callable[[], Value]], processes: int) -> Iterator[list[Callable[[], Value]]]:
    """For each piece (a picklable call of a module-level function: `functools.partial`), in
    order, a call that returns its value or raises its error, as the piece itself would: drawn in
    up to ``processes`` processes (`drawing_processes`), or here, when called, where one suffices.
    Leaving the block cancels the pieces not begun (after an error) and waits for those under way."""
    workers = min(drawing_processes(processes, len(pieces)), len(pieces))
    if workers <= 1 or multiprocessing.current_process().daemon:
        with kept_layouts():
            yield list(pieces)
        return
    settings = drawing_settings()
    with ProcessPoolExecutor(workers, mp_context=context()) as pool:
        futures = [pool.submit(draw_piece, piece, settings) for piece in pieces]
        try:
            yield [partial(handled, future) for future in futures]
        finally:
            for future in futures:
                future.cancel()


def preload_also(modules: Sequence[str]) -> None:
    """Have the fork server import ``modules`` too. A process has one fork server, and it imports
    what the last `set_forkserver_preload` before its start named: a program that forks processes
    of its own from it (the test suite's warm ``harness`` processes) names their modules here, so
    that the server holds both, whichever of them starts it."""
    _ALSO_PRELOADED.extend(module for module in modules if module not in _ALSO_PRELOADED)


def context() -> multiprocessing.context.BaseContext:
    """The fork server, with the drawing layer imported in it (and `preload_also`'s modules; spawn
    where there is no fork server)."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    server = multiprocessing.get_context("forkserver")
    # heeded when the server starts: the first pool of the process
    server.set_forkserver_preload([*PRELOADED, *_ALSO_PRELOADED])
    return server


def draw_piece(piece: Callable[[], Value], settings: DrawingSettings) -> tuple[Value, list[logging.LogRecord]]:
    """In a worker: ``piece()`` drawn as the asking process draws (``settings``: `drawing_settings`),
    with the records of what it logged at warning level or above."""
    root, kept = logging.getLogger(), Kept()
    handlers, root.handlers = root.handlers, [kept]  # said once, by the asking process
    try:
        with drawn_as(settings), frozen_heap(), kept_layouts():
            return piece(), kept.records
    finally:
        root.handlers = handlers


def handled(future: Future[tuple[Value, list[logging.LogRecord]]]) -> Value:
    """A piece's value, once its records are handled by their loggers here as if logged here."""
    value, records = future.result()
    for record in records:
        logger = logging.getLogger(record.name)
        if logger.isEnabledFor(record.levelno):
            logger.handle(record)
    return value


class Kept(logging.Handler):
    """Keeps the records of warnings and errors, made fit to send to another process (their
    message formatted, no traceback objects)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        record.msg, record.args = record.getMessage(), None
        record.exc_text = logging.Formatter().formatException(record.exc_info) if record.exc_info else None
        record.exc_info = None
        self.records.append(record)
