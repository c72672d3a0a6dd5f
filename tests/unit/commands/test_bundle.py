"""``harness pack``'s parts that need no model: the target machine's markers, the requirements a
wheel has there, the wheels followed round by round through real pip from a local wheel folder
(offline: ``PIP_NO_INDEX``, ``PIP_FIND_LINKS``), and its flags' one-line errors."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest

from harness.cli import main
from harness.commands.bundle import (
    Target,
    excluded_versions,
    machine_of,
    requirements_of,
    resolve_wheels,
    write_wheel,
)
from tasks.errors import InputError
from tests.unit.wheel_helpers import local_wheels_only

LINUX = Target("3.12", ("manylinux2014_x86_64",))


@pytest.mark.parametrize(
    "tag, machine",
    [
        ("manylinux2014_x86_64", "x86_64"),
        ("manylinux_2_28_aarch64", "aarch64"),
        ("musllinux_1_2_x86_64", "x86_64"),
        ("linux_x86_64", "x86_64"),
        ("macosx_11_0_arm64", "arm64"),
        ("macosx_10_9_universal2", "arm64"),
        ("win_amd64", "AMD64"),
    ],
)
def test_the_machine_of_a_platform_tag_is_what_platform_machine_says_there(tag, machine):
    assert machine_of(tag) == machine


def test_requirements_apply_by_the_target_machines_markers_and_the_extras_asked(tmp_path):
    wheel = write_wheel(
        tmp_path,
        "toy",
        "1.0",
        requires=(
            "always>=1",
            'old-python; python_version < "3.12"',
            'windows-only; sys_platform == "win32"',
            'linux-x86; sys_platform == "linux" and platform_machine == "x86_64"',
            'gpu-extra; extra == "gpu"',
        ),
    )
    names = lambda extras: [requirement.name for requirement in requirements_of(wheel, extras, LINUX.markers())]  # noqa: E731
    assert names({""}) == ["always", "linux-x86"]
    assert names({"", "gpu"}) == ["always", "linux-x86", "gpu-extra"]
    on_windows = Target("3.11", ("win_amd64",)).markers()
    assert [requirement.name for requirement in requirements_of(wheel, {""}, on_windows)] == [
        "always",
        "old-python",
        "windows-only",
    ]


@pytest.fixture
def wheel_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A local wheel folder that pip reads instead of any index."""
    folder = tmp_path / "links"
    write_wheel(folder, "toy-helper", "1.0")
    write_wheel(folder, "toy-helper", "2.0")
    write_wheel(folder, "toy-gpu", "1.0", tag="py3-none-manylinux2014_x86_64")
    write_wheel(folder, "toy-windows", "1.0")
    write_wheel(folder, "toy-cuda", "1.0")
    write_wheel(folder, "torch", "2.5.1", requires=("toy-cuda",))  # as torch needs its CUDA libraries
    write_wheel(
        folder,
        "toy-extension",
        "0.3",
        requires=("toy-helper>=1,<2", "torch>=2", 'toy-windows; sys_platform == "win32"', 'toy-gpu; extra == "gpu"'),
    )
    for name, value in local_wheels_only(folder).items():
        monkeypatch.setenv(name, value)
    return folder


def test_pip_resolves_the_wheels_and_never_fetches_what_the_target_has(wheel_folder, tmp_path):
    """toy-helper, asked for alone, meets toy-extension's bound (1.0, not the newest); torch, which the
    target has, is offered as an empty stand-in, so neither its wheel nor toy-cuda, which only it
    needs, is fetched; toy-windows is not needed on Linux; the gpu extra brings its platform wheel."""
    wheels = resolve_wheels(["toy-helper", "toy-extension[gpu]"], {"torch": "2.5.1"}, LINUX, tmp_path / "wheels")
    assert [wheel.name for wheel in wheels] == [
        "toy_extension-0.3-py3-none-any.whl",
        "toy_gpu-1.0-py3-none-manylinux2014_x86_64.whl",
        "toy_helper-1.0-py3-none-any.whl",
    ]
    assert sorted(path.name for path in (tmp_path / "wheels").iterdir()) == [wheel.name for wheel in wheels]


def test_a_requirement_only_the_target_has_is_fetched_in_a_second_round(wheel_folder, tmp_path, capsys):
    """pip evaluates markers where it runs (Linux); toy-windows applies on the Windows target, so the
    wheels are read with the target's markers and it is fetched next, the rest pinned."""
    wheels = resolve_wheels(["toy-extension"], {"torch": "2.5.1"}, Target("3.12", ("win_amd64",)), tmp_path / "w")
    assert [wheel.name for wheel in wheels] == [
        "toy_extension-0.3-py3-none-any.whl",
        "toy_helper-1.0-py3-none-any.whl",
        "toy_windows-1.0-py3-none-any.whl",
    ]
    assert capsys.readouterr().err.count("wheels, round") == 2


def test_a_requirement_no_wheel_meets_is_one_line_with_pips_reason(wheel_folder, tmp_path):
    with pytest.raises(InputError) as raised:
        resolve_wheels(["toy-extension", "toy-helper>=2"], {"torch": "2.5.1"}, LINUX, tmp_path / "wheels")
    message = str(raised.value)
    assert message.startswith("pack: pip could not get toy-extension, toy-helper>=2 (ERROR: Cannot install ")
    assert "toy-extension==0.3 and toy-helper>=2 because these package versions have conflicting" in message
    assert "\n" not in message and "--exclude NAME==VERSION" in message


def test_what_the_target_has_is_at_the_version_given_else_the_one_installed_here():
    assert excluded_versions(["torch==2.5.1", "Markdown_It_Py"]) == {
        "torch": "2.5.1",
        "markdown-it-py": importlib.metadata.version("markdown-it-py"),
    }
    with pytest.raises(InputError, match=r"^--exclude toy-absent: not installed here; name the target's version"):
        excluded_versions(["toy-absent"])


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--python", "2.7"], "--python 2.7: must be a Python version as 3.12, 3.11 or later"),
        (["--platform", "x86_64"], "--platform x86_64: must be a wheel platform tag"),
        (["--part-size", "100K"], "--part-size 100K: must be at least 1M"),
        (["--part-size", "lots"], "--part-size lots: must be at least 1M"),
        (["--corpora", "none", "litbank"], "--corpora none: give it alone"),
        (["--tasks", "rte"], "--tasks rte: need --data-dir or $GLUE_DIR"),
    ],
)
def test_bad_pack_flags_are_one_line_before_any_work(flags, message, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("GLUE_DIR", raising=False)
    argv = ["pack", str(tmp_path / "out"), "--python", "3.12", "--platform", "manylinux2014_x86_64", *flags]
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert len(error.strip().splitlines()) == 1 and message in error
    assert not (tmp_path / "out").exists()
