"""Registries of named classes (analyses, sources): a dict filled by a class decorator."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

Registered = TypeVar("Registered", bound=type)


def registrar(registry: dict[str, Registered], kind: str) -> Callable[[Registered], Registered]:
    """A class decorator adding a class to ``registry`` under its ``name``; a name used twice is an error."""
    def register(cls: Registered) -> Registered:
        if cls.name in registry:
            raise ValueError(f"{kind} {cls.name!r} registered twice")
        registry[cls.name] = cls
        return cls
    return register
