"""``harness`` commands in real processes that start warm.

A fault or study test runs the harness in several processes, and each fresh interpreter spends
about 8 seconds importing torch, transformers and MLflow before its first line of work: most of
a tiny run. Here each command is a process of its own forked from a server that imported the
harness once (multiprocessing's fork server; the server ran no harness code, so every child
starts from the state a fresh ``python -m harness`` has after its imports, with the modules a run
imports on first use already imported). The child takes the test's working folder, environment
and output files, runs the harness's entry point, `main`, as ``python -m harness`` does (under
the fault injector's hook when asked), and exits through the interpreter's exit handlers; a
signal ends it as it ends any process, and its exit status is the one ``python -m harness``
would have. The README, engine and launcher tests run the real executables.
"""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from harness.cli import main
from harness.present.parallel import context, preload_also
from tasks.collector import collect_less_often
from tasks.tagging import TAGGER_PACKAGES
from tests.integration import fault_injector

REPOSITORY = Path(__file__).resolve().parents[2]
# The harness and the hooks, and what a run imports on its first use: MLflow's SQL store and the
# tagger's package (which each child would import again: 1.5 s of its start).
PRELOADED = ["tests.integration.fault_injector", "mlflow.store.tracking.sqlalchemy_store", *TAGGER_PACKAGES]


def preload() -> None:
    """Have the process's fork server import what a warm child needs, whoever starts it. It is the
    figure pools' server too (a process has one), and one started by a pool with the drawing layer
    alone leaves each child 20 s of imports; called before any test runs (tests/conftest.py)."""
    preload_also(PRELOADED)


class HarnessProcess:
    """``harness <argv>`` (under the fault injector's ``(phase, signal, call)``) started in a
    warm process; waited for as a `subprocess.Popen` is."""

    def __init__(self, argv: list[str], injector: tuple[str, str, int] | None = None) -> None:
        self.args = ["harness", *argv]
        self.returncode: int | None = None
        self.output = [temporary_file(f".{name}") for name in ("out", "err")]
        self.process = context().Process(
            target=run_command, args=(argv, injector, dict(os.environ), [str(path) for path in self.output])
        )
        self.process.start()

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        """Waits for the process to end; its standard output and error."""
        self.process.join(timeout)
        if self.process.exitcode is None:
            self.process.kill()
            self.process.join()
            raise subprocess.TimeoutExpired(self.args, timeout)
        self.returncode = self.process.exitcode  # -N when signal N ended it, as subprocess's
        stdout, stderr = (path.read_text() for path in self.output)
        for path in self.output:
            path.unlink()
        return stdout, stderr


def temporary_file(suffix: str) -> Path:
    descriptor, name = tempfile.mkstemp(prefix="harness-", suffix=suffix)
    os.close(descriptor)
    return Path(name)


def completed(
    argv: list[str], injector: tuple[str, str, int] | None = None, timeout: float = 900
) -> subprocess.CompletedProcess:
    """``harness <argv>`` run to its end in a warm process."""
    process = HarnessProcess(argv, injector)
    stdout, stderr = process.communicate(timeout)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def run_command(
    argv: list[str], injector: tuple[str, str, int] | None, environment: dict[str, str], output: list[str]
) -> None:
    """In the forked child: the test's folder, environment and output files, then the
    harness's entry point, and an exit as the interpreter's own (exit handlers, flushed files)."""
    os.chdir(REPOSITORY)
    os.environ.clear()
    os.environ.update(environment)
    for descriptor, path in zip((1, 2), output):
        os.dup2(os.open(path, os.O_WRONLY | os.O_TRUNC), descriptor)
    # A shell's command gets Ctrl-C as KeyboardInterrupt (the fork server ignores it for itself).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if injector is not None:
        fault_injector.hook(*injector)
    collect_less_often()  # as the `harness` executable collects (`harness.cli.command`)
    try:
        code = main(argv)
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    except BaseException:
        sys.excepthook(*sys.exc_info())
        code = 1
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
