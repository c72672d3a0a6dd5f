"""Lock files, so that identical commands started at once do the work once.

A lock is ``flock`` on a lock file (`filelock.FileLock` where the system has no ``fcntl``,
Windows' ``LockFileEx``, or the file system no ``flock``): the operating system drops it when its
process ends however it ends (even SIGKILL), so a lock is never left stale. The holder's pid is
written beside the lock, in ``<lock>.pid`` (Windows keeps other processes from reading a locked
file), so a second process says once whose work it waits for; it then finds that work done
(cached checkpoint, stored results, metrics already on the MLflow run).

Neither file stays once its work is done: the holder removes both before it lets go. A process
that waited on the removed file finds that the path no longer names what it locked, and locks
the file there now instead, so two processes never hold the same path at once (removing a lock
file after letting go, as plain ``flock`` locks cannot, would let a third in beside the second).
"""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

try:
    import fcntl
except ImportError:  # Windows: filelock's LockFileEx, which removes its file itself
    fcntl = None  # type: ignore[assignment]

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


def waiting(path: Path, what: str) -> None:
    log.warning(
        "%s is in progress in another process (pid %s, lock %s); waiting for it to finish", what, holder(path), path
    )


@contextmanager
def exclusive(path: Path, what: str) -> Iterator[None]:
    """Hold the lock file ``path`` for the block; if another process holds it, say so once
    (naming ``what`` it is doing and its pid) and wait for it. Both files are gone afterwards."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = flocked(path, what) if fcntl is not None else None
    lock = None
    if descriptor is None:
        lock = FileLock(path)
        try:
            lock.acquire(blocking=False)
        except Timeout:
            waiting(path, what)
            lock.acquire()
    try:
        owner_file(path).write_text(str(os.getpid()))
        yield
    finally:
        owner_file(path).unlink(missing_ok=True)  # before letting go: the next holder's pid is never removed
        if descriptor is not None:
            path.unlink(missing_ok=True)  # while held: see the module's docstring
            os.close(descriptor)  # lets go of the flock
        elif lock is not None:
            lock.release()


def flocked(path: Path, what: str) -> int | None:
    """A descriptor of the lock file at ``path``, flock'ed by this process, once ``path`` still names
    that file; None where the file system has no flock (filelock's marker file takes over)."""
    said = False
    while True:
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if not said:
                    waiting(path, what)
                    said = True
                fcntl.flock(descriptor, fcntl.LOCK_EX)
            if names(path, descriptor):
                return descriptor
        except OSError as error:
            os.close(descriptor)
            if error.errno == errno.ENOSYS:
                return None
            raise
        except BaseException:  # Ctrl-C or SIGTERM while waiting
            os.close(descriptor)
            raise
        os.close(descriptor)  # its holder removed it as it finished: lock the file the path names now


def names(path: Path, descriptor: int) -> bool:
    """Whether ``path`` still names the file open as ``descriptor``."""
    try:
        return os.path.samestat(os.stat(path), os.fstat(descriptor))
    except FileNotFoundError:
        return False
