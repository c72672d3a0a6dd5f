"""A run's ``summary.json`` and a study's ``study.json``, read back only as the harness wrote them.

Both are what figures, the report and the exports are drawn from, and both are plain files a
person can edit. So each is sealed when written: the results store beside them
(``<output_dir>/store/seals/``) keeps the SHA-256 of its content, of each analysis entry and
of its run description, and a reader checks the file against the seal before anything is
drawn from it. A file that differs is one line naming the folder, what differs and the
command that rebuilds it from the stored results.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any, TypedDict, TypeVar

from harness.config_files import RUN_SETTINGS
from harness.results.run_record import RunSummary, decoded_summary
from harness.results.store import JsonValue, key_of, plain, read_json, write_json
from harness.results.study_record import StudyRecord, decoded_study
from tasks.errors import InputError

SUMMARY = "summary.json"
STUDY = "study.json"
STUDIES = "studies"  # <output_dir>/studies/<name>/study.json
SEALS = "seals"  # <output_dir>/store/seals/{runs,studies}/<run or study key>.json
Document = TypeVar("Document", bound=Mapping[str, Any])  # a summary or a study, as read from its file
STUDY_FIX = "run the `harness study` command that made it again to rebuild it from the runs' stored results"


def run_fix(folder: Path) -> str:
    """The command that rebuilds the summary of the run in ``folder`` from the stored results beside
    it, wherever the folder was copied or moved: its settings (config.json, paths absolute) with
    the output folder the run folder is in, so the rebuild reads that store and writes that folder."""
    settings, output = shlex.quote(str(Path(folder) / RUN_SETTINGS)), shlex.quote(str(Path(folder).absolute().parent))
    return (
        f"run `harness run --config {settings} --output-dir {output}` to rebuild it from the stored results "
        "(nothing is recomputed)"
    )


def content_hash(document: JsonValue) -> str:
    """SHA-256 of ``document`` as canonical JSON (keys sorted): the same for every copy of the same content."""
    return key_of(document, 64)


class Seal(TypedDict):
    """What the store keeps of a summary or study (`seal_record`): the hash of the whole, and of each part by name."""

    sha256: str
    parts: dict[str, str]


def seal_record(document: Mapping[str, JsonValue]) -> Seal:
    """What the store keeps of a summary or study: the hash of the whole, and of each part (a run's
    description and each analysis entry; a study's sections), so a mismatch can say where it is."""
    parts = {f"analysis {name}": entry for name, entry in document.get("analyses", {}).items()}
    parts |= {f"section {name}": value for name, value in document.items() if name != "analyses"}
    return {"sha256": content_hash(document), "parts": {name: content_hash(value) for name, value in parts.items()}}


def seal_path(folder: Path, document: Mapping[str, JsonValue]) -> Path:
    """Where the seal of the run or study ``document`` in ``folder`` is kept: in the results store
    of its output folder, under its run or study key (a copy of the folder under another name is
    the same run; an edited key finds no seal)."""
    folder = Path(folder).resolve()
    if folder.parent.name == STUDIES:
        return folder.parent.parent / "store" / SEALS / STUDIES / f"{document.get('key')}.json"
    return folder.parent / "store" / SEALS / "runs" / f"{document.get('run', {}).get('key')}.json"


def seal(folder: Path, document: Mapping[str, JsonValue]) -> Path:
    """Record in the store what ``document`` (the summary or study just written in ``folder``) holds,
    as it reads back from its file (integer keys become text there, so the seal is of that); an
    unchanged seal is not written again."""
    path, record = seal_path(folder, document), seal_record(plain(document))
    return path if read_json(path, note_damage=False) == record else write_json(path, record)


def seal_problem(folder: Path, document: Mapping[str, JsonValue]) -> str | None:
    """What differs between ``document`` and its seal in the store, or None when it is what was written."""
    path = seal_path(folder, document)
    sealed = read_json(path, note_damage=False)
    if not isinstance(sealed, dict) or not isinstance(sealed.get("parts"), dict):
        return (
            f"the results store holds no seal of it ({path}: written by an earlier harness, or "
            "the store was moved or removed)"
        )
    record = seal_record(document)
    if record["sha256"] == sealed.get("sha256"):
        return None
    differing = sorted(
        name
        for name in record["parts"].keys() | sealed["parts"].keys()
        if record["parts"].get(name) != sealed["parts"].get(name)
    )
    return f"it differs from what the harness wrote ({', '.join(differing) or 'its layout'})"


def checked(path: Path, document: Document, fix: str) -> Document:
    """``document`` read from ``path`` if its seal confirms it, else one line naming the file and ``fix``."""
    problem = seal_problem(path.parent, document)
    if problem is not None:
        raise InputError(f"{path}: {problem}; {fix}")
    return document


def whole_file(path: Path) -> RunSummary | None:
    """The summary.json at ``path`` if it is whole: a ``run`` description and analysis entries
    that each have a version and a result; None when missing, truncated or damaged."""
    summary = read_json(path, note_damage=False)
    if not (
        isinstance(summary, dict) and isinstance(summary.get("run"), dict) and isinstance(summary.get("analyses"), dict)
    ):
        return None
    entries = summary["analyses"].values()
    whole = all(isinstance(e, dict) and {"version", "result"} <= e.keys() for e in entries)
    return decoded_summary(summary) if whole else None


def stored_summary(path: Path) -> RunSummary | None:
    """The summary.json at ``path`` if it is whole and its seal confirms it; None otherwise (a run
    rewrites it from the stored results, a study runs that (task, seed) again)."""
    summary = whole_file(path)
    return summary if summary is not None and seal_problem(path.parent, summary) is None else None


def checked_summary(path: Path) -> RunSummary | None:
    """The whole summary.json at ``path``, None when there is none (a run that did not finish: the
    file is written whole or not at all); one line when it is there but not whole (cut short, emptied)
    or differs from its seal (edited): such a summary is never shown, nor passed over in silence."""
    if not path.is_file():
        return None
    summary = whole_file(path)
    if summary is None:
        raise InputError(f"{path}: empty, truncated or incomplete; {run_fix(path.parent)}")
    return checked(path, summary, run_fix(path.parent))


def whole_summary(run_dir: Path) -> RunSummary:
    """The whole, sealed summary of the run in ``run_dir``, or one line saying how to get it."""
    path = run_dir / SUMMARY
    if not path.is_file():
        raise InputError(f"{path} not found: the folder holds no finished run; `harness run` writes it")
    return checked_summary(path)  # type: ignore[return-value]  # a file is there: whole, or one line


def checked_study(folder: Path) -> StudyRecord:
    """The study.json in ``folder`` if it is whole and its seal confirms it, else one line naming it and the fix."""
    path = folder / STUDY
    study = read_json(path, note_damage=False)
    if not isinstance(study, dict) or not isinstance(study.get("tasks"), dict):
        raise InputError(f"{path}: damaged; {STUDY_FIX}")
    return decoded_study(checked(path, study, STUDY_FIX))


def flatten(prefix: str, value: object) -> dict[str, str]:
    """Nested dataclasses/dicts as dotted names (MLflow params, the report's parameter lists)."""
    if is_dataclass(value) and not isinstance(value, type):
        value = asdict(value)
    if isinstance(value, dict):
        flat: dict[str, str] = {}
        for key, inner in value.items():
            flat.update(flatten(f"{prefix}.{key}" if prefix else key, inner))
        return flat
    return {prefix: str(value)}
