"""Downloading a pinned corpus (`tasks.corpora`) into the data cache, file by file, verified.

Each file is streamed into a temporary file beside its target with a progress bar, checked
against its pinned size and SHA-256, fsynced and renamed into place (`tasks.files.atomic_path`),
so the cache never holds a partial or unverified file: a failure (an HTTP error, a dropped
connection, a checksum mismatch) removes what it was writing and is one `InputError` line
naming the file, its URL and the fix; a rerun fetches only the files still missing.

It stays on the standard library rather than a library's download helper. huggingface_hub's
``http_get`` checks a size, not a SHA-256, and retries a failed connection five times a second
apart with a multi-line warning each (an offline machine would wait and print where it should fail
at once in one line); pooch, a new dependency on requests, checks the SHA-256 but moves the file in
without an fsync, draws a bar per file (LitBank has 100) and raises requests' exceptions. Neither
turns a full disk into `tasks.files.writing`'s line, and the harness needs no retry loop: a rerun
fetches only what is missing.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from tasks.corpora import (
    DOWNLOAD_COMMAND,
    Corpus,
    CorpusFile,
    cache_folder,
    download_host,
    missing_files,
)
from tasks.errors import InputError
from tasks.files import atomic_path, writing
from tasks.progress import progress_bar

CHUNK = 1 << 16
TIMEOUT_SECONDS = 30  # per connection attempt and per read: an offline machine fails at once, a stalled one here


def download_corpus(corpus: Corpus, folder: Path | None = None, host: str | None = None) -> Path:
    """Every file of ``corpus`` missing from ``folder`` (default its cache folder) downloaded from
    ``host`` (default `download_host`), verified and renamed into place; returns the folder.
    Says what it downloads, from where and into which folder, on stderr, with a progress bar."""
    folder = folder or cache_folder(corpus)
    missing = missing_files(corpus, folder)
    if not missing:
        return folder
    host, total = host or download_host(), sum(file.size for file in missing)
    print(
        f"downloading {corpus.title} {corpus.version} ({corpus.licence}, {len(missing)} files, {total / 1e6:.1f} MB) "
        f"from {host} into {folder}",
        file=sys.stderr,
    )
    try:
        with (
            writing(folder, f"{corpus.title} {corpus.version} ({len(missing)} files)", total),
            progress_bar(total=total, desc=corpus.name, unit="B", unit_scale=True) as bar,
        ):
            for file in missing:
                download_file(corpus.file_url(file, host), folder / file.path, file, bar)
    finally:
        remove_empty_folders(folder)
    return folder


@dataclass(frozen=True)
class Received:
    """What a download got: its bytes, their SHA-256, and the size the server announced (None: not said)."""

    size: int
    sha256: str
    announced: int | None

    @property
    def cut_short(self) -> bool:
        """Whether the connection closed before the announced end of the file."""
        return self.announced is not None and self.size < self.announced


def download_file(url: str, target: Path, pinned: CorpusFile, bar: tqdm) -> None:
    """``url`` into ``target``, atomically, if its size and SHA-256 are ``pinned``'s; else an
    `InputError` naming the file and the URL (and both hashes), and nothing written."""
    with atomic_path(target) as temporary:
        received = fetch(url, temporary, pinned.size, bar)
        if received.cut_short:
            raise InputError(
                f"{url}: the connection closed after {received.size} of {received.announced} bytes of "
                f"{pinned.path}; nothing was kept: run `{DOWNLOAD_COMMAND}` again (it fetches only "
                "what is missing)"
            )
        if (received.sha256, received.size) != (pinned.sha256, pinned.size):
            raise InputError(
                f"{url}: {pinned.path} has SHA-256 {received.sha256} ({received.size} bytes), pinned "
                f"{pinned.sha256} ({pinned.size} bytes); nothing was kept: the server's copy is not "
                "the pinned release (check $HARNESS_DATA_MIRROR)"
            )


def fetch(url: str, destination: Path, expected_size: int, bar: tqdm) -> Received:
    """The body of ``url`` written to ``destination`` (up to a chunk beyond ``expected_size``). A
    connection broken mid-file ends the body early (`Received.cut_short`); an HTTP error or an
    unreachable host is an `InputError`."""
    try:
        response = urllib.request.urlopen(url, timeout=TIMEOUT_SECONDS)
    except urllib.error.HTTPError as error:
        raise InputError(
            f"{url}: HTTP {error.code} {error.reason}; the pinned file is not there (check "
            "$HARNESS_DATA_MIRROR), or pass your own copy with the analysis's data flag"
        ) from None
    except (urllib.error.URLError, OSError) as error:
        raise InputError(
            f"{url}: could not connect ({getattr(error, 'reason', None) or error}); offline? run "
            f"`{DOWNLOAD_COMMAND}` where the network is reachable, or pass your own copy with the "
            "analysis's data flag"
        ) from None
    digest, size = hashlib.sha256(), 0
    announced = response.headers.get("Content-Length")
    with response, destination.open("wb") as out:
        while size <= expected_size:
            try:
                chunk = response.read(CHUNK)
            except (http.client.HTTPException, OSError):  # reset or timed out mid-file: cut short
                announced = announced or str(expected_size)
                break
            if not chunk:
                break
            out.write(chunk)  # a full disk here is the caller's one line (`writing`), not a cut-short download
            digest.update(chunk)
            size += len(chunk)
            bar.update(len(chunk))
    return Received(size, digest.hexdigest(), int(announced) if announced and announced.isdigit() else None)


def remove_empty_folders(folder: Path) -> None:
    """``folder`` and the folders below it that hold nothing (what a failed first download leaves)."""
    if not folder.is_dir():
        return
    for path, _, _ in sorted(os.walk(folder), key=lambda entry: len(entry[0]), reverse=True):
        try:
            os.rmdir(path)
        except OSError:  # not empty: it keeps verified files
            pass
