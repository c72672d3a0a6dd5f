"""A default ``harness run`` on every encoder architecture (tiny random checkpoints, tokenizers
built offline): every default analysis runs (the ablation and the transplant too), nothing is skipped, the figures
pass their layout checks and they and the tables name the model's own special tokens, and
``harness report`` shows the run."""

from __future__ import annotations

import json
import logging

import pytest

from harness.cli import main
from harness.present.frames import load_runs
from harness.run.plan import select_analyses
from tests.fixtures import PNG_ONLY, tiny_run_arguments

pytestmark = pytest.mark.slow  # a whole tiny run per architecture


def test_a_default_run_analyses_and_draws_every_architecture(architecture_dir, tiny_data, tmp_path, capsys, caplog):
    with caplog.at_level(logging.WARNING, logger="harness.views.saving"):  # the figures' layout checks
        argv = tiny_run_arguments(architecture_dir, tiny_data, tmp_path, "--ablation", "on", "--transplant", "on")
        assert main([*argv, *PNG_ONLY]) == 0
    assert [record.getMessage() for record in caplog.records if record.name == "harness.views.saving"] == []
    out = capsys.readouterr().out
    assert not [line for line in out.splitlines() if line.startswith("skipped ")]
    (summary_path,) = (tmp_path / "out").glob("*/summary.json")
    summary = json.loads(summary_path.read_text())
    everything = select_analyses(None, lambda analysis: True)  # every switch on
    assert set(summary["analyses"]) == {analysis.name for analysis in everything}
    assert summary["run"]["skipped"] == {}
    figures = summary_path.parent / "figures"
    assert len(list(figures.glob("*.png"))) > 10
    cls, sep = summary["run"]["special_tokens"]["[CLS]"], summary["run"]["special_tokens"]["[SEP]"]
    shown = {token: token if token.startswith("[") else f"`{token}`" for token in (cls, sep)}  # <s> as code
    sinks = (figures / "sinks_by_layer.md").read_text()
    assert f"| {shown[cls]} |" in sinks and f"| {shown[sep]} |" in sinks
    tables = "".join(path.read_text() for path in figures.glob("*.md"))
    assert cls == "[CLS]" or ("[CLS]" not in tables and "[SEP]" not in tables)
    page = tmp_path / "report" / "index.html"
    assert main(["report", "--output-dir", str(tmp_path / "out"), "--out", str(page)]) == 0
    assert f"{summary['run']['num_layers']} x {summary['run']['num_heads']}" in page.read_text()
    exported = load_runs(tmp_path / "out")  # `harness export`'s table: every analysis's per-layer arrays
    assert {"transplant", "cka", "cka_text"} <= set(exported.analysis)
    assert "alone.delta" in set(exported[exported.analysis == "transplant"].metric)
