"""The README's two fresh-machine commands are the ones CI and users actually run."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    first_block = re.search(r"```(?:bash|sh)?\n(.*?)```", text, re.S).group(1)
    return [line for line in first_block.splitlines() if line.strip() and not line.startswith("#")]


def test_readme_opens_with_exactly_two_commands():
    run, test = readme_commands()
    assert "torch==2.13.0" in run and "-m harness run --task rte --model minilm" in run
    assert "-m pytest" in test


def test_ci_runs_the_readme_test_command_verbatim():
    _, test = readme_commands()
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert test in ci_lines
