"""A study on Ray: a real local Ray instance running two (task, seed) runs at once, logging
to a real ``mlflow server`` process over HTTP (the store a cluster shares)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest
import requests
from mlflow.tracking import MlflowClient

from harness.run.tracking import EXPERIMENT, HARNESS_RUNS
from tests.fixtures import MLFLOW_SERVER_ENVIRONMENT, PNG_ONLY, store_uri
from tests.integration.test_study_processes import study_argv
from tests.integration.warm_harness import REPOSITORY

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def mlflow_server(tmp_path):
    """``mlflow server`` on a free port, its store and artifacts under tmp_path; its URL."""
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mlflow",
            "server",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--backend-store-uri",
            store_uri(tmp_path / "server"),  # a copy of the session's empty store
            "--artifacts-destination",
            str(tmp_path / "artifacts"),
            "--workers",
            "1",
        ],
        env={**os.environ, **MLFLOW_SERVER_ENVIRONMENT},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if requests.get(f"{url}/health", timeout=2).ok:
                break
        except requests.ConnectionError:
            time.sleep(1)
    else:
        server.kill()
        pytest.fail("mlflow server did not start in 120 s")
    yield url
    server.terminate()
    server.wait(timeout=30)


def test_a_study_on_ray_logs_every_run_to_the_tracking_server(mlflow_server, tiny_model_dir, tiny_data, tmp_path):
    argv = study_argv(tiny_model_dir, tiny_data, tmp_path, "rte,mrpc", *PNG_ONLY)
    argv = [*argv[: argv.index("--seeds") + 1], "1", *argv[argv.index("--seeds") + 2 :]]
    argv[argv.index("--tracking-uri") + 1] = mlflow_server
    environment = {**os.environ, "PYTHONPATH": str(REPOSITORY), "RAY_AUTH_MODE": "disabled"}
    done = subprocess.run(
        [sys.executable, "-m", "harness", *argv, "--engine", "ray", "--workers", "2"],
        cwd=REPOSITORY,
        env=environment,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    client = MlflowClient(tracking_uri=mlflow_server)
    experiment = client.get_experiment_by_name(EXPERIMENT)
    runs = client.search_runs([experiment.experiment_id], HARNESS_RUNS)
    (parent,) = [run for run in runs if run.data.tags.get("harness.kind") == "study"]
    children = [run for run in runs if run is not parent]
    assert parent.info.status == "FINISHED" and "rte/dev_accuracy_finetuned" in parent.data.metrics
    assert sorted(run.data.tags["task"] for run in children) == ["mrpc", "rte"]
    assert all(
        run.info.status == "FINISHED" and run.data.tags["mlflow.parentRunId"] == parent.info.run_id for run in children
    )
    assert {a.path for a in client.list_artifacts(parent.info.run_id)} >= {"study.json", "figures"}
    assert len(list((tmp_path / "out").glob("*-seed42-*/summary.json"))) == 2
