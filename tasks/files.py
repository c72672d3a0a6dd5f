"""Files in and out: text read line by line with a one-line error for bytes that are not the
encoding, a corpus file parsed once per process (`parsed_once`), and every file the project
writes written atomically.

Atomic means a temporary file in the same folder, flushed and fsynced, then renamed over
the target: a reader (or a rerun after a kill) sees the old content or the new, never half
of a file. It lives here, in the lowest package, so `classifier` and `harness` share it.

A full disk is one mechanism for every write: `writing` (which `atomic_path` uses) turns
"no space left on device" in any form (``OSError`` ENOSPC or EDQUOT, safetensors' and
SQLite's messages) into `DiskFull`, one line naming the folder, what was written, the space
free there and, where known, the space needed. The outermost `writing` names the folder
(it knows most: the checkpoint's size, the corpus's size), and the partial file is removed.
"""

from __future__ import annotations

import codecs
import errno
import os
import re
import shutil
import socket
import tempfile
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import TypeVar

from tasks.errors import InputError

Item = TypeVar("Item")

FULL_DISK_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
# How a full disk reads where no errno survives: safetensors (Rust's io::Error), SQLite through SQLAlchemy.
FULL_DISK_WORDS = ("no space left on device", "os error 28", "disk quota exceeded", "database or disk is full")
RERUN_HINT = (
    "free space there (or point --cache-dir / --output-dir / $HARNESS_DATA elsewhere) and run the same "
    "command again: finished work is kept"
)
UMASK = os.umask(0o022)
os.umask(UMASK)  # read once: temporary files are created 0600, written files get the usual mode


def name_problem(name: str) -> str | None:
    """What keeps ``name`` (a task's, a study's, a label's) from naming one file or folder inside the
    folder it is meant for: empty, ``.`` or ``..``, a path separator, or a control character (a
    newline, a tab, NUL: folders named with them break every listing); None for a plain name."""
    if name.strip() in ("", ".", ".."):
        return "is not a name"
    if "/" in name or "\\" in name:
        return "holds a path separator"
    if any(unicodedata.category(character) == "Cc" for character in name):
        return "holds a control character"
    return None


def text_lines(path: Path, encoding: str = "utf-8") -> Iterator[str]:
    """The lines of ``path`` (newlines kept); undecodable bytes, or a NUL byte (binary data, or
    UTF-16, which decodes as UTF-8 where it is ASCII), are an `InputError` naming the line.

    Lines are decoded one at a time (a text-mode file decodes ahead in chunks, and its error
    would name the wrong line); no character of these encodings spans a newline byte.
    """
    decoder = codecs.getincrementaldecoder(encoding)()
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if b"\0" in raw:
                raise InputError(
                    f"{path}:{number}: not text (a NUL byte: a binary or UTF-16 file?); re-save the file as UTF-8 text"
                )
            try:
                yield decoder.decode(raw)
            except UnicodeDecodeError as error:
                raise InputError(
                    f"{path}:{number}: not {encoding.upper().replace('-SIG', '')} text "
                    f"(byte {raw[error.start : error.start + 1]!r}); re-save the file as UTF-8"
                ) from None


class DiskFull(InputError):
    """A write that found its file system full: one line naming the folder and what it needs."""

    def __init__(self, message: str, needed: int | None = None) -> None:
        super().__init__(message)
        self.needed = needed


def parsed_once(path: Path, reader: Callable[[Path], Iterable[Item]]) -> tuple[Item, ...]:
    """What ``reader`` makes of ``path``, read once per process and version of the file (its size and
    modification time): a run's sources read the same corpus files several times (UD English EWT's
    train split and LitBank each take over a second), and a study's runs the same files. The items
    are shared, so they are read-only."""
    status = path.stat()
    return _parsed(path.resolve(), status.st_size, status.st_mtime_ns, reader)


@lru_cache(maxsize=256)  # LitBank is 100 files
def _parsed(path: Path, size: int, modified: int, reader: Callable[[Path], Iterable[Item]]) -> tuple[Item, ...]:
    return tuple(reader(path))


def is_disk_full(error: BaseException | None) -> bool:
    """Whether ``error`` (or an error it was raised from) says that the file system is full."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, OSError) and error.errno in FULL_DISK_ERRNOS:
            return True
        if any(words in str(error).lower() for words in FULL_DISK_WORDS):
            return True
        error = error.__cause__ or error.__context__
    return False


def size_text(size: float) -> str:
    """``size`` bytes for people: 512 B, 3.1 kB, 12.0 MB, 1.4 GB."""
    for unit in ("B", "kB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    raise AssertionError("unreachable: GB ends the loop")


def free_space(folder: Path) -> int | None:
    """The bytes free on the file system of ``folder`` (or of its nearest existing parent)."""
    folder = Path(folder).absolute()
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        return shutil.disk_usage(folder).free
    except OSError:
        return None


def disk_full_message(folder: Path, what: str, needed: int | None = None) -> str:
    """The one line of a full disk: the folder, what was written, free and needed space, the fix."""
    free = free_space(folder)
    space = [
        f"{size_text(free)} free" if free is not None else None,
        f"about {size_text(needed)} needed" if needed else None,
    ]
    said = ", ".join(part for part in space if part)
    return f"{folder}: no space left on the device while writing {what}{f' ({said})' if said else ''}; {RERUN_HINT}"


@contextmanager
def writing(folder: Path, what: str, needed: int | None = None) -> Iterator[None]:
    """A block that writes ``what`` into ``folder``: a full disk in it is raised as `DiskFull`
    naming the folder, ``what`` and the ``needed`` bytes when known (an inner `writing`'s
    line is replaced by this one, which knows more; its size is kept if this one has none)."""
    try:
        yield
    except DiskFull as inner:
        needed = needed or inner.needed
        raise DiskFull(disk_full_message(folder, what, needed), needed) from inner
    except Exception as error:
        if not is_disk_full(error):
            raise
        raise DiskFull(disk_full_message(folder, what, needed), needed) from error


# A temporary file names the machine and process writing it (``.figure.k3j2.host-1234.tmp.pdf``),
# so one left by a killed process is told from one a live writer is still writing (`remove_orphans`).
HOST = socket.gethostname().replace(".", "_").replace("-", "_") or "host"
TEMPORARY = re.compile(r"^\..*\.(?P<host>[^.]+)-(?P<pid>\d+)\.tmp(\.[^.]*)?$")


def remove_orphans(folder: Path) -> list[Path]:
    """Remove the temporary files `atomic_path` left in ``folder`` when their process was killed
    before it could (SIGKILL, a power cut): those of this machine whose process is gone. A live
    writer's, or another machine's on a shared disk, are left alone. Returns those removed."""
    removed = []
    for path in Path(folder).glob(".*.tmp*"):
        found = TEMPORARY.match(path.name)
        if found and found["host"] == HOST and not running(int(found["pid"])):
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


def running(pid: int) -> bool:
    """Whether process ``pid`` exists on this machine (on Windows, where signal 0 would end it, always)."""
    if os.name == "nt":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        return True
    return True


@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temporary path beside ``path`` (same suffix, for writers that go by it) to write to;
    on leaving the block it is fsynced and renamed over ``path``, on an error removed."""
    path = Path(path)
    with writing(path.parent, path.name):
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(
            dir=path.parent, prefix=f".{path.stem}.", suffix=f".{HOST}-{os.getpid()}.tmp{path.suffix}"
        )
        os.close(handle)
        temporary = Path(name)
        try:
            yield temporary
            with temporary.open("rb+") as written:
                os.fsync(written.fileno())
            os.chmod(temporary, 0o666 & ~UMASK)
            os.replace(temporary, path)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise


def atomic_write_bytes(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` so that readers see the old or the new content, never a mix."""
    with atomic_path(path) as temporary:
        temporary.write_bytes(data)
    return Path(path)


def atomic_write_text(path: Path, text: str) -> Path:
    """`atomic_write_bytes` for UTF-8 text."""
    return atomic_write_bytes(path, text.encode("utf-8"))
