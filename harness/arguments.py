"""The command line, generated from the configuration dataclasses (as ``run_glue.py`` does
with ``HfArgumentParser``, without importing transformers before the flags are checked).

`add_arguments` adds one argparse group per dataclass, a flag per field (help, choices and
range from the field's `harness.options.option` metadata; ``bool`` fields become switches;
``list`` fields take several values); `build` turns the parsed namespace back into the
dataclass, whose ``__post_init__`` checks the values against the same metadata.
"""

from __future__ import annotations

import argparse
import types
import typing
from dataclasses import MISSING, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from harness.options import AnyField, Bounds, SettingValue, flag_of

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

Config = TypeVar("Config", bound="DataclassInstance")
SCALARS = (int, float, str, Path)


# Any: a type annotation as a dataclass field holds it (a class, a union, a generic alias), and its class
def _base_type(annotation: Any) -> tuple[Any, bool]:
    """The scalar (or list) type of an annotation such as ``int | None``, and whether it is a list."""
    arguments = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        annotation = arguments[0]
    if typing.get_origin(annotation) is list:
        return typing.get_args(annotation)[0], True
    return annotation, False


def field_default(item: AnyField) -> SettingValue:
    """The value a dataclass field takes when it is not given (its default, or its factory's product)."""
    if item.default is not MISSING:
        return item.default
    if item.default_factory is not MISSING:
        return item.default_factory()
    raise TypeError(f"field {item.name} has no default")


def with_notes(help_text: str, bounds: Bounds | None, default: SettingValue) -> str:
    """``help_text`` with the range the flag takes and its default, where it has them."""
    notes = [bounds.words] if bounds is not None else []
    if default not in (None, False, []):
        notes.append(f"default: {default}")
    return f"{help_text} ({'; '.join(notes)})" if notes else help_text


def add_arguments(
    parser: argparse.ArgumentParser,
    cls: type[DataclassInstance],
    title: str | None = None,
    only: tuple[str, ...] | None = None,
    optional: bool = False,
) -> None:
    """Flags for the fields of dataclass ``cls`` (or those named in ``only``) in one group;
    ``optional``: no flag is required by the parser (the dataclass still checks what it needs)."""
    group = parser.add_argument_group(title or (cls.__doc__ or cls.__name__).splitlines()[0].rstrip("."))
    hints = typing.get_type_hints(cls)
    for item in fields(cls):
        if only is not None and item.name not in only:
            continue
        scalar, is_list = _base_type(hints[item.name])
        default = field_default(item)
        help_text = with_notes(item.metadata.get("help", ""), item.metadata.get("bounds"), default)
        flag = flag_of(cls, item.name)
        if scalar is bool:
            group.add_argument(flag, dest=item.name, action="store_true", help=help_text)
            continue
        if scalar not in SCALARS:
            raise TypeError(f"{cls.__name__}.{item.name}: no command-line form for {scalar}")
        if item.metadata.get("positional"):
            group.add_argument(
                item.name,
                type=scalar,
                nargs="*" if is_list else "?",
                default=default,
                choices=item.metadata.get("choices"),
                help=help_text,
                metavar=flag,
            )
            continue
        group.add_argument(
            flag,
            dest=item.name,
            type=scalar,
            nargs=("*" if item.metadata.get("values_optional") else "+") if is_list else None,
            choices=item.metadata.get("choices"),
            default=default,
            help=help_text,
            required=item.metadata.get("required", False) and not optional,
            metavar=None if item.metadata.get("choices") else flag[2:].replace("-", "_").upper(),
        )


def build(cls: type[Config], namespace: argparse.Namespace) -> Config:
    """An instance of dataclass ``cls`` from the parsed flags (validated by its ``__post_init__``)."""
    values = vars(namespace)
    return cls(**{item.name: values[item.name] for item in fields(cls) if item.name in values})


def to_argv(instance: DataclassInstance) -> list[str]:
    """The flags that `build` turns back into ``instance``: each field that differs from its
    default (e.g. the command a study's job launches for one of its runs)."""
    argv: list[str] = []
    for item in fields(instance):
        value = getattr(instance, item.name)
        default = field_default(item)
        if value == default or value is None or value is False:
            continue
        flag = flag_of(type(instance), item.name)
        if value is True:
            argv.append(flag)
        else:
            argv += [flag, *map(str, value if isinstance(value, list) else [value])]
    return argv
