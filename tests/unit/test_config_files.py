"""``--config FILE``: a command's settings from a JSON or YAML file, the command line's flags
winning; each run's own ``config.json`` reproduces its configuration; a bad file is one line."""

from __future__ import annotations

import json
import tracemalloc
from dataclasses import asdict
from pathlib import Path

import pytest

from harness.cli import build_parser, configs_from, main, subcommands
from harness.config_files import expanded, settings_file
from tasks.errors import InputError


def configured(*argv: str):
    parser = build_parser()
    return configs_from(parser.parse_args(expanded(list(argv), subcommands(parser))))


def test_a_file_sets_the_flags_and_the_command_line_wins(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text(
        "task: mrpc\n--model: minilm\nepochs: 2\nanalyses: [cosine, surface]\nquick: true\nmax_train_examples: 500\n"
    )
    (config,) = configured("run", "--config", str(path), "--epochs", "5")
    assert (config.task.task, config.task.model, config.finetune.max_train_examples) == ("mrpc", "minilm", 500)
    assert config.finetune.epochs == 5.0  # the flag typed after the file
    assert config.analysis.analyses == ["cosine", "surface"] and config.analysis.quick


def test_a_runs_written_settings_give_back_the_same_configuration_from_any_folder(tmp_path, monkeypatch):
    original = configured(
        "run",
        "--task",
        "rte",
        "--model",
        "minilm",
        "--epochs",
        "2",
        "--quick",
        "--analyses",
        "cosine",
        "--clustering-tokens",
        "3",
        "--output-dir",
        str(tmp_path),
    )[0]
    path = tmp_path / "config.json"
    written = settings_file(original)
    path.write_text(json.dumps(written))
    # relative paths (the default cache, a SQLite store) are written whole: the file means the same from any folder
    assert written["cache_dir"] == str(Path.cwd() / ".cache" / "checkpoints")
    assert written["tracking_uri"] in (f"sqlite:///{Path.cwd()}/mlruns/mlflow.db", original.environment.tracking_uri)
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    again = configured("run", "--config", str(path))[0]
    expected = asdict(original)
    expected["environment"] |= {"cache_dir": Path(written["cache_dir"]), "tracking_uri": written["tracking_uri"]}
    if original.task.data_dir is not None:  # $GLUE_DIR, relative in the README's commands, is written whole too
        assert Path(written["data_dir"]).is_absolute()
        expected["task"] |= {"data_dir": Path(written["data_dir"])}
    assert asdict(again) == expected


@pytest.mark.parametrize(
    ("name", "text", "says"),
    [
        ("bad.json", '{"task": ', "not valid JSON"),
        ("list.yaml", "- task\n", "must hold a mapping of settings to values, not list"),
        ("unknown.json", '{"tsk": "rte"}', "'tsk' is not a setting of `harness run`; `harness run --help` lists them"),
        ("settings.toml", "task = 'rte'", "must be a .json, .yaml or .yml file"),
        ("absent.json", None, "cannot be read (No such file or directory); check the path"),
    ],
)
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


def alias_bomb(levels: int) -> str:
    """A YAML file whose ``analyses`` nest ``levels`` aliases nine wide: a few hundred bytes that a
    YAML loader expands to 9 ** levels strings (4.8 million at 7)."""
    names = "abcdefghijklmnopqrstuvwxyz"[:levels]
    lines = ["task: rte", "analyses:", f"  - &{names[0]} [{', '.join(['x'] * 9)}]"]
    lines += [f"  - &{name} [{', '.join([f'*{below}'] * 9)}]" for below, name in zip(names, names[1:])]
    return "\n".join(lines) + "\n"


def test_a_yaml_alias_bomb_is_one_short_line_in_little_memory(tmp_path, capsys):
    path = tmp_path / "bomb.yaml"
    path.write_text(alias_bomb(7))
    tracemalloc.start()
    try:
        code = main(["run", "--config", str(path)])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and len(err[0]) < 1000
    assert err[0] == (
        f"error: --config {path}:3: YAML anchors and aliases (&name, *name) are not taken; write the values out"
    )
    assert peak < 5 * 2**20  # expanded, the aliases took 1.8 GB


@pytest.mark.parametrize(
    ("settings", "quoted"),
    [
        ({"x" * 100_000: 1}, "'xxxx"),
        ({"task": "rte", "model": {"name": "y" * 100_000}}, "'model' must be a value or a list of values, not {'name'"),
        ({"task": "rte", "analyses": [["cosine"] * 10_000]}, "'analyses' must be a value or a list of values"),
        # a model that can be had (the check of the model's source comes before the analyses')
        ({"task": "rte", "model": "minilm", "analyses": ["z" * 100_000]}, "--analyses: unknown analysis zzzz"),
    ],
    ids=["key", "mapping", "nested-list", "analysis-name"],
)
def test_an_overlong_value_is_quoted_in_a_few_hundred_characters(tmp_path, capsys, settings, quoted):
    path = tmp_path / "long.json"
    path.write_text(json.dumps(settings))
    assert (
        main(
            [
                "run",
                "--config",
                str(path),
                "--output-dir",
                str(tmp_path / "out"),
                "--cache-dir",
                str(tmp_path / "cache"),
                "--tracking-uri",
                f"sqlite:///{tmp_path}/mlflow.db",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and quoted in err[0] and "characters)" in err[0]
    assert len(err[0]) - len(str(path)) < 600
    assert not (tmp_path / "mlflow.db").exists()


def test_a_file_too_large_for_settings_is_one_line_unread(tmp_path, capsys):
    path = tmp_path / "huge.yaml"
    path.write_text("task: rte\n" + "# padding\n" * 40_000)
    assert main(["run", "--config", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"error: --config {path}: larger than 256 KiB; a settings file is a few lines of flag names and "
        "values, check that this is the right file"
    ]


@pytest.mark.parametrize(
    ("name", "content", "says"),
    [
        ("latin.yaml", "task: caf\xe9\n".encode("latin-1"), "not UTF-8 text (byte b'\\xe9' at offset 9)"),
        ("deep.json", b'{"task": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested more than 8 tables or lists deep"),
        ("anchor.yaml", b"task: &t rte\n", ":1: YAML anchors and aliases"),
    ],
    ids=["latin-1", "deep", "anchor"],
)
def test_a_file_that_is_no_settings_text_is_one_line(tmp_path, capsys, name, content, says):
    path = tmp_path / name
    path.write_bytes(content)
    assert main(["run", "--config", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: --config {path}") and says in err[0]


def test_a_message_that_quotes_a_value_whole_is_cut_by_the_cli(tmp_path, capsys):
    path = tmp_path / "task.json"
    path.write_text(json.dumps({"task": "t" * 100_000}))  # the task's own check quotes it whole
    assert main(["run", "--config", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: unknown task 'tttt")
    assert err[0].endswith(" characters)") and len(err[0]) < 2100  # 2,000 of the message, then its length
