"""Files in and out: text read line by line with a one-line error for bytes that are not the
encoding, and every file the project writes written atomically.

Atomic means a temporary file in the same folder, flushed and fsynced, then renamed over
the target: a reader (or a rerun after a kill) sees the old content or the new, never half
of a file. It lives here, in the lowest package, so `classifier` and `harness` share it.
"""

from __future__ import annotations

import codecs
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tasks.errors import InputError

UMASK = os.umask(0o022)
os.umask(UMASK)  # read once: temporary files are created 0600, written files get the usual mode


def text_lines(path: Path, encoding: str = "utf-8") -> Iterator[str]:
    """The lines of ``path`` (newlines kept); undecodable bytes are an `InputError` naming the line.

    Lines are decoded one at a time (a text-mode file decodes ahead in chunks, and its error
    would name the wrong line); no character of these encodings spans a newline byte.
    """
    decoder = codecs.getincrementaldecoder(encoding)()
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                yield decoder.decode(raw)
            except UnicodeDecodeError as error:
                raise InputError(f"{path}:{number}: not {encoding.upper().replace('-SIG', '')} text "
                                 f"(byte {raw[error.start:error.start + 1]!r}); re-save the file as UTF-8") from None


@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temporary path beside ``path`` (same suffix, for writers that go by it) to write to;
    on leaving the block it is fsynced and renamed over ``path``, on an error removed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=f".tmp{path.suffix}")
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
