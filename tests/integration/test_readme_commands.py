"""Every command block of the README, run as written from the repository root.

The "Using it" block runs line by line through the environment's own executables
(``.venv/bin/...``, as the README names them), each `harness` command with tiny sizes and
its outputs in a temporary folder appended, the `mlflow ui` command as a real server that
must answer. The online line (bert-base-uncased from the hub) runs only where the hub
cannot be reached, and must then fail at once with its one-line error. The Python block runs
on real maps; the benchmark and multi-GPU blocks name scripts and executables that exist
and answer ``--help`` (they take minutes, or GPUs). The two set-up commands are CI itself
(`tests/unit/test_readme.py`).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from harness.cli import build_parser, configs_from
from tasks.hub_reach import hub_unreachable
from tests.fixtures import MLFLOW_SERVER_ENVIRONMENT, output_arguments

ROOT = Path(__file__).resolve().parents[2]
SHARED_GLUE = ROOT.parent / "shared" / "data" / "glue"
TINY = [
    "--max-train-examples",
    "32",
    "--epochs",
    "1",
    "--max-eval-examples",
    "8",
    "--max-dev-examples",
    "16",
    "--max-corpus-items",
    "12",
    "--probe-train-sentences",
    "24",
    "--quick",
    "--ablation-examples",
    "2",  # the fewest the flag takes (one per cross-fitting half): every family still runs, at half the passes
    "--max-length",
    "64",
]
SERVER_SECONDS = 120

pytestmark = pytest.mark.slow


def blocks(language: str) -> list[str]:
    """The README's fenced blocks of ``language``, in order."""
    return re.findall(rf"```{language}\n(.*?)```", (ROOT / "README.md").read_text(), re.S)


def commands(block: str) -> list[list[str]]:
    """A block's commands as argument lists, comments dropped."""
    return [shlex.split(line, comments=True) for line in block.splitlines() if shlex.split(line, comments=True)]


def using_it_block() -> str:
    return next(block for block in blocks("bash") if "harness figures" in block)


def using_it() -> list[list[str]]:
    return commands(using_it_block())


def environment_executable(name: str) -> Path:
    """What ``.venv/bin/<name>`` means for this test: the executables beside this interpreter
    (CI runs the tests with .venv/bin/python, so they are the README's own)."""
    return Path(sys.executable).parent / name


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> dict[str, object]:
    root = tmp_path_factory.mktemp("readme")
    env = {**os.environ, "GLUE_DIR": str(SHARED_GLUE)}
    return {
        "root": root,
        "env": env,
        "outputs": output_arguments(root),
    }


def run_harness(argv: list[str], workspace: dict[str, object], timeout: int = 900) -> subprocess.CompletedProcess:
    """``argv`` at tiny sizes into the workspace; the figures are drawn once, the cosine's as PNGs,
    by the block's `harness figures` line (the lines before it leave them to it: --no-figures; the
    pipeline's tests draw every figure). The
    first run of RTE computes every default analysis; the other runs and the study, whose lines
    are checked for running, compare the checkpoints by the cosine alone (the first run's is
    reused by the study: the analyses asked for are not part of a run's key)."""
    executable = environment_executable("harness")
    assert argv[0] == ".venv/bin/harness" and executable.is_file()
    later = ["--no-figures"] if argv[1] != "figures" else ["--vector-formats", "none", "--analyses", "cosine"]
    if argv[1] == "study" or "sst2" in argv:
        later += ["--analyses", "cosine"]
    return subprocess.run(
        [str(executable), *argv[1:], *TINY, *later, *workspace["outputs"]],
        cwd=ROOT,
        env=workspace["env"],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_the_using_it_block_exports_the_data_and_names_the_environments_executables():
    lines = using_it()
    assert lines[0] == ["export", "GLUE_DIR=../shared/data/glue"]
    assert all(line[0].startswith(".venv/bin/") for line in lines[1:])
    assert (ROOT / lines[0][1].split("=", 1)[1]).resolve() == SHARED_GLUE.resolve()


def test_every_harness_command_of_the_using_it_block_runs(workspace):
    """Offline lines in order (the run before the ablation and the figures that read its checkpoint)."""
    offline = [line for line in using_it()[1:] if line[0] == ".venv/bin/harness" and "minilm" in line]
    assert [line[1] for line in offline] == ["run", "run", "ablate", "figures", "study"]
    for line in offline:
        done = run_harness(line, workspace)
        assert done.returncode == 0, f"{shlex.join(line)}:\n{done.stderr[-3000:]}"
    (summary,) = (workspace["root"] / "out").glob("rte-minilm-seed42-*/summary.json")
    assert {"cosine", "patterns", "evaluation"} <= set(json.loads(summary.read_text())["analyses"])
    assert list((summary.parent / "figures").glob("*.png"))
    (study,) = (workspace["root"] / "out" / "studies").glob("*/study.json")
    assert list(json.loads(study.read_text())["tasks"]) == ["rte", "mrpc"]


def test_the_online_line_fails_at_once_with_one_line_when_the_hub_is_unreachable(workspace):
    (online,) = [line for line in using_it() if line[0] == ".venv/bin/harness" and "--model" not in line]
    if hub_unreachable() is None:
        pytest.skip("the hub is reachable here: the online line would download bert-base-uncased")
    done = run_harness(online, workspace, timeout=120)
    assert done.returncode == 2
    (error,) = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert "the hub is unreachable" in error and "--model minilm" in error


def test_the_mlflow_ui_line_serves_the_harness_experiment(workspace):
    """The UI of the README's line, on the store the harness lines wrote (the test's own), with
    the tests' server settings (`MLFLOW_SERVER_ENVIRONMENT`: one worker, no job runner)."""
    (line,) = [line for line in using_it() if line[0] == ".venv/bin/mlflow"]
    assert line[1:] == ["ui", "--backend-store-uri", "sqlite:///mlruns/mlflow.db"]
    store = workspace["outputs"][workspace["outputs"].index("--tracking-uri") + 1]
    port = free_port()
    server = subprocess.Popen(
        [str(environment_executable("mlflow")), "ui", "--backend-store-uri", store, "--port", str(port)],
        cwd=ROOT,
        env={**os.environ, **MLFLOW_SERVER_ENVIRONMENT},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        query = f"http://127.0.0.1:{port}/api/2.0/mlflow/experiments/get-by-name?experiment_name=attention-shift"
        deadline = time.monotonic() + SERVER_SECONDS
        while True:
            try:
                with urllib.request.urlopen(query, timeout=5) as answer:
                    experiment = json.load(answer)["experiment"]
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, "mlflow ui did not answer"
                time.sleep(1)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as page:
            assert page.status == 200
    finally:
        server.terminate()
        server.wait(timeout=30)
    tags = {tag["key"]: tag["value"] for tag in experiment.get("tags", [])}
    assert tags.get("mlflow.experimentKind") == "custom_model_development"


def test_the_python_block_classifies_real_maps():
    (block,) = [block for block in blocks("python") if "load_classifier" in block]  # the classifier's example
    rng = np.random.default_rng(0)
    maps = [rng.dirichlet(np.ones(n), size=n) for n in (5, 40)]
    scope = {"maps": maps, "second_segments": [-1, 20]}
    exec(compile(block, "README.md python block", "exec"), scope)
    assert scope["clf"].predict(maps, [-1, 20]) and len(scope["clf"].predict_proba(maps, [-1, 20])) == 2


# Each module run as `python -m MODULE --help` runs it, one after the other in one process (the
# imports they share are paid once); prints each module's exit status.
HELP_OF_EACH = """
import runpy, sys
for module in sys.argv[1:]:
    sys.argv = [module, "--help"]
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        status = 0
    except SystemExit as stopped:
        status = stopped.code or 0
    print(f"{module} {status}", file=sys.stderr)
"""


def test_the_benchmark_and_multi_gpu_blocks_name_what_exists():
    benchmarks = []
    for block in blocks("bash"):
        for line in commands(block):
            words = [word for word in line if "=" not in word or word.startswith("-")]
            if words[0] == ".venv/bin/python" and words[1] == "-m" and words[2].startswith("benchmarks."):
                benchmarks.append(words[2])
            elif words[0] == ".venv/bin/harness" and block != using_it_block():  # e.g. the engine lines: valid
                assert configs_from(build_parser().parse_args(words[1:])), shlex.join(line)
            elif words[0] == ".venv/bin/torchrun":
                module = words.index("-m") + 1
                assert environment_executable("torchrun").is_file() and words[module : module + 2] == [
                    "harness",
                    "finetune",
                ]
    assert len(benchmarks) >= 7
    done = subprocess.run(
        [sys.executable, "-c", HELP_OF_EACH, *benchmarks], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    statuses = dict(line.split() for line in done.stderr.splitlines() if line.startswith("benchmarks."))
    assert done.returncode == 0 and statuses == dict.fromkeys(benchmarks, "0"), done.stderr[-2000:]
