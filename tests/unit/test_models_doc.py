"""docs/models.md lists every encoder family the tests build and every analysis a default run makes."""

from __future__ import annotations

from pathlib import Path

from harness.run.plan import select_analyses
from tests.unit.model.architectures import ARCHITECTURES

DOC = Path(__file__).resolve().parents[2] / "docs" / "models.md"


def table_rows(text: str, header_start: str) -> list[list[str]]:
    """The cells of the Markdown table whose header row begins with ``header_start`` (header first)."""
    lines = text.splitlines()
    start = next(index for index, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        if not line.startswith("|---"):
            rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def test_the_support_table_has_every_family_and_every_default_analysis():
    header, *rows = table_rows(DOC.read_text(), "| model_type | capture |")
    analyses = [f"`{analysis.name}`" for analysis in select_analyses(None, ablation=True)]
    assert header == ["model_type", "capture", "gate", "uniform", *analyses, "report"]
    assert sorted(row[0] for row in rows) == sorted(f"`{name}`" for name in ARCHITECTURES)
    assert all(cell == "✓" for row in rows for cell in row[1:])


def test_the_forward_table_has_every_family():
    _, *rows = table_rows(DOC.read_text(), "| model_type | family")
    assert sorted(row[0] for row in rows) == sorted(f"`{name}`" for name in ARCHITECTURES)
