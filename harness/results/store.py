"""The results store: every analysis result filed under a key of everything that made it.

A stored result records its identity: the analysis and its version, the identities of the
checkpoints it measured (fine-tune cache key or weights hash), its inputs (source name,
data files with content hashes, sample sizes, seeds) and the settings it used. The key is
a hash of that identity, so a result from an older analysis version, other data or other
settings is never reused, and a result that does not depend on the task (the pre-trained
model on the treebank) is found again by every task and seed that needs it.

Every file is written atomically (temporary file in the same folder, fsync, rename), so a
crash leaves either the old file or the new one, never half of one; a file that cannot be
read back as JSON is treated as missing and recomputed. A result is checked against the
shape its analysis declared (`harness.results.shapes`) before it is written, and written
sealed (`write_sealed`: with the SHA-256 of its content), so that a result edited afterwards is
one line naming the file (`read_sealed`), never a number shown that the harness did not compute.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.results.shapes import check
from tasks.errors import InputError
from tasks.files import atomic_write_bytes, remove_orphans

log = logging.getLogger(__name__)

# JSON at the harness's boundaries, left Any inside: each is an object whose keys its own writer
# names (a source, an analysis's or a run's settings, a kind of checkpoint, a file before it is
# typed), so no one TypedDict says them; the alias says where each comes from.
JsonValue = Any  # any JSON value (an object, a list, a string, a number), as read or about to be written
JsonObject = dict[str, Any]  # a JSON object as read from a file or about to be written, its keys its writer's
SourceIdentity = dict[str, Any]  # each source's (or task data's) own inputs: task, split, spec, files and their hashes
SourceNotes = dict[str, Any]  # each source's own counts and remarks
Settings = dict[str, Any]  # settings as JSON (an analysis's, of the types each declares; a run's config)
CheckpointIdentity = dict[str, Any]  # what a checkpoint is, its keys by kind: weights' hashes, fine-tune key, step
SCHEMA = 2
HASH_CHUNK = 1 << 20


def ensure_writable(folder: Path, flag: str) -> None:
    """Check that ``folder`` can be made and written in (one-line error otherwise), making
    nothing: a check before the work (or a dry run) leaves no empty folder behind. A file is
    made and removed in ``folder``, or, where it does not exist yet, in its nearest existing
    parent, which the writes make it under."""
    existing = next(path for path in (folder.absolute(), *folder.absolute().parents) if path.exists())
    try:
        if not existing.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR))
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as error:
        raise InputError(
            f"{flag} {folder}: cannot write there ({error.strerror}); choose a folder you can write to"
        ) from None


def write_json(path: Path, data: JsonValue) -> Path:
    """Atomically write ``data`` as strict JSON (NaN is refused: store None instead)."""
    return atomic_write_bytes(path, json.dumps(data, indent=1, allow_nan=False).encode())


def read_json(path: Path, note_damage: bool = True) -> JsonValue | None:
    """The JSON content of ``path``, or None when it is missing or damaged (then a note that
    it will be recomputed is logged, unless the caller says otherwise)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        if note_damage:
            log.warning("ignoring damaged %s (%s); it will be recomputed", path, error)
        return None


SEAL = "sha256"  # the field of a sealed file that holds the SHA-256 of the rest of it
RECOMPUTE = "delete it and run the same command again: it alone is recomputed"


def write_sealed(path: Path, document: JsonObject) -> Path:
    """Atomically write the JSON object ``document`` with the SHA-256 of its content (`SEAL`), so
    that any later change to what it says is found when it is read (`read_sealed`)."""
    return write_json(path, {**document, SEAL: key_of(plain(document), 64)})


def read_sealed(path: Path, fix: str = RECOMPUTE) -> JsonObject | None:
    """The JSON object at ``path`` as `write_sealed` wrote it (its seal left out), or None when it is
    missing or damaged (a kill's torn file: recomputed); one line naming the file and ``fix`` when
    what it says is not what was written (a number edited by hand, a merge, a sync conflict:
    whitespace and key order aside). A file written before files were sealed is read as it is."""
    stored = read_json(path)
    if not isinstance(stored, dict):
        return None
    sealed = stored.pop(SEAL, None)
    if sealed is not None and sealed != key_of(stored, 64):
        raise InputError(
            f"{path}: not what the harness wrote (its content differs from the SHA-256 stored in it); {fix}"
        )
    return stored


def plain(value: JsonValue) -> JsonValue:
    """``value`` as it reads back from JSON: dicts, lists, strings, numbers (paths become strings)."""
    return json.loads(json.dumps(value, default=str))


def key_of(payload: JsonValue, length: int = 16) -> str:
    """A stable hash of a JSON-serialisable payload (dict keys sorted)."""
    canonical = json.dumps(payload, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:length]


class FileHashes:
    """SHA-256 of input files, computed once per file per run (keyed by path, size and mtime)."""

    def __init__(self) -> None:
        self._known: dict[tuple[str, int, int], str] = {}

    def __call__(self, path: Path) -> str:
        path = Path(path)
        stat = path.stat()
        marker = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
        if marker not in self._known:
            digest = hashlib.sha256()
            with path.open("rb") as handle:
                while chunk := handle.read(HASH_CHUNK):
                    digest.update(chunk)
            self._known[marker] = digest.hexdigest()
        return self._known[marker]

    def describe(self, path: Path) -> dict[str, str]:
        """``{"file": name, "sha256": hash}`` for a file, or the sorted hashes of a folder's files."""
        path = Path(path)
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.is_file())
            return {"folder": path.name, "sha256": key_of([[str(p.relative_to(path)), self(p)] for p in files], 64)}
        return {"file": path.name, "sha256": self(path)}


@dataclass(frozen=True)
class ResultIdentity:
    """Everything a stored result depends on; its `key` names the file it is stored in.

    ``checkpoints``: the identities of the measured checkpoints, in order (one for a
    per-checkpoint result, several for a joint one); ``inputs``: the source's identity;
    ``settings``: the analysis settings that change the result.
    """

    analysis: str
    version: int
    # JSON of the checkpoints', the source's and the analysis's own keys (`CheckpointIdentity`,
    # `SourceIdentity`, `Settings`), read-only here
    checkpoints: tuple[Mapping[str, Any], ...]
    inputs: Mapping[str, Any]  # as ``checkpoints``
    settings: Mapping[str, Any]  # as ``checkpoints``

    def as_dict(self) -> JsonObject:
        """The identity as plain JSON values (paths as strings, tuples as lists), as stored."""
        return plain(
            {
                "analysis": self.analysis,
                "version": self.version,
                "checkpoints": list(self.checkpoints),
                "inputs": self.inputs,
                "settings": self.settings,
            }
        )

    @property
    def key(self) -> str:
        """16 hex digits of the hash of `as_dict`: the stored file's name."""
        return key_of(self.as_dict())


class ResultStore:
    """Results on disk: ``<root>/<analysis>/<key>.json`` holding ``{"identity", "result"}``."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.tidied: set[Path] = set()  # the folders rid of a killed writer's temporary files

    def path(self, identity: ResultIdentity) -> Path:
        """Where the result of ``identity`` is stored (whether or not it exists)."""
        return self.root / identity.analysis / f"{identity.key}.json"

    def load(self, identity: ResultIdentity) -> JsonObject | None:
        """The stored result of ``identity``, or None (never stored, or damaged); one line naming the
        file when it was edited after it was written (`read_sealed`)."""
        stored = read_sealed(self.path(identity))
        if not isinstance(stored, dict) or stored.get("identity") != identity.as_dict():
            return None
        return stored["result"]

    def save(self, identity: ResultIdentity, result: Mapping[str, object]) -> Path:
        """Store ``result`` under ``identity`` atomically (strict JSON: no NaN); returns the file written.
        A result whose keys differ from the shape its analysis declared is refused, naming the key
        (`harness.results.shapes.ShapeError`), and nothing is written."""
        check(identity.analysis, result)
        folder = self.path(identity).parent
        if folder not in self.tidied:
            remove_orphans(folder)
            self.tidied.add(folder)
        return write_sealed(self.path(identity), {"schema": SCHEMA, "identity": identity.as_dict(), "result": result})
