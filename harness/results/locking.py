"""Lock files, so that identical commands started at once do the work once.

A lock is an advisory ``fcntl.flock`` on a small file that holds the owner's pid. The
kernel drops it when its process ends however it ends (even SIGKILL), so a lock is never
left stale; a second process waits for the first and then finds its work done (cached
checkpoint, stored results, metrics already on the MLflow run).
"""

from __future__ import annotations

import fcntl
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger(__name__)


def _holder(handle) -> str:
    handle.seek(0)
    return handle.read().strip() or "unknown"


@contextmanager
def exclusive(path: Path, what: str) -> Iterator[None]:
    """Hold the lock file ``path`` for the block; if another process holds it, say so once
    (naming ``what`` it is doing and its pid) and wait for it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.warning("%s is in progress in another process (pid %s, lock %s); waiting for it to finish",
                        what, _holder(handle), path)
            fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
