"""Planning a run: a data flag that no analysis of the run reads is said, not passed over."""

from __future__ import annotations

import logging
from dataclasses import fields

from harness.analyses import ANALYSES
from harness.cli import build_parser, configs_from
from harness.config import MEASURED_ALONG, AnalysisConfig
from harness.run.plan import along_analyses, plan_run
from tests.fixtures import tiny_run_arguments


def planned(argv: list[str]):
    return plan_run(configs_from(build_parser().parse_args(argv))[0])


def test_a_data_flag_no_analysis_reads_is_one_warning_naming_the_analyses_that_would(
    tiny_model_dir, tiny_data, tmp_path, caplog
):
    corpus = tiny_data / "tiny-corpus.txt"
    argv = tiny_run_arguments(tiny_model_dir, tiny_data, tmp_path, "--analyses", "surface")
    with caplog.at_level(logging.WARNING, logger="harness.run.plan"):
        planned(argv)  # surface reads the task's dev sample; the tiny run's flags name all three kinds of data
    said = [record.getMessage() for record in caplog.records if record.name == "harness.run.plan"]
    assert [line.split(":")[0] for line in said] == [
        f"--corpus {corpus}",
        f"--syntax-data {tiny_data / 'tiny-dev.conllu'}",
        f"--coref-data {tiny_data / 'coref'}",
    ]
    assert said[0].startswith(f"--corpus {corpus}: no analysis of this run reads it (clustering, surface_text, ")
    assert said[0].endswith("gradients do); it goes into the run's key but into no result")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="harness.run.plan"):
        planned([*argv, "--analyses", "surface_text", "syntax", "coreference"])
    assert [record for record in caplog.records if record.name == "harness.run.plan"] == []


def test_the_steps_a_trajectory_keeps_are_measured_by_the_analyses_whose_views_say_so():
    """--trajectory-analyses' default comes from the views (``along_by_default``), in their order, as
    the flag's help says: the analyses the plan measures each kept step with, after the dev evaluation."""
    assert MEASURED_ALONG == ["cosine", "patterns", "examples"]
    (said,) = [item.metadata["help"] for item in fields(AnalysisConfig) if item.name == "trajectory_analyses"]
    assert "(default: cosine patterns examples: one pass over the dev sample" in said
    along = along_analyses(None, list(ANALYSES.values()))
    assert [analysis.name for analysis in along] == ["evaluation", *MEASURED_ALONG]
