"""``--config FILE``: a command's settings from a JSON or YAML file, the command line's flags
winning; each run's own ``config.json`` reproduces its configuration; a bad file is one line."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from harness.cli import build_parser, configs_from, main, subcommands
from harness.config_files import expanded, settings_file
from tasks.errors import InputError


def configured(*argv: str):
    parser = build_parser()
    return configs_from(parser.parse_args(expanded(list(argv), subcommands(parser))))


def test_a_file_sets_the_flags_and_the_command_line_wins(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("task: mrpc\n--model: minilm\nepochs: 2\nanalyses: [cosine, surface]\nquick: true\n"
                    "max_train_examples: 500\n")
    (config,) = configured("run", "--config", str(path), "--epochs", "5")
    assert (config.task.task, config.task.model, config.finetune.max_train_examples) == ("mrpc", "minilm", 500)
    assert config.finetune.epochs == 5.0  # the flag typed after the file
    assert config.analysis.analyses == ["cosine", "surface"] and config.analysis.quick


def test_a_runs_written_settings_give_back_the_same_configuration(tmp_path):
    (original,) = configured("run", "--task", "rte", "--model", "minilm", "--epochs", "2", "--quick",
                             "--analyses", "cosine", "--clustering-tokens", "3", "--output-dir", str(tmp_path))
    path = tmp_path / "config.json"
    path.write_text(json.dumps(settings_file(original)))
    (again,) = configured("run", "--config", str(path))
    assert asdict(again) == asdict(original)


@pytest.mark.parametrize(("name", "text", "says"), [
    ("bad.json", "{\"task\": ", "not valid JSON"),
    ("list.yaml", "- task\n", "must hold a mapping of settings to values, not list"),
    ("unknown.json", "{\"tsk\": \"rte\"}", "'tsk' is not a setting of `harness run`; `harness run --help` lists them"),
    ("settings.toml", "task = 'rte'", "must be a .json, .yaml or .yml file"),
    ("absent.json", None, "cannot be read (No such file or directory); check the path")])
def test_a_bad_file_is_one_line_naming_it(tmp_path, capsys, name, text, says):
    path = tmp_path / name
    if text is not None:
        path.write_text(text)
    assert main(["run", "--config", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: --config {path}: ") and says in err[0]


def test_the_flag_is_in_each_subcommands_help():
    assert all("--config" in parser.format_help() for parser in subcommands(build_parser()).values())


def test_expanding_leaves_a_command_line_without_a_file_alone():
    argv = ["run", "--task", "rte", "--config-like", "x"]
    assert expanded(argv, subcommands(build_parser())) == argv
    with pytest.raises(InputError, match="--config needs a file"):
        expanded(["run", "--config"], subcommands(build_parser()))
