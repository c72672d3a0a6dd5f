"""Figures and tables drawn from a stored summary only (``harness figures`` and the end of
``harness run``): each analysis draws its own entry; nothing is recomputed.

Drawing is the slowest part of a rerun that finds everything stored (tens of figures at
200 dpi), so ``figures/.drawn.json`` records the hash of the summary they were drawn from
and of the code that drew them (`harness.figures` and every analysis module: a new figure
style redraws); `redraw` skips the work while that hash and every file are still there
(``harness figures`` always draws), and which analysis drew each file (the report groups them so).
"""

from __future__ import annotations

import hashlib
import inspect
import sys
from pathlib import Path
from typing import Any

import harness.figures
from harness.analyses import ANALYSES
from harness.figures import pdf_sibling
from harness.store import key_of, read_json, write_json
from tasks.files import atomic_write_text

DRAWN = ".drawn.json"


def drawing_code_hash() -> str:
    """SHA-256 of the source files that draw: `harness.figures` and each analysis's module."""
    modules = {harness.figures, *(sys.modules[analysis.__module__] for analysis in ANALYSES.values())}
    digest = hashlib.sha256()
    for path in sorted(inspect.getfile(module) for module in modules):
        digest.update(Path(path).read_bytes())
    return digest.hexdigest()


def redraw(summary: dict[str, Any], out_dir: Path, force: bool = False) -> list[Path]:
    """Every figure and table of every analysis entry in ``summary`` whose version is the current one."""
    fingerprint = key_of({"summary": summary, "drawn_by": drawing_code_hash()}, 64)
    drawn = read_json(out_dir / DRAWN, note_damage=False)
    if not force and isinstance(drawn, dict) and drawn.get("summary") == fingerprint:
        files = [out_dir / name for name in drawn.get("files", [])]
        if all(path.is_file() for path in files):
            return files
    by_analysis: dict[str, list[Path]] = {}
    for name, entry in summary["analyses"].items():
        analysis = ANALYSES.get(name)
        if analysis is not None and entry.get("version") == analysis.version:
            figures = analysis.draw(entry, summary["run"], out_dir)
            tables = [atomic_write_text(out_dir / f"{stem}.md", text)
                      for stem, text in analysis.tables(entry, summary["run"]).items()]
            pdfs = [pdf_sibling(path) for path in figures if pdf_sibling(path).is_file()]
            by_analysis[name] = figures + pdfs + tables
    written = [path for paths in by_analysis.values() for path in paths]
    write_json(out_dir / DRAWN, {"summary": fingerprint, "files": relative(written, out_dir),
                                 "analyses": {name: relative(paths, out_dir) for name, paths in by_analysis.items()}})
    return written


def relative(paths: list[Path], folder: Path) -> list[str]:
    return [str(path.relative_to(folder)) for path in paths]


def drawn_files(out_dir: Path) -> dict[str, list[Path]]:
    """``{analysis: its figure and table files}`` as `redraw` last recorded them in ``out_dir``
    (for the report); an empty dict when they were drawn before it recorded which drew what."""
    drawn = read_json(out_dir / DRAWN, note_damage=False)
    analyses = drawn.get("analyses", {}) if isinstance(drawn, dict) else {}
    return {name: [out_dir / file for file in files] for name, files in analyses.items()}
