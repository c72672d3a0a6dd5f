"""``python -m harness`` (or ``harness``): subcommands ``run``, ``study``, ``finetune``, ``ablate``, ``figures``,
``annotate``, ``maps``, ``docs``, ``report``, ``export``, ``data``, ``tasks``, ``pack``, ``unpack``.

The flags are generated from the configuration dataclasses and validated before torch is
imported, so a bad flag is reported in a fraction of a second (a command that runs analyses
imports their views first, which declare the analyses' own settings: no matplotlib or scipy,
`harness.views.lazy`); then only the module
of the command is imported (`harness.commands`: those that load models import torch and
transformers, those that read stored results do not).
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import logging
import os
import signal
import sys
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn

from tqdm import tqdm

from harness.arguments import add_arguments, build
from harness.config import (
    AnalysisConfig,
    AnnotationConfig,
    DataConfig,
    DocsConfig,
    EnvironmentConfig,
    ExportConfig,
    FiguresConfig,
    FineTuneConfig,
    MapsConfig,
    PackConfig,
    PreviewConfig,
    ReportConfig,
    RunConfig,
    StudyConfig,
    TaskConfig,
    TasksConfig,
    UnpackConfig,
)
from harness.config_files import CONFIG_FLAG, RUN_SETTINGS, expanded, flag_tokens, read_settings
from tasks.collector import collect_less_often, exit_uncollected
from tasks.errors import InputError, clipped
from tasks.files import disk_full_message, is_disk_full

# Imported once the flags are valid: torch and transformers take seconds to load.
COMPUTE, STORED, DATA = "harness.commands.compute", "harness.commands.stored", "harness.commands.data"
PREVIEW = "harness.commands.preview"  # a task's data read and described: `datasets`, no torch
LOCAL_DATA = "tasks.loading"  # an own task's files read and checked before a command that loads a model
MODEL_SOURCE = "harness.model.source"  # a model that cannot be had, said before torch loads
DATA_FIRST = ("run", "finetune", "ablate", "annotate")  # those whose first configuration is a run's
BUNDLE = "harness.commands.bundle"
# Each analysis declares its own settings in its view's module (`harness.config.analysis_settings`), so the
# views are imported before the flags of a command that analyses are built (no torch, matplotlib or scipy);
# the other commands' flags are checked without them.
ANALYSIS_SETTINGS_FROM = "harness.views"
COMMAND_MODULES = {
    "run": COMPUTE,
    "study": COMPUTE,
    "finetune": COMPUTE,
    "ablate": COMPUTE,
    "figures": COMPUTE,
    "annotate": COMPUTE,
    "maps": COMPUTE,
    "docs": STORED,
    "report": STORED,
    "export": STORED,
    "data": DATA,
    "tasks": DATA,
    "pack": BUNDLE,
    "unpack": BUNDLE,
}
DESCRIPTIONS = {
    "run": "fine-tune (or reuse the cached checkpoint), compare the attention of both checkpoints, track in MLflow",
    "study": "every task and seed as its own run under one MLflow parent run, then what holds across seeds and "
    "tasks (study.json, cross-task figures); the same command again reuses every finished run",
    "finetune": "only fine-tune and write the checkpoint cache (runs under torchrun / accelerate launch)",
    "ablate": "disable heads and layers, rank heads by importance and prune them on the stored fine-tuned "
    "checkpoint of these flags (Kovaleva et al. section 6, Michel et al. 2019)",
    "figures": "redraw the figures of a finished run from its summary.json: give its folder (no model is loaded), "
    "or the flags it was run with",
    "annotate": "sample attention maps of a checkpoint into a labelling pool for the pattern classifier, "
    "or record its labels",
    "maps": "your own sentences: the attention maps of a text (or pair) you type through a run's pre-trained and "
    "fine-tuned checkpoints, every layer and head, and their difference; stored in the run's folder, shown on "
    "its own page (maps/index.html), as arrays from Python (harness.present.maps.run_inputs)",
    "docs": "rebuild the results tables in the README and docs from stored runs (never typed by hand)",
    "report": "one static HTML page of stored results (a study's findings and figures, then each run's analyses "
    "and parameters, and each example's attention before and after fine-tuning), no recompute",
    "export": "stored results as tidy tables for notebooks (Parquet and CSV): every run's metrics and per-layer and "
    "per-head values, one per row, and a study's metrics over seeds and findings (harness.present.frames)",
    "data": "the pinned default corpora (UD English EWT, LitBank): `harness data list` says which are present, "
    "where, their version and licence; `harness data download [NAME ...]` fetches them into the data cache",
    "tasks": "the tasks --task takes: each one's texts, labels, metrics and evaluation splits, and where its "
    "data is read from (the GLUE TSV folder of --data-dir or $GLUE_DIR, else the hub); `harness tasks TASK` "
    "(a name or a spec file) reads and checks its data and says what a run would read",
    "pack": "for a machine without pip or network (torch installed): the wheels of the harness and its dependencies "
    "for its Python and platform, the model, the GLUE tasks' files and the corpora, in parts of --part-size",
    "unpack": "check a bundle's parts (SHA-256), unpack them into a folder and print the command that runs from it "
    "(without the harness installed: python3 unpack.py --into DIR, beside the parts)",
}
GROUPS = {
    "run": (TaskConfig, FineTuneConfig, AnalysisConfig, EnvironmentConfig, PreviewConfig),
    "study": (StudyConfig, TaskConfig, FineTuneConfig, AnalysisConfig, EnvironmentConfig),
    "finetune": (TaskConfig, FineTuneConfig, EnvironmentConfig),
    "ablate": (TaskConfig, FineTuneConfig, AnalysisConfig, EnvironmentConfig),
    "figures": (FiguresConfig, TaskConfig, FineTuneConfig, AnalysisConfig, EnvironmentConfig),
    "annotate": (AnnotationConfig, TaskConfig, FineTuneConfig, EnvironmentConfig),
    "maps": (MapsConfig, TaskConfig, FineTuneConfig, AnalysisConfig, EnvironmentConfig),
    "docs": (DocsConfig,),
    "report": (ReportConfig, EnvironmentConfig),
    "export": (ExportConfig, EnvironmentConfig),
    "data": (DataConfig,),
    "tasks": (TasksConfig,),
    "pack": (PackConfig,),
    "unpack": (UnpackConfig,),
}
RUN_PARTS = {
    TaskConfig: "task",
    FineTuneConfig: "finetune",
    AnalysisConfig: "analysis",
    EnvironmentConfig: "environment",
}
# `harness figures RUN_FOLDER` and `harness maps RUN_FOLDER` need no --task: the folder names the run.
FLAGS_OPTIONAL = {("figures", TaskConfig), ("maps", TaskConfig)}
# What the commands that read stored results only take no part in.
STORED_ONLY = ("device", "precision", "cache_dir", "tracking_uri")
DRAWING = ("no_figures", "vector_formats", "figure_processes")  # what only the commands that draw figures take
# A study sets each run's task from --tasks (and its seeds from --seed on): no --task flag.
LEFT_OUT = {
    ("study", TaskConfig): ("task",),
    ("report", EnvironmentConfig): (*STORED_ONLY, *DRAWING),  # --output-dir
    ("export", EnvironmentConfig): (*STORED_ONLY, "log_checkpoint", *DRAWING),
    # --no-figures is for the commands that draw at their end; --vector-formats for those that draw
    ("figures", EnvironmentConfig): ("no_figures",),
    ("figures", AnalysisConfig): ("analyses",),  # which analyses to draw: FiguresConfig's --analyses
    ("finetune", EnvironmentConfig): DRAWING,
    ("annotate", EnvironmentConfig): DRAWING,
}


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is, so it unwinds as for Ctrl-C (runs end KILLED)."""


def raise_terminated(signum: int, frame: FrameType | None) -> None:
    """SIGTERM's handler: ignore a second one, and unwind as for Ctrl-C."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the clean-up short
    raise Terminated()


class SubcommandParser(argparse.ArgumentParser):
    """A subcommand's parser that rejects unknown flags itself, with its own usage and the
    closest known flag ("did you mean --model?"), instead of leaving them to the top parser."""

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        # argparse's stub overloads this on the type of a given namespace; subcommands are parsed into Namespace alone
        self.given = list(sys.argv[1:] if args is None else args)
        parsed, unknown = super().parse_known_args(args, namespace)
        if unknown:
            self.error("unrecognized arguments: " + " ".join(unknown) + self.suggestion(unknown))
        return parsed, unknown

    def error(self, message: str) -> NoReturn:
        """One line, not argparse's usage block: the problem, a suggestion also when a required
        flag is missing because it was misspelled (``--tsk rte``: argparse reports the missing
        ``--task`` first), and where the flags are listed; exit 2."""
        if message.startswith("the following arguments are required"):
            message += self.suggestion(getattr(self, "given", []))
        self.exit(2, f"{self.prog}: error: {clipped(message, MESSAGE_MAX)}; `{self.prog} --help` lists its flags\n")

    def suggestion(self, words: list[str]) -> str:
        """`` (did you mean --model for --modle?)`` for the misspelled flags among ``words``, or an
        empty string. Flags are compared without their dashes, which every flag shares: with
        them ``--bogus`` looked like ``--corpus``."""
        flags = {option.lstrip("-"): option for action in self._actions for option in action.option_strings}
        typed = [word for word in words if word.startswith("-") and word.split("=")[0] not in flags.values()]
        guesses = {
            word: difflib.get_close_matches(word.split("=")[0].lstrip("-"), flags, n=1, cutoff=SIMILAR)
            for word in typed
        }
        hints = [f"{flags[guess[0]]} for {word}" for word, guess in guesses.items() if guess]
        return f" (did you mean {', '.join(hints)}?)" if hints else ""


def command_module(args: argparse.Namespace) -> str:
    """The module of the command: a redrawing from a run folder needs no model, so no torch."""
    if args.command == "figures" and args.run_folder is not None:
        return STORED
    if args.command == "tasks" and args.task is not None:
        return PREVIEW
    return COMMAND_MODULES[args.command]


SIMILAR = 0.7  # difflib's similarity from which a flag is suggested for a misspelled one
MESSAGE_MAX = 2000  # characters of an error line: the last guard for a value quoted whole


def quiet_libraries(debug: bool) -> None:
    """Keep the terminal to progress bars and results unless ``--debug``: transformers' warnings
    and weight-loading bars (the harness shows its own) and MLflow's notices. Set through the
    variables transformers reads when it loads (a value the user set is kept; processes the
    command starts inherit it), and on transformers itself where this process has loaded it."""
    if debug:
        return
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")  # MLflow sets its loggers' level when it loads
    logging.getLogger("mlflow").setLevel(logging.WARNING)
    transformers = sys.modules.get("transformers")
    if transformers is not None:
        transformers.logging.set_verbosity_error()
        transformers.logging.disable_progress_bar()


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``harness`` parser: one subcommand per entry of `GROUPS`, its flags from those dataclasses.
    ``command``: the one subcommand it will parse, where known; unless it takes no `AnalysisConfig`, the
    analyses' own settings are imported first (`ANALYSIS_SETTINGS_FROM`)."""
    if AnalysisConfig in GROUPS.get(command or "", (AnalysisConfig,)):
        importlib.import_module(ANALYSIS_SETTINGS_FROM)  # AnalysisConfig gains each analysis's own settings
    parser = argparse.ArgumentParser(prog="harness", description="What does fine-tuning do to BERT's attention?")
    parser.add_argument("--debug", action="store_true", help="show tracebacks and library warnings")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=SubcommandParser)
    for name, groups in GROUPS.items():
        subcommand = commands.add_parser(name, help=DESCRIPTIONS[name], description=DESCRIPTIONS[name])
        for group in groups:
            left_out = LEFT_OUT.get((name, group), ())
            add_arguments(
                subcommand,
                group,
                only=tuple(f.name for f in fields(group) if f.name not in left_out),
                optional=(name, group) in FLAGS_OPTIONAL,
            )
        subcommand.add_argument(
            CONFIG_FLAG,
            metavar="FILE",
            help="a JSON or YAML file of settings (by field or flag "
            "name); flags given here win; each run writes its own as config.json in its folder",
        )
    return parser


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Each subcommand's parser by name."""
    return next(action for action in parser._actions if isinstance(action, argparse._SubParsersAction)).choices


def configs_from(args: argparse.Namespace) -> list[Any]:  # Any: each command its own configurations' classes
    """The command's validated configurations: the run configuration of the parsed flags
    (parts the command lacks take their defaults) when it has one, then its others."""
    if args.command == "study":
        study = build(StudyConfig, args)
        args.task = study.tasks[0]  # validates the task flags once; each run then takes its own task
        return [study, study.runs(**{part: build(cls, args) for cls, part in RUN_PARTS.items()})]
    if args.command in ("report", "export"):  # stored results: no run to configure, the environment says where
        return [build(cls, args) for cls in GROUPS[args.command]]
    if args.command == "figures" and args.run_folder is not None:  # the folder names the run: no run to configure
        return [build(FiguresConfig, args), build(EnvironmentConfig, args)]
    # each group's configuration; Any as the classes differ by command (RunConfig checks its parts' types)
    built: dict[type, Any] = {cls: build(cls, args) for cls in GROUPS[args.command]}
    parts = {RUN_PARTS[cls]: value for cls, value in built.items() if cls in RUN_PARTS}
    # --dry-run says how the command runs, not what it runs on: `main` reads it, the configurations leave it out
    others = [value for cls, value in built.items() if cls not in RUN_PARTS and cls is not PreviewConfig]
    return [RunConfig(**parts), *others] if parts else others


def run_settings(run_folder: str | Path) -> Path:
    """The settings file of a run's folder, or one line saying the folder is not a run's."""
    settings = Path(run_folder) / RUN_SETTINGS
    if not settings.is_file():
        raise InputError(f"{run_folder}: no {RUN_SETTINGS} in it; give a run's folder (<output-dir>/<task>-...)")
    return settings


def with_run_settings(argv: list[str], run_folder: str | Path, parser: argparse.ArgumentParser) -> list[str]:
    """``argv`` with the run folder first after the command's name, then the flags of the folder's
    settings file, then the flags typed (which win); the folder first, as a list flag of the file
    would otherwise take it for one of its values."""
    settings = run_settings(run_folder)
    at = argv.index("maps") + 1
    typed = argv[at:]
    typed.pop(next(index for index, word in enumerate(typed) if Path(word) == Path(run_folder)))
    return [*argv[:at], str(run_folder), *flag_tokens(parser, read_settings(settings), settings), *typed]


def run_config_of(run_folder: str | Path) -> RunConfig:
    """The settings a run folder's run ran with (its ``config.json``), validated as ``harness run``
    validates its flags: what finds its checkpoints from Python (`harness.run.maps.attention_maps`)."""
    parser = build_parser()
    settings = run_settings(run_folder)
    flags = flag_tokens(subcommands(parser)["run"], read_settings(settings), settings)
    return configs_from(parser.parse_args(["run", *flags]))[0]


def loads_model(configs: Sequence[object]) -> bool:
    """Whether a command of `DATA_FIRST` loads its run's model: all but recording a pool's labels."""
    return not any(isinstance(config, AnnotationConfig) and config.labels for config in configs)


def main(argv: list[str] | None = None) -> int:
    """Run one subcommand; the exit status: 0, 1 (a check found differences), 2 (bad input or a full
    disk, one line on stderr), or 128 + the signal that stopped it."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(next((word for word in argv if not word.startswith("-")), None))
    try:
        argv = expanded(argv, subcommands(parser))
    except InputError as error:
        print(f"error: {clipped(str(error), MESSAGE_MAX)}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    previous = signal.signal(signal.SIGTERM, raise_terminated)
    try:
        if args.command == "maps" and args.run_folder is not None:  # the run's own settings, then the flags typed
            args = parser.parse_args(with_run_settings(argv, args.run_folder, subcommands(parser)["maps"]))
        configs = configs_from(args)
        quiet_libraries(args.debug)
        if args.command in DATA_FIRST:  # their errors before torch loads
            if loads_model(configs):
                importlib.import_module(MODEL_SOURCE).check_obtainable(configs[0].task.model)
            if configs[0].task.definition.is_local:
                importlib.import_module(LOCAL_DATA).check_local(configs[0].task.definition)
        commands = importlib.import_module(command_module(args))
        command = "dry_run" if getattr(args, "dry_run", False) else args.command  # said, not done
        if getattr(commands, command)(*configs) is False:  # a check that found differences
            return 1
    except InputError as error:  # a full disk at a known write is one too (`tasks.files.DiskFull`)
        if args.debug:
            raise
        print(f"error: {clipped(str(error), MESSAGE_MAX)}", file=sys.stderr)
        return 2
    except Exception as error:  # a full disk where no `writing` names the folder: the file's folder, if said
        if args.debug or not is_disk_full(error):
            raise
        filename = getattr(error, "filename", None)
        folder = Path(filename).parent if filename else Path.cwd()
        print(f"error: {disk_full_message(folder, 'a file')}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as stop:
        for bar in list(tqdm._instances):  # bars cut short are drawn on close: before the hint, not after
            bar.close()
        print("interrupted: re-run the same command to resume (finished work is kept)", file=sys.stderr)
        return 128 + (signal.SIGTERM if isinstance(stop, Terminated) else signal.SIGINT)
    finally:
        signal.signal(signal.SIGTERM, previous)
    return 0


def command() -> NoReturn:
    """The `harness` executable and `python -m harness`: `main` with young collections less often
    (`collect_less_often`), then the process's exit without the collector's passes over the libraries'
    objects (`exit_uncollected`). `main` itself, called in a process that goes on (a test), leaves the
    collector as it was."""
    collect_less_often()
    exit_uncollected(main())
