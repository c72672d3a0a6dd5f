"""Each view's type parameter is the shape its analysis declares to the store: the TypedDicts mypy
checks a view's reads against (`View[...]`) are the ones the store checks its writes against
(``stored``, ``compared``), so the two checks hold the analysis to the same keys."""

from __future__ import annotations

from typing import get_args, get_origin

from harness.results.entries import PerCheckpoint
from harness.views import VIEWS
from harness.views.base import View


def declared_result(view: type[View]) -> object:
    """The ``Result`` a view class (or the view it extends) gives `View`."""
    for klass in view.__mro__:
        for base in getattr(klass, "__orig_bases__", ()):
            if get_origin(base) is View:
                return get_args(base)[0]
    raise AssertionError(f"{view.__name__} gives View no result type")


def test_every_view_is_typed_by_the_shapes_it_declares_to_the_store():
    for name, view in VIEWS.items():
        result = declared_result(view)
        if get_origin(result) is PerCheckpoint:
            assert get_args(result) == (view.stored, view.compared), name
        else:  # a joint analysis: its one stored result
            assert result is view.stored and view.compared is None, name
