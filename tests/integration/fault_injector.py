"""Run ``harness`` and send it a real signal at a chosen moment of a chosen phase.

``python -m tests.integration.fault_injector PHASE SIGNAL CALL -- <harness arguments>``
wraps one function of the phase so that on its CALL-th call the process signals itself
(`os.kill`: the kernel delivers SIGKILL, SIGTERM or SIGINT exactly as from outside), then
runs the harness's own entry point. Choosing the moment by a call count, not a timer, makes
every case land in its phase on any machine, however fast.
"""

from __future__ import annotations

import functools
import os
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import transformers
from mlflow.tracking import MlflowClient

import harness.results.store
import harness.run.engine
import harness.study.executors
import harness.views.saving
from harness.cli import main
from tasks.files import atomic_path

SIGNAL = signal.SIGTERM  # the signal of the hooked call (`hook` sets it)


def torn_write(path: Path, data: bytes) -> Path:
    """Half of ``data`` written through the harness's atomic writer, then the signal: what a
    kill in the middle of writing a result leaves on disk."""
    with atomic_path(path) as temporary:
        temporary.write_bytes(data[: len(data) // 2])
        os.kill(os.getpid(), SIGNAL)
    return path


@contextmanager
def killed_before_rename(path: Path) -> Iterator[Path]:
    """The harness's atomic writer, signalled once the file is written and before it is renamed
    into place: what a kill in the middle of saving a figure leaves (its temporary file)."""
    with atomic_path(path) as temporary:
        yield temporary
        os.kill(os.getpid(), SIGNAL)


# phase -> (owner, attribute) of the function whose CALL-th call is interrupted
HOOKS: dict[str, tuple[Any, str]] = {
    "training": (transformers.Trainer, "training_step"),
    "checkpoint": (transformers.Trainer, "_save_optimizer_and_scheduler"),  # weights written, optimizer not
    "analyses": (harness.run.engine, "run_checkpoints"),
    "results": (harness.results.store, "atomic_write_bytes"),
    "mlflow": (MlflowClient, "log_batch"),
    "study": (harness.study.executors, "run_pipeline"),  # a study between its (task, seed) runs
    "figures": (harness.views.saving, "atomic_path"),  # saving a figure (PNG, then its vector copies)
}
REPLACEMENTS: dict[str, Callable] = {"results": torn_write, "figures": killed_before_rename}


def interrupting(original: Callable, call: int, replacement: Callable | None) -> Callable:
    calls = 0

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == call:
            if replacement is not None:
                return replacement(*args, **kwargs)
            os.kill(os.getpid(), SIGNAL)
        return original(*args, **kwargs)

    return wrapper


def hook(phase: str, signal_name: str, call: int) -> None:
    """The ``call``-th call of ``phase``'s function sends ``signal_name`` (for ``results``:
    half-way through the write; for ``figures``: once the file is written, before its rename)."""
    global SIGNAL
    SIGNAL = signal.Signals[signal_name]
    owner, attribute = HOOKS[phase]
    setattr(owner, attribute, interrupting(getattr(owner, attribute), int(call), REPLACEMENTS.get(phase)))


if __name__ == "__main__":
    phase, signal_name, call, separator, *harness_arguments = sys.argv[1:]
    assert separator == "--", "usage: PHASE SIGNAL CALL -- <harness arguments>"
    # A job started in the background (CI, `cmd &`) inherits SIGINT ignored; a terminal's Ctrl-C is not.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    hook(phase, signal_name, int(call))
    sys.exit(main(harness_arguments))
