"""A run's ``summary.json`` and where a study's results live, read back as the harness wrote them."""

from __future__ import annotations

from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

from harness.results.store import read_json
from tasks.errors import InputError

SUMMARY = "summary.json"
STUDIES = "studies"  # <output_dir>/studies/<name>/study.json


def stored_summary(path: Path) -> dict[str, Any] | None:
    """The summary.json at ``path`` if it is whole: a ``run`` description and analysis entries
    that each have a version and a result; None when missing, truncated or damaged (the
    caller says what happens next: a run rewrites it, ``figures`` asks for that run)."""
    summary = read_json(path, note_damage=False)
    if not (isinstance(summary, dict) and isinstance(summary.get("run"), dict)
            and isinstance(summary.get("analyses"), dict)):
        return None
    entries = summary["analyses"].values()
    return summary if all(isinstance(e, dict) and {"version", "result"} <= e.keys() for e in entries) else None


def whole_summary(run_dir: Path) -> dict[str, Any]:
    """The whole summary of the run in ``run_dir``, or one line saying how to get it."""
    path = run_dir / SUMMARY
    if not path.is_file():
        raise InputError(f"{path} not found: the folder holds no finished run; `harness run` writes it")
    summary = stored_summary(path)
    if summary is None:
        raise InputError(f"{path}: empty, truncated or incomplete; run `harness run` with the same flags to rewrite "
                         "it (stored results are reused, nothing is recomputed)")
    return summary


def flatten(prefix: str, value: Any) -> dict[str, str]:
    """Nested dataclasses/dicts as dotted names (MLflow params, the report's parameter lists)."""
    if is_dataclass(value):
        value = asdict(value)
    if isinstance(value, dict):
        flat: dict[str, str] = {}
        for key, inner in value.items():
            flat.update(flatten(f"{prefix}.{key}" if prefix else key, inner))
        return flat
    return {prefix: str(value)}
