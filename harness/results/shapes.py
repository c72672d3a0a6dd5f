"""The shape each analysis declares for the result it stores, and the check of a result against it.

An analysis's view declares, as `typing.TypedDict`s, what one stored result holds (a
checkpoint's statistics, or the joint result of all checkpoints) and what one comparison of a
pair holds (`harness.views.base.View.stored` and ``compared``): the analysis builds them, the
view reads them, and the type checker holds both to the same keys. At run time the results store
checks every result it is given against its analysis's declared shape before writing it
(`check`), so a misspelt key fails where it is written, naming the analysis and the key, and
never becomes a row missing later. Only keys are checked: every key of each TypedDict present
(its optional ones may be absent), no other key, recursively through dicts, lists and optional
values that hold TypedDicts; the values themselves are the analysis's to get right.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import NoneType, UnionType
from typing import Any, NotRequired, Required, Union, get_args, get_origin, get_type_hints, is_typeddict

# A type annotation as `typing` reads it from a TypedDict: a class, a TypedDict, a generic alias, a union
Annotation = Any
SHAPES: dict[str, type] = {}  # {analysis name: the TypedDict of one stored result}, filled by the views


class ReadOnly:
    """``ReadOnly[X]`` as the store reads it: ``X``. A TypedDict's module imports the qualifier for the
    type checker alone (typing_extensions: `harness.views.evidence`, `harness.results.entries`), and
    whether a reader may write a key is no part of its shape (a read-only key is required or not as
    the qualifier inside it says)."""

    def __class_getitem__(cls, item: Annotation) -> Annotation:
        return item


QUALIFIERS = {"ReadOnly": ReadOnly}  # what a declared shape's annotations name that its module does not define


class ShapeError(TypeError):
    """A result whose keys are not those its analysis declared."""


def declare(analysis: str, shape: type) -> None:
    """Record ``shape`` (a TypedDict) as what ``analysis`` stores: the store checks its results against it."""
    SHAPES[analysis] = shape


def check(analysis: str, result: object) -> None:
    """Raise `ShapeError` naming the analysis and the key where ``result`` differs from the
    shape ``analysis`` declared (nothing to check for an analysis that declared none)."""
    if analysis in SHAPES:
        check_value(result, SHAPES[analysis], analysis)


def check_value(value: object, annotation: Annotation, where: str) -> None:
    """Check the keys of ``value`` against ``annotation`` and everything it holds; ``where`` is the
    path to it, which an error names."""
    origin, arguments = get_origin(annotation), get_args(annotation)
    if is_typeddict(annotation):
        check_keys(value, annotation, where)
    elif origin in (Union, UnionType) and NoneType in arguments:
        if value is not None:
            check_value(value, Union[tuple(a for a in arguments if a is not NoneType)], where)  # noqa: UP007 (built at run time)
    elif origin in (dict, Mapping) and holds_shapes(arguments[1]) and isinstance(value, dict):
        for key, inner in value.items():
            check_value(inner, arguments[1], f"{where}.{key}")
    elif origin is list and holds_shapes(arguments[0]) and isinstance(value, list):
        for index, inner in enumerate(value):
            check_value(inner, arguments[0], f"{where}[{index}]")


def check_keys(value: object, shape: type, where: str) -> None:
    """Check that ``value`` is a dict with every required key of the TypedDict ``shape``, only its
    keys, and each value its own shape."""
    if not isinstance(value, dict):
        raise ShapeError(f"{where}: a {type(value).__name__} where {shape.__name__} (a dict) was declared")
    fields = get_type_hints(shape, localns=QUALIFIERS, include_extras=True)
    unknown = [key for key in value if key not in fields]
    if unknown:
        raise ShapeError(f"{where}: key {unknown[0]!r} is not one of {shape.__name__}'s ({', '.join(fields)})")
    for key, annotation in fields.items():
        if key in value:
            check_value(value[key], unwrapped(annotation), f"{where}.{key}")
        elif required(annotation, shape):
            raise ShapeError(f"{where}: no key {key!r}, which {shape.__name__} requires")


def unwrapped(annotation: Annotation) -> Annotation:
    """``annotation`` without its ``Required``/``NotRequired`` qualifier."""
    return get_args(annotation)[0] if get_origin(annotation) in (Required, NotRequired) else annotation


def required(annotation: Annotation, shape: type) -> bool:
    """Whether a key annotated so must be present in ``shape`` (read from the annotation itself,
    which ``__required_keys__`` misreads in a module with postponed annotations)."""
    qualifier = get_origin(annotation)
    return qualifier is Required or (qualifier is not NotRequired and getattr(shape, "__total__", True))


def holds_shapes(annotation: Annotation) -> bool:
    """Whether ``annotation`` is a TypedDict or holds one (a dict's values, a list's items, an option)."""
    return is_typeddict(annotation) or any(holds_shapes(argument) for argument in get_args(annotation))
