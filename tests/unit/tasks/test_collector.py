"""`frozen_heap`: collections within skip what existed before, and nothing is kept after;
`collect_less_often`: young collections less often, the older ones as often relative to them;
`exit_uncollected`: a process's exit with its status, its exit handlers and its output, the heap frozen."""

from __future__ import annotations

import gc
import re
import subprocess
import sys
import weakref

from tasks.collector import YOUNG_COLLECTION_ALLOCATIONS, collect_less_often, frozen_heap


class Node:
    """An object that can sit in a reference cycle and be watched by a weak reference."""

    def __init__(self) -> None:
        self.other: Node | None = None


def cycle() -> weakref.ref[Node]:
    """A reference cycle that nothing else holds (only the cyclic collector frees it)."""
    first, second = Node(), Node()
    first.other, second.other = second, first
    return weakref.ref(first)


def test_garbage_from_before_is_skipped_within_and_collected_after() -> None:
    assert gc.get_freeze_count() == 0
    before = cycle()
    with frozen_heap():
        assert gc.get_freeze_count() > 0
        gc.collect()
        assert before() is not None  # frozen on entry: the collections within do not scan it
        within = cycle()
        gc.collect()
        assert within() is None  # allocated within: collected as usual
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert before() is None


def test_a_nested_block_freezes_what_came_since_and_the_outermost_hands_everything_back() -> None:
    with frozen_heap():
        since = cycle()
        with frozen_heap():
            gc.collect()
            assert since() is not None  # allocated after the outer block began, frozen by the inner
        gc.collect()
        assert since() is not None  # the inner block leaves the handing back to the outer one
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert since() is None


def test_a_process_that_froze_objects_itself_keeps_them_frozen() -> None:
    owned = cycle()
    gc.freeze()
    try:
        between = cycle()  # after the owner froze its objects, before the block
        with frozen_heap():
            gc.collect()
            assert between() is None  # nothing frozen on entry
        gc.collect()
        assert owned() is not None  # and nothing handed back: the owner's frozen objects stay frozen
    finally:
        gc.unfreeze()
    gc.collect()
    assert owned() is None


# A process whose output waits in its buffer and whose exit handler reports the collector's state.
EXITING = """
import atexit, gc, sys
from tasks.collector import exit_uncollected
atexit.register(lambda: print(f"handlers ran with {gc.get_freeze_count()} objects frozen"))
sys.stdout.write("written, ")
exit_uncollected(3)
"""


def test_an_uncollected_exit_keeps_the_status_runs_the_handlers_and_flushes_with_the_heap_frozen() -> None:
    done = subprocess.run([sys.executable, "-c", EXITING], capture_output=True, text=True, timeout=60)
    assert done.returncode == 3, done.stderr
    said = re.fullmatch(r"written, handlers ran with (\d+) objects frozen\n", done.stdout)
    assert said is not None and int(said.group(1)) > 1000, done.stdout  # the interpreter's own objects at least


def test_collecting_less_often_raises_the_young_threshold_and_keeps_the_older_ones() -> None:
    kept = gc.get_threshold()
    gc.set_threshold(700, 10, 5)  # Python's default young threshold, another oldest one
    try:
        collect_less_often()
        assert gc.get_threshold() == (YOUNG_COLLECTION_ALLOCATIONS, 10, 5)
    finally:
        gc.set_threshold(*kept)
