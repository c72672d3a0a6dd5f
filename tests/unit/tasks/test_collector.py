"""`frozen_heap`: collections within skip what existed before, and nothing is kept after."""

from __future__ import annotations

import gc
import weakref

from tasks.collector import frozen_heap


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
