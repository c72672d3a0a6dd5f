"""Registries of named classes (analyses, views, sources): a dict filled by a class decorator, and
the discovery that imports the modules whose classes register themselves.

A registry's package never lists its members: `discover` imports every module of the package,
then every module that an installed distribution names under the entry-point group of the
package's name (``harness.analyses``, ``harness.views``, ``harness.inputs.sources``; encoder
families under ``harness.model``), so a new member is one new module, here or in a package of
its own.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Callable, Collection
from importlib.metadata import entry_points
from types import ModuleType
from typing import Any, TypeVar

Registered = TypeVar("Registered", bound=type)


def registrar(registry: dict[str, Registered], kind: str) -> Callable[[Registered], Registered]:
    """A class decorator adding a class to ``registry`` under its ``name``; a name used twice is an error."""

    def register(cls: Registered) -> Registered:
        name = cls.name  # type: ignore[attr-defined]  # every registered class names itself (a class attribute)
        if name in registry:
            raise ValueError(f"{kind} {name!r} registered twice")
        registry[name] = cls
        return cls

    return register


def extensions(group: str) -> list[ModuleType]:
    """The modules installed distributions name under the entry-point group ``group``, imported.

    A package outside the harness adds to a registry by naming its modules in its own
    ``pyproject.toml`` (``[project.entry-points."harness.analyses"]``, ``toy = "toy.analysis"``)
    and being installed (``pip install -e .``).
    """
    return [importlib.import_module(entry.module) for entry in entry_points(group=group)]


def discover(
    package: str,
    registry: dict[str, Registered],
    order: Callable[[Registered], Any] | None = None,  # Any: a sort key of any comparable type
    leave_out: Collection[str] = (),
) -> None:
    """Fill ``registry`` by importing every module of ``package`` (a package being initialised,
    or one already imported) but those named in ``leave_out`` (modules that register nothing and
    are imported where they are used), and the `extensions` of the group named after it; then sort
    it by ``order`` (a member's key; equal keys by name). Called again, it imports only what is new
    (an extension installed into a running process, as the tests do) and sorts again."""
    for module in pkgutil.iter_modules(sys.modules[package].__path__, f"{package}."):
        if module.name.removeprefix(f"{package}.") not in leave_out:
            importlib.import_module(module.name)
    extensions(package)
    if order is not None:
        members = sorted(registry.items(), key=lambda item: (order(item[1]), item[0]))
        registry.clear()
        registry.update(members)
