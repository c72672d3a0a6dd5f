"""A bundle's parts, as `harness pack` writes them, checked and unpacked by ``harness unpack``: cut
at the size given, every file back byte for byte, wheels unzipped as an installer lays them out,
and a missing, cut or altered part one line naming it, with nothing unpacked."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from harness.cli import main
from harness.commands.bundle import Bundle, write_bundle, write_wheel
from harness.commands.unbundle import MANIFEST, SCRIPT

MIB = 1 << 20


@pytest.fixture
def packed(tmp_path: Path) -> tuple[Path, dict[str, bytes]]:
    """A bundle of a model's weights (2.5 MiB), a GLUE file and a wheel with a script and a
    ``.data/purelib`` module, in parts of 1 MiB: its folder and the bundle's files."""
    sources = tmp_path / "sources"
    files = {
        "models/tiny/model.safetensors": os.urandom(5 * MIB // 2),
        "models/tiny/config.json": b'{"model_type": "bert"}',
        "glue/RTE/dev.tsv": b"index\tsentence1\tsentence2\tlabel\n0\ta\tb\tentailment\n",
    }
    wheel = write_wheel(
        sources / "wheels",
        "toy-helper",
        "1.0",
        files={
            "toy_helper/__init__.py": b"",
            "toy_helper.data/purelib/toy_extra.py": b"EXTRA = 1\n",
            "toy_helper.data/scripts/toy": b"#!/bin/sh\n",
        },
    )
    files[f"wheels/{wheel.name}"] = wheel.read_bytes()
    bundle = Bundle(contents={"model": {"argument": "models/tiny", "kind": "folder"}, "tasks": ["rte"]})
    for name, data in files.items():
        path = sources / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        bundle.files.append((path, name))
    out = tmp_path / "bundle"
    out.mkdir()
    write_bundle(bundle, out, MIB, python="3.11", platforms=["manylinux2014_x86_64"])
    return out, files


def unpack(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    code = main(["unpack", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_parts_are_cut_at_the_size_given_and_every_file_comes_back(packed, tmp_path, capsys):
    out, files = packed
    manifest = json.loads((out / MANIFEST).read_text())
    sizes = [part["size"] for part in manifest["parts"]]
    assert len(sizes) == -(-manifest["size"] // MIB) >= 3 and set(sizes[:-1]) == {MIB} and 0 < sizes[-1] <= MIB
    names = [MANIFEST, SCRIPT, *(part["name"] for part in manifest["parts"])]
    assert sorted(path.name for path in out.iterdir()) == sorted(names)

    into = tmp_path / "unpacked"
    code, said, _ = unpack(capsys, str(out), "--into", str(into))
    assert code == 0
    for name, data in files.items():
        if not name.startswith("wheels/"):
            assert (into / name).read_bytes() == data, name
    # the wheel as an installer lays it out: its package and dist-info, .data/purelib at the top, no script
    site = into / "site"
    assert (site / "toy_extra.py").read_text() == "EXTRA = 1\n" and (site / "toy_helper" / "__init__.py").is_file()
    assert (site / "toy_helper-1.0.dist-info" / "METADATA").is_file()
    assert not (site / "toy_helper.data").exists() and not (into / "wheels").exists()
    environment = (into / "env.sh").read_text()
    assert f'export PYTHONPATH={site}"${{PYTHONPATH:+:$PYTHONPATH}}"' in environment
    assert f"export GLUE_DIR={into / 'glue'}" in environment and "export HF_HUB_OFFLINE=1" in environment
    assert "HF_HUB_CACHE" not in environment  # a model folder, not a hub id
    assert said.splitlines()[-1] == (
        f"  source {into / 'env.sh'} && python3 -m harness run --task rte --model {into / 'models' / 'tiny'}"
    )


@pytest.mark.parametrize(
    "damage, message",
    [
        ("missing", "harness-bundle.tar.002 (part 2 of 3) is missing; copy it beside manifest.json"),
        ("cut", "harness-bundle.tar.002 (part 2 of 3) is damaged: 1,048,575 bytes, not 1,048,576; copy it again"),
        ("altered", "harness-bundle.tar.002 (part 2 of 3) is damaged: SHA-256 "),
    ],
)
def test_a_missing_or_damaged_part_is_one_line_naming_it_and_nothing_is_unpacked(
    packed, tmp_path, capsys, damage, message
):
    out, _ = packed
    part = out / "harness-bundle.tar.002"
    if damage == "missing":
        part.unlink()
    elif damage == "cut":
        part.write_bytes(part.read_bytes()[:-1])
    else:
        data = bytearray(part.read_bytes())
        data[MIB // 2] ^= 1
        part.write_bytes(bytes(data))
    into = tmp_path / "unpacked"
    code, _, error = unpack(capsys, str(out / MANIFEST), "--into", str(into))
    assert code == 2 and len(error.strip().splitlines()) == 1 and message in error
    assert not into.exists()


def test_parts_named_one_by_one_find_their_manifest_and_a_used_folder_is_refused(packed, tmp_path, capsys):
    out, _ = packed
    used = tmp_path / "used"
    (used / "site").mkdir(parents=True)
    code, _, error = unpack(capsys, *map(str, sorted(out.glob("harness-bundle.tar.*"))), "--into", str(used))
    assert code == 2 and f"--into {used}: not an empty folder; unpack into a new folder" in error
    stray = tmp_path / "stray.tar.001"
    stray.write_bytes(b"")
    code, _, error = unpack(capsys, str(stray), "--into", str(tmp_path / "new"))
    assert code == 2 and f"{stray}: no manifest.json there or beside it" in error


def test_a_member_that_would_land_outside_the_folder_is_refused(tmp_path, capsys):
    out = tmp_path / "bundle"
    out.mkdir()
    write_bundle(Bundle(written={"../outside.txt": b"x"}), out, MIB)
    code, _, error = unpack(capsys, str(out), "--into", str(tmp_path / "unpacked" / "here"))
    assert code == 2 and "member '../outside.txt' would be written outside the folder" in error
    assert not (tmp_path / "unpacked" / "outside.txt").exists() and not (tmp_path / "unpacked" / "here").exists()
