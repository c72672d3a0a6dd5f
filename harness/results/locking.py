"""Lock files, so that identical commands started at once do the work once.

A lock is a `filelock.FileLock`: ``flock`` on POSIX, ``LockFileEx`` on Windows, both dropped by
the operating system when their process ends however it ends (even SIGKILL), so a lock is never
left stale (where a file system has no ``flock``, filelock's marker file names its owner, and a
marker whose process is gone is taken over). The owner's pid is written beside the lock, in
``<lock>.pid`` (Windows keeps other processes from reading a locked file), so a second process
says once whose work it waits for; it then finds that work done (cached checkpoint, stored
results, metrics already on the MLflow run).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

log = logging.getLogger(__name__)


def owner_file(lock: Path) -> Path:
    """Where the pid of ``lock``'s holder is written."""
    return lock.with_name(lock.name + ".pid")


def holder(lock: Path) -> str:
    """The pid written by ``lock``'s holder, or ``unknown`` (not written yet, or already removed)."""
    try:
        return owner_file(lock).read_text().strip() or "unknown"
    except FileNotFoundError:
        return "unknown"


@contextmanager
def exclusive(path: Path, what: str) -> Iterator[None]:
    """Hold the lock file ``path`` for the block; if another process holds it, say so once
    (naming ``what`` it is doing and its pid) and wait for it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(path)
    try:
        lock.acquire(blocking=False)
    except Timeout:
        log.warning(
            "%s is in progress in another process (pid %s, lock %s); waiting for it to finish", what, holder(path), path
        )
        lock.acquire()
    try:
        owner_file(path).write_text(str(os.getpid()))
        yield
    finally:
        owner_file(path).unlink(missing_ok=True)  # before the release: the next holder's pid is never removed
        lock.release()
