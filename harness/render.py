"""Figures and tables drawn from a stored summary only (``harness figures`` and the end of
``harness run``): each analysis draws its own entry; nothing is recomputed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.analyses import ANALYSES


def redraw(summary: dict[str, Any], out_dir: Path) -> list[Path]:
    """Every figure of every analysis entry in ``summary`` whose version is the current one."""
    written: list[Path] = []
    for name, entry in summary["analyses"].items():
        analysis = ANALYSES.get(name)
        if analysis is not None and entry.get("version") == analysis.version:
            written.extend(analysis.draw(entry, summary["run"], out_dir))
    return written
