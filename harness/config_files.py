"""A command's settings as a file: ``harness run --config FILE`` (flags on the command line win).

The file is a JSON or YAML mapping of settings to values, each named by its field
(``max_train_examples``) or its flag (``--max-train-examples``): a list for a flag that takes
several values, true or false for a switch. `expanded` turns it into the flags it stands for,
placed before the command line's own, so that a flag given there overrides the file (as
``run_glue.py`` takes a JSON file). Every run writes the settings it ran with as ``config.json``
in its folder (`settings_file`), which ``--config`` takes back: a run is rerun from its folder.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

import yaml

from tasks.errors import InputError

CONFIG_FLAG = "--config"
SUFFIXES = (".json", ".yaml", ".yml")


def read_settings(path: Path) -> dict[str, Any]:
    """The mapping in ``path``, or one line naming the file and what is wrong with it."""
    if path.suffix not in SUFFIXES:
        raise InputError(f"{CONFIG_FLAG} {path}: must be a .json, .yaml or .yml file")
    try:
        text = path.read_text(encoding="utf-8")
        settings = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except OSError as error:
        raise InputError(f"{CONFIG_FLAG} {path}: cannot be read ({error.strerror}); check the path") from error
    except (ValueError, yaml.YAMLError) as error:
        raise InputError(f"{CONFIG_FLAG} {path}: not valid {path.suffix[1:].upper()} "
                         f"({str(error).splitlines()[0]})") from error
    if not isinstance(settings, dict):
        raise InputError(f"{CONFIG_FLAG} {path}: must hold a mapping of settings to values, not {type(settings).__name__}")
    return settings


def flag_tokens(parser: argparse.ArgumentParser, settings: dict[str, Any], path: Path) -> list[str]:
    """The command-line words the settings stand for, for the subcommand's ``parser``."""
    actions = {action.dest: action for action in parser._actions if action.option_strings}
    actions |= {option.lstrip("-").replace("-", "_"): action
                for action in parser._actions for option in action.option_strings}
    tokens: list[str] = []
    for name, value in settings.items():
        action = actions.get(str(name).lstrip("-").replace("-", "_"))
        if action is None or action.dest == "help":
            raise InputError(f"{CONFIG_FLAG} {path}: {name!r} is not a setting of `{parser.prog}`; "
                             f"`{parser.prog} --help` lists them")
        flag = action.option_strings[-1]
        if isinstance(action, argparse._StoreTrueAction):
            tokens += [flag] if value else []
        elif isinstance(value, list):
            tokens += [flag, *(str(item) for item in value)] if value else []
        elif value is not None:
            tokens += [flag, str(value)]
    return tokens


def expanded(argv: list[str], subcommands: dict[str, argparse.ArgumentParser]) -> list[str]:
    """``argv`` with each ``--config FILE`` of its subcommand replaced by the file's flags, put
    right after the subcommand's name, before the flags typed after it."""
    command = next((index for index, word in enumerate(argv) if word in subcommands), None)
    if command is None or CONFIG_FLAG not in argv[command:]:
        return argv
    rest = argv[command + 1:]
    from_files: list[str] = []
    while CONFIG_FLAG in rest:
        at = rest.index(CONFIG_FLAG)
        if at + 1 >= len(rest):
            raise InputError(f"{CONFIG_FLAG} needs a file")
        path = Path(rest[at + 1])
        from_files += flag_tokens(subcommands[argv[command]], read_settings(path), path)
        rest = rest[:at] + rest[at + 2:]
    return [*argv[:command + 1], *from_files, *rest]


def settings_file(*configs: Any) -> dict[str, Any]:
    """The settings of dataclass ``configs`` (and of their dataclass parts) by field name, as
    ``--config`` takes them back: paths as text, unset ones left out."""
    settings: dict[str, Any] = {}
    for config in configs:
        for item in fields(config):
            value = getattr(config, item.name)
            if is_dataclass(value):
                settings |= settings_file(value)
            elif value is not None:
                settings[item.name] = [str(part) if isinstance(part, Path) else part for part in value] \
                    if isinstance(value, list) else str(value) if isinstance(value, Path) else value
    return settings
