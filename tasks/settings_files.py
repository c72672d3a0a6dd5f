"""Small files of settings (a task spec, ``harness ... --config``) read so that no file can cost
more than its size: read only up to a limit, UTF-8 or one line naming the byte, YAML without
anchors and aliases (a few hundred bytes of nested aliases expand to billions of values), and
nesting at most `MAX_DEPTH` tables and lists deep in every format (a deeply nested file would
otherwise stop the parser with a RecursionError). Each problem is a `SettingsError` the caller
turns into its one line, naming its file or flag."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import yaml

MAX_DEPTH = 8  # tables and lists inside each other: a spec's deepest (data_files' split lists) is 3


class SettingsError(Exception):
    """What is wrong with a settings file (without its name: the caller's line names it), and
    the 1-based line where it is, when known."""

    def __init__(self, problem: str, line: int | None = None, syntax: str | None = None) -> None:
        super().__init__(problem)
        self.problem, self.line, self.syntax = problem, line, syntax  # syntax: the parser's own first line


class RefusingLoader(yaml.SafeLoader):
    """YAML's safe loader refusing anchors and aliases and nesting past `MAX_DEPTH`, before the
    node is built: a settings file needs none of them."""

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:  # Any: as PyYAML has it
        event = self.peek_event()
        line = event.start_mark.line + 1
        if getattr(event, "anchor", None) is not None:  # an anchor (&name), or an alias (*name) naming one
            raise SettingsError("YAML anchors and aliases (&name, *name) are not taken; write the values out", line)
        nests = isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent))
        self.depth = getattr(self, "depth", 0) + nests
        try:
            if self.depth > MAX_DEPTH:
                raise SettingsError(too_deep(), line)
            return super().compose_node(parent, index)
        finally:
            self.depth -= nests


def too_deep() -> str:
    return f"nested more than {MAX_DEPTH} tables or lists deep; a setting is a value, a list or a table of values"


def settings_text(path: Path, limit: int, holds: str) -> str:
    """The text of ``path``, read only up to ``limit`` bytes: `SettingsError` when it is larger (saying
    what such a file ``holds``) or not UTF-8; `OSError` when it cannot be read."""
    with path.open("rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise SettingsError(f"larger than {limit // 1024} KiB; {holds}, check that this is the right file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        byte = data[error.start : error.start + 1]
        raise SettingsError(
            f"not UTF-8 text (byte {byte!r} at offset {error.start}); re-save it as UTF-8",
            data[: error.start].count(b"\n") + 1,
        ) from None


def parsed(text: str, kind: str) -> Any:  # Any: a file of any shape, checked by its reader
    """``text`` parsed as ``kind`` ("json", "toml" or "yaml"), nested at most `MAX_DEPTH` deep;
    a syntax error is a `SettingsError` naming its first line."""
    try:
        value = (
            json.loads(text)
            if kind == "json"
            else tomllib.loads(text)
            if kind == "toml"
            else yaml.load(text, Loader=RefusingLoader)
        )
    except RecursionError:
        raise SettingsError(too_deep()) from None
    except (ValueError, yaml.YAMLError) as error:  # JSONDecodeError and TOMLDecodeError are ValueErrors
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise SettingsError(f"not valid {kind.upper()} ({first})", syntax=first) from error
    if depth(value) > MAX_DEPTH:
        raise SettingsError(too_deep())
    return value


def depth(value: object) -> int:
    """How many tables and lists deep ``value`` nests (a plain value: 0), counted without recursion."""
    deepest, pending = 0, [(value, 0)]
    while pending:
        item, level = pending.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level + 1)
            if level + 1 <= MAX_DEPTH:  # deeper is refused anyway: stop counting there
                pending.extend((inner, level + 1) for inner in (item.values() if isinstance(item, dict) else item))
    return deepest
