"""A study's job on the real tools: the fine-tuning of a run that takes several processes
goes through its launcher (``accelerate launch --multi_gpu`` on GPUs; here, on CPUs, torch's
launcher with two processes) and ``harness finetune``, then the run analyses the checkpoint
those processes wrote, on one device."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import build_parser, configs_from
from harness.results.store import read_json
from harness.study.executors import Job, execute
from tests.fixtures import tiny_run_arguments

REPOSITORY = Path(__file__).resolve().parents[3]


@pytest.mark.slow  # two processes under accelerate, then a run
def test_a_job_of_two_processes_fine_tunes_under_accelerate_then_runs(tiny_model_dir, tiny_data, tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    argv = tiny_run_arguments(tiny_model_dir, tiny_data, tmp_path, "--analyses", "cosine")
    (config,) = configs_from(build_parser().parse_args(argv))
    execute(Job("rte seed 42", config, {"study": "test"}), REPOSITORY, processes=2)
    (final,) = (tmp_path / "cache").glob("*/final")
    assert json.loads((final / "result.json").read_text())["layout"] == {"world_size": 2, "per_device_batch": 4}
    (summary,) = (tmp_path / "out").glob("*/summary.json")
    assert read_json(summary)["run"]["finetune_key"] in final.parent.name
