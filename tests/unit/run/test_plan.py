"""Planning a run: a data flag that no analysis of the run reads is said, not passed over."""

from __future__ import annotations

import logging
from dataclasses import fields
from functools import partial

from harness.analyses import ANALYSES
from harness.cli import build_parser, configs_from
from harness.config import ANALYSIS_SETTINGS, MEASURED_ALONG, SHARED_SETTINGS, AnalysisConfig
from harness.run.plan import along_analyses, plan_run, select_analyses, switch_on
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


def test_each_switch_is_its_analysis_own_setting_and_the_plan_asks_each_analysis_whether_it_is_on(
    tiny_model_dir, tiny_data, tmp_path
):
    """--ablation and --transplant are declared with their analyses (`Analysis.switch` names each), not
    shared; the plan adds an analysis whose switch is on, and leaves it out where it is off, or auto on
    the CPU."""
    switches = {analysis.switch: analysis for analysis in ANALYSES.values() if analysis.switch}
    own = {item.name for part in ANALYSIS_SETTINGS.values() for item in fields(part)}
    assert len(switches) == 2 and set(switches) <= own - {item.name for item in SHARED_SETTINGS}
    argv = tiny_run_arguments(tiny_model_dir, tiny_data, tmp_path, "--analyses", "cosine", "--device", "cpu")
    for switch, analysis in switches.items():
        for choice, added in (("on", True), ("off", False), ("auto", False)):
            config = configs_from(build_parser().parse_args([*argv, f"--{switch}", choice]))[0]
            chosen = [chosen.name for chosen in select_analyses(config.analysis.analyses, partial(switch_on, config))]
            assert chosen == ["evaluation", "cosine", *([analysis.name] if added else [])], (switch, choice)
