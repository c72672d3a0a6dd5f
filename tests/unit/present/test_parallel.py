"""Pieces of a drawing in a pool of processes: each piece's value or error in the order given,
the warnings a worker logged handled here, and no torch in a worker though the asking process has it."""

from __future__ import annotations

import logging
import subprocess
import sys
from functools import partial

import pytest

from harness.present.parallel import ENOUGH_PIECES, cores, drawing_processes, drawn


def test_pieces_come_back_in_order_with_their_errors_and_warnings(caplog):
    warn = logging.getLogger("harness.views.saving").warning
    pieces = [partial(eval, "2 + 3"), partial(int, "x"), partial(warn, "figure %s: %s", "a.png", "overlap")]
    with caplog.at_level(logging.WARNING, logger="harness.views.saving"), drawn(pieces, 2) as results:
        assert results[0]() == 5
        with pytest.raises(ValueError, match="invalid literal"):
            results[1]()
        assert results[2]() is None
    assert [(record.name, record.getMessage()) for record in caplog.records] == [
        ("harness.views.saving", "figure a.png: overlap")
    ]


# In a process of its own: a test worker's fork server may already be another's (one a process),
# started with what that test preloads.
NO_TORCH_IN_WORKERS = """
import sys
from functools import partial
import torch
from harness.present.parallel import drawn
from harness.views.saving import figure_formats
from harness.views.tokens import model_tokens, own_tokens
loaded = "'torch' in __import__('sys').modules"
pieces = [partial(eval, loaded), partial(own_tokens, "[CLS] x"), partial(eval, loaded)]
with model_tokens({"[CLS]": "<s>"}), figure_formats(("png", "svg")), drawn(pieces, 2) as results:
    print("torch" in sys.modules, [result() for result in results])
"""


@pytest.mark.slow  # a fresh Python that imports torch, then a fork server: 6 s
def test_a_worker_imports_no_torch_and_draws_with_the_asking_process_settings():
    done = subprocess.run(
        [sys.executable, "-c", NO_TORCH_IN_WORKERS], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[-2] == "True [False, '<s> x', False]"


def test_one_process_draws_here_when_called():
    called = []
    with drawn([partial(called.append, 1), partial(called.append, 2)], 1) as results:
        assert called == []
        results[1]()
    assert called == [2]


def test_unasked_a_few_pieces_draw_here_and_many_on_each_core_the_share_allows(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # a scheduler's (or a test worker's) share of the cores
    assert cores() == 1
    monkeypatch.delenv("OMP_NUM_THREADS")
    allowed = cores()
    assert allowed >= 1 and drawing_processes(0, ENOUGH_PIECES) == allowed
    assert drawing_processes(0, ENOUGH_PIECES - 1) == 1 and drawing_processes(3, 1) == 3  # asked: as asked
