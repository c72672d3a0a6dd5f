"""A command's settings as a file: ``harness run --config FILE`` (flags on the command line win).

The file is a JSON or YAML mapping of settings to values, each named by its field
(``max_train_examples``) or its flag (``--max-train-examples``): a list for a flag that takes
several values, true or false for a switch. It is read as every small settings file is
(`tasks.settings_files`): only up to `MAX_BYTES`, YAML anchors and aliases and deep nesting
refused, so a small file cannot expand to gigabytes or stop the parser. `expanded` turns
it into the flags it stands for, placed before the command line's own, so that a flag given
there overrides the file (as ``run_glue.py`` takes a JSON file). Every run writes the
settings it ran with as ``config.json`` in its folder (`settings_file`, its paths absolute), which
``--config`` takes back from any folder: a run is rerun from its folder.
"""

from __future__ import annotations

import argparse
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tasks.errors import InputError, clipped
from tasks.settings_files import SettingsError, parsed, settings_text

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

# A settings file's mapping as parsed, or a run's settings about to be written as one: open, since its
# keys are any command's fields or flags and its values JSON's or YAML's own, which argparse checks.
FileSettings = dict[str, Any]
CONFIG_FLAG = "--config"
RUN_SETTINGS = "config.json"  # a run's settings in its folder, as `--config` takes them back
SUFFIXES = (".json", ".yaml", ".yml")
MAX_BYTES = 256 * 1024  # a settings file is a few hundred bytes; a larger one is the wrong file
HOLDS = "a settings file is a few lines of flag names and values"
SQLITE = "sqlite:///"  # a tracking URI of a SQLite file: relative after the third slash, absolute after a fourth


def read_settings(path: Path) -> FileSettings:
    """The mapping in ``path``, or one line naming the file and what is wrong with it (read as
    `tasks.settings_files` reads a small file: no anchors, aliases or deep nesting)."""
    if path.suffix not in SUFFIXES:
        raise InputError(f"{CONFIG_FLAG} {path}: must be a .json, .yaml or .yml file")
    try:
        settings = parsed(settings_text(path, MAX_BYTES, HOLDS), "json" if path.suffix == ".json" else "yaml")
    except OSError as error:
        raise InputError(f"{CONFIG_FLAG} {path}: cannot be read ({error.strerror}); check the path") from error
    except SettingsError as error:
        where = f"{path}:{error.line}" if error.line else str(path)
        raise InputError(f"{CONFIG_FLAG} {where}: {clipped(error.problem)}") from None
    if not isinstance(settings, dict):
        raise InputError(
            f"{CONFIG_FLAG} {path}: must hold a mapping of settings to values, not {type(settings).__name__}"
        )
    return settings


def flag_words(value: object, name: object, path: Path) -> list[str]:
    """The command-line words of setting ``name``'s ``value``: a value, or a list of values, as
    text; anything else (a mapping, a list inside a list) is one line quoting it."""
    items = value if isinstance(value, list) else [value]
    if any(isinstance(item, (list, dict)) for item in items):
        raise InputError(
            f"{CONFIG_FLAG} {path}: {clipped(repr(name))} must be a value or a list of values, "
            f"not {clipped(repr(value))}"
        )
    return [str(item) for item in items]


def flag_tokens(parser: argparse.ArgumentParser, settings: FileSettings, path: Path) -> list[str]:
    """The command-line words the settings stand for, for the subcommand's ``parser``."""
    actions = {action.dest: action for action in parser._actions if action.option_strings}
    actions |= {
        option.lstrip("-").replace("-", "_"): action for action in parser._actions for option in action.option_strings
    }
    tokens: list[str] = []
    for name, value in settings.items():
        action = actions.get(str(name).lstrip("-").replace("-", "_"))
        if action is None or action.dest == "help":
            raise InputError(
                f"{CONFIG_FLAG} {path}: {clipped(repr(name))} is not a setting of `{parser.prog}`; "
                f"`{parser.prog} --help` lists them"
            )
        flag = action.option_strings[-1]
        if isinstance(action, argparse._StoreTrueAction):
            tokens += [flag] if value else []
        elif value is not None and value != []:
            tokens += [flag, *flag_words(value, name, path)]
    return tokens


def expanded(argv: list[str], subcommands: dict[str, argparse.ArgumentParser]) -> list[str]:
    """``argv`` with each ``--config FILE`` of its subcommand replaced by the file's flags, put
    right after the subcommand's name, before the flags typed after it."""
    command = next((index for index, word in enumerate(argv) if word in subcommands), None)
    if command is None or CONFIG_FLAG not in argv[command:]:
        return argv
    rest = argv[command + 1 :]
    from_files: list[str] = []
    while CONFIG_FLAG in rest:
        at = rest.index(CONFIG_FLAG)
        if at + 1 >= len(rest):
            raise InputError(f"{CONFIG_FLAG} needs a file")
        path = Path(rest[at + 1])
        from_files += flag_tokens(subcommands[argv[command]], read_settings(path), path)
        rest = rest[:at] + rest[at + 2 :]
    return [*argv[: command + 1], *from_files, *rest]


def settings_file(*configs: DataclassInstance | type[DataclassInstance]) -> FileSettings:
    """The settings of dataclass ``configs`` (and of their dataclass parts) by field name, as
    ``--config`` takes them back from any folder: paths (and a SQLite tracking store's) made
    absolute, unset ones left out."""
    settings: FileSettings = {}
    for config in configs:
        for item in fields(config):
            value = getattr(config, item.name)
            if is_dataclass(value):
                settings |= settings_file(value)
            elif value is not None:
                settings[item.name] = [whole(part) for part in value] if isinstance(value, list) else whole(value)
    return settings


def whole(value: object) -> object:
    """A setting as a file read from another folder means it: a path absolute, a SQLite store's URI
    (``sqlite:///mlruns/mlflow.db``, relative to the folder it was run from) by its absolute path."""
    if isinstance(value, Path):
        return str(value.expanduser().absolute())
    if isinstance(value, str) and value.startswith(SQLITE) and not Path(value[len(SQLITE) :]).is_absolute():
        return SQLITE + str(Path(value[len(SQLITE) :]).absolute())
    return value
