"""Flags declared beside their fields: the help text, flag, choices and range of each field of a
configuration dataclass, in its metadata (`option`).

`harness.arguments` reads the metadata into argparse (flags, choices, help with the range);
`Flags.__post_init__` checks every value against the same declaration, so a bound is written
once. A bad value is one `InputError` line: the flag, the value as typed (a long one clipped)
and what it must be. Checks that are not a field's choices or range (a path that must exist, a
name without '/', two fields together) are the dataclass's own, with `require` and `existing`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import Field, dataclass, field, fields
from pathlib import Path
from typing import Any, cast

from tasks.errors import InputError, clipped

# A setting's dataclass field, of whichever type its setting declares: the CLI and the checks
# below handle every setting alike, reading its type from the field.
AnyField = Field[Any]
SettingValue = Any  # a setting's value, of the type its field declares (checked once, where it is built)


def number(value: float | None) -> str:
    """A bound as the help writes it: a whole number in full (2**32 is 4294967296, not 4.29497e+09)."""
    return str(int(value)) if value is not None and float(value).is_integer() else f"{value:g}"


@dataclass(frozen=True)
class Bounds:
    """The numbers a flag takes: at least ``minimum`` or above ``above``, and below ``below`` where
    given; ``unit`` and ``because`` complete what the help and the error say."""

    minimum: float | None = None
    above: float | None = None
    below: float | None = None
    unit: str = ""
    because: str = ""

    def __post_init__(self) -> None:
        if (self.minimum is None) == (self.above is None):
            raise TypeError("a range starts either at a minimum or above a value")

    def hold(self, value: float) -> bool:
        """Whether ``value`` is in the range."""
        lowest = value >= self.minimum if self.minimum is not None else value > cast(float, self.above)
        return lowest and (self.below is None or value < self.below)

    @property
    def words(self) -> str:
        """The range as the help says it: ``at least 8 tokens``, ``0 or more``, ``above 0``, ``in [0, 1)``."""
        if self.below is not None:
            lowest = f"[{number(self.minimum)}" if self.minimum is not None else f"({number(self.above)}"
            said = f"in {lowest}, {number(self.below)})"
        elif self.above is not None:
            said = f"above {number(self.above)}"
        else:
            said = "0 or more" if self.minimum == 0 else f"at least {number(self.minimum)}"
        return f"{said} {self.unit}".rstrip()

    @property
    def requirement(self) -> str:
        """What an error says of a value out of range: ``must be`` the range, and why where declared."""
        return f"must be {self.words}" + (f" ({self.because})" if self.because else "")


def option(
    default: SettingValue = None,
    help: str = "",
    *,
    flag: str | None = None,
    choices: tuple[str, ...] | None = None,
    minimum: float | None = None,
    above: float | None = None,
    below: float | None = None,
    unit: str = "",
    because: str = "",
    required: bool = False,
    positional: bool = False,
    values_optional: bool = False,
    quick: int | None = None,
    quick_after: str | None = None,
    unbounded: SettingValue = None,
    after: str | None = None,
    before: str | None = None,
) -> Any:  # Any: the field, typed as its default is for the dataclass that declares it
    """A dataclass field with the metadata the CLI and the checks are generated from: its help,
    its flag (``positional``: an optional argument without a flag, shown as ``flag``), the
    ``choices`` it takes, or its range (`Bounds`: ``minimum``, ``above``, ``below``, with the
    ``unit`` and the reason, ``because``, that the error adds; a list's range is each value's).
    ``values_optional``: a list flag that may be given alone (an empty list: the dataclass
    gives its defaults). ``quick``: the cap ``--quick`` puts on a size (`harness.config.quick_caps`),
    named in its help after the cap of setting ``quick_after`` where given; it caps None, and the
    value ``unbounded`` says means no bound (the probes' 0: the whole treebank), as a larger size.
    ``after`` or ``before``: the shared setting an analysis's own one is placed beside
    (`harness.config.analysis_settings`).
    None, a value not given, is not checked."""
    given = (minimum, above, below) != (None, None, None)
    bounds = Bounds(minimum, above, below, unit, because) if given else None
    metadata = {
        "help": help,
        "flag": flag,
        "choices": choices,
        "bounds": bounds,
        "required": required,
        "positional": positional,
        "values_optional": values_optional,
        "quick": quick,
        "quick_after": quick_after,
        "unbounded": unbounded,
        "after": after,
        "before": before,
    }
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata=metadata)
    return field(default=default, metadata=metadata)


def flag_of(cls: type, name: str) -> str:
    """The command-line flag of field ``name`` of dataclass ``cls``."""
    for item in fields(cls):
        if item.name == name:
            return item.metadata.get("flag") or "--" + name.replace("_", "-")
    raise KeyError(name)


def shown(value: object) -> str:
    """``value`` as the user typed it (0, not 0.0), clipped to a short line."""
    return f"{value:g}" if isinstance(value, float) else clipped(str(value))


def flag_error(cls: type, name: str, value: object, requirement: str) -> InputError:
    """The one line of a bad value: field ``name``'s flag, ``value`` as typed and what it must be."""
    return InputError(f"{flag_of(cls, name)} {shown(value)}: {requirement}")


def require(ok: bool, cls: type, name: str, value: object, requirement: str) -> None:
    """Unless ``ok``, `flag_error`."""
    if not ok:
        raise flag_error(cls, name, value, requirement)


def existing(cls: type, name: str, value: Path | str | None, kind: str = "file") -> Path | None:
    """``value`` as a Path that must exist (as a ``file``, a ``folder``, or either: ``path``); a name
    the system refuses to look up (too long, for one) is the same one line, with its reason."""
    if value is None:
        return None
    path = Path(value)
    try:
        exists = {"file": path.is_file, "folder": path.is_dir, "path": path.exists}[kind]()
    except OSError as error:  # ENAMETOOLONG, ELOOP...: the path cannot be the file meant
        reason = (error.strerror or str(error)).lower()
        raise flag_error(cls, name, path, f"cannot be looked up ({reason}); check the path") from None
    require(exists, cls, name, path, f"no such {kind}; check the path")
    return path


def declared_problem(item: Field, value: SettingValue) -> tuple[SettingValue, str] | None:
    """The value (of a list: the first value) that is not what ``item`` declares, its choices or its
    range, or a number that is not finite (infinity or NaN, from a flag or a settings file), and
    what it must be; None if every value is fine."""
    choices, bounds = item.metadata.get("choices"), item.metadata.get("bounds")
    for each in [] if value is None else value if isinstance(value, list) else [value]:
        if isinstance(each, float) and not math.isfinite(each):  # argparse's float() takes "inf" and "nan"
            return each, "must be a finite number"
        if choices is not None and each not in choices:
            return each, f"must be one of {', '.join(choices)}"
        if bounds is not None and not bounds.hold(each):
            return each, bounds.requirement
    return None


class Flags:
    """A configuration dataclass whose ``__post_init__`` checks every field against its declared
    choices and range; a subclass with checks of its own calls it first."""

    def __post_init__(self) -> None:
        for item in fields(self):  # type: ignore[arg-type]
            problem = declared_problem(item, getattr(self, item.name))
            if problem is not None:
                raise flag_error(type(self), item.name, *problem)


# What `dataclasses.dataclass` writes into a class, removed before it writes them again (`refield`).
GENERATED = ("__init__", "__repr__", "__eq__", "__match_args__", "__dataclass_fields__", "__dataclass_params__")


def refield(cls: type, items: Sequence[AnyField], types: dict[str, Any]) -> None:  # any fields, any types' forms
    """Make dataclass ``cls`` one of exactly the fields ``items`` (their types in ``types``), in
    place: the class every module imported keeps its identity, and gains fields declared
    elsewhere (`harness.config.analysis_settings`)."""
    for name in [*getattr(cls, "__dataclass_fields__", {}), *GENERATED]:
        if name in cls.__dict__:
            delattr(cls, name)
    cls.__annotations__ = {item.name: types[item.name] for item in items}
    for item in items:
        setattr(
            cls, item.name, field(default=item.default, default_factory=item.default_factory, metadata=item.metadata)
        )
    dataclass(cls)
