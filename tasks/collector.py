"""Python's cyclic garbage collector in a harness process: young collections less often
(`collect_less_often`), the long phases (`frozen_heap`) and the way out of a command (`exit_uncollected`).

A full collection scans every object the process holds. A run holds millions that live as long
as it does (the modules of torch, transformers, MLflow, scikit-learn and matplotlib, the model,
the corpora), while drawing its figures allocates millions of short-lived artists, and those
allocations keep triggering full collections. In a tiny run on a 2-core CPU, inside a test
process, the full collections took 17 of the 86 seconds of eight runs.

Within `frozen_heap` what existed on entry sits in the collector's permanent generation
(`gc.freeze`), so a collection scans only what the phase allocated; on leaving, it is handed
back (`gc.unfreeze`), so garbage made before the phase is still collected, only later. Nested
uses freeze what was allocated since the outer one began, and the outermost hands everything
back. A process that had frozen objects itself before the outermost use (a server forking
workers, say) keeps its own policy: nothing is frozen or handed back.
"""

from __future__ import annotations

import gc
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

# A young collection every 20,000 allocations (Python's default: 700). Before a run's long phases the
# process builds its long-lived heap (the libraries' modules, the parsed corpora, the models), and with
# the default every tenth collection of the middle generation scanned the whole of it: 12 full
# collections, 1.9 s of a tiny MiniLM run; at 20,000 one, and 0.7-1.2 s for all three generations
# (`benchmarks.bench_collector --what collect`: 2.2 s less CPU a tiny run, 17.0 s against 19.2 s).
YOUNG_COLLECTION_ALLOCATIONS = 20_000

_lock = threading.Lock()
_open = [0]  # the `frozen_heap` blocks open in this process that froze objects


@contextmanager
def frozen_heap() -> Iterator[None]:
    """Collect only what is allocated within (see the module's docstring)."""
    with _lock:
        foreign = _open[0] == 0 and gc.get_freeze_count() > 0  # frozen by the process's owner
        if not foreign:
            gc.freeze()
            _open[0] += 1
    try:
        yield
    finally:
        if not foreign:
            with _lock:
                _open[0] -= 1
                if _open[0] == 0:
                    gc.unfreeze()


def collect_less_often() -> None:
    """Collect the young generation every `YOUNG_COLLECTION_ALLOCATIONS` allocations, the older
    generations as often relative to it as before: garbage is freed later, never kept."""
    gc.set_threshold(YOUNG_COLLECTION_ALLOCATIONS, *gc.get_threshold()[1:])


def exit_uncollected(status: int) -> NoReturn:
    """Exit with ``status``, leaving what the process made out of the collections the interpreter
    makes on its way out (`gc.freeze`): over the modules of torch, transformers and MLflow (~600k
    objects) they took 1.5-2.3 s of every command that loads a model (`benchmarks.bench_collector
    --what exit`). Exit handlers still run, and files are still flushed and closed."""
    gc.freeze()
    sys.exit(status)
