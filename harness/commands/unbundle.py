"""Unpack a bundle of `harness pack` where there is no pip and no network: check every part against
the manifest, extract the bundle, unzip its wheels into a site folder and write the environment
that runs the harness from it.

The module uses the standard library only, so it runs before anything is installed: ``harness
pack`` copies it beside the parts as ``unpack.py`` (``python3 unpack.py --into DIR``); where the
harness is installed, ``harness unpack PARTS --into DIR`` runs the same code. A part that is
missing, of another size or another SHA-256 than the manifest says stops it in one line naming the
part, before anything is written.

What lands in ``DIR``: ``site/`` (every wheel unzipped, as pip would install it: a wheel is a zip
of its packages; torch is the target's own), ``models/`` (a model folder) or ``hf-cache/`` (a hub
model in the Hugging Face cache's layout), ``data/`` (the pinned corpora, the data cache),
``glue/`` (the GLUE tasks' TSV files), and ``env.sh``, which points Python, the hub, the data
cache and GLUE there and turns the hub's network access off.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shlex
import shutil
import sys
import tarfile
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO, NotRequired, TypedDict

MANIFEST = "manifest.json"  # beside the parts: the bundle's parts with their sizes and SHA-256, and what it holds
SCRIPT = "unpack.py"  # this module, copied beside the parts
ENVIRONMENT = "env.sh"
SITE, WHEELS, MODELS, HUB_CACHE, DATA, GLUE = "site", "wheels", "models", "hf-cache", "data", "glue"
FORMAT = 1  # the manifest's layout; a bundle of another format is refused, not misread
CHUNK = 1 << 20
WHEEL_LIBRARIES = ("purelib", "platlib")  # the parts of a wheel's <name>.data that are importable code


class PartRecord(TypedDict):
    """One part as the manifest lists it."""

    name: str
    size: int  # bytes
    sha256: str


class PackedModel(TypedDict):
    """The model a bundle holds: ``argument`` is what ``--model`` takes there."""

    argument: str
    kind: str  # "bundled" (a package), "folder" (under models/) or "hub" (in hf-cache/)
    revision: NotRequired[str]  # a hub model's snapshot


class Contents(TypedDict, total=False):
    """What a bundle holds, in its manifest (each key only when packed)."""

    model: PackedModel
    tasks: list[str]
    corpora: list[str]
    wheels: list[str]
    excluded: dict[str, str]  # the packages left out (the target's own), by name: their versions


# The manifest as read from manifest.json: open, since it is JSON from a file, of which `read_manifest`
# checks the format and that parts are listed (its keys: format, python, platforms, size, parts, contents).
Manifest = dict[str, Any]


class DamagedBundle(Exception):
    """A part missing or damaged, or a manifest that is not one: the message is the one line to print."""


def manifest_path(paths: Iterable[Path | str]) -> Path:
    """The manifest of the parts given: the manifest itself, the folder that holds it, or parts beside it."""
    given = [Path(path) for path in paths]
    if not given:
        raise DamagedBundle("no parts given; name the folder the parts are in, or its manifest.json")
    for path in given:
        candidate = path / MANIFEST if path.is_dir() else path if path.name == MANIFEST else path.parent / MANIFEST
        if candidate.is_file():
            return candidate
    raise DamagedBundle(
        f"{given[0]}: no {MANIFEST} there or beside it; copy the bundle's {MANIFEST} with its parts (it lists them)"
    )


def read_manifest(path: Path) -> Manifest:
    """The manifest at ``path``, checked to be one of this format."""
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise DamagedBundle(f"{path}: not a readable manifest ({error}); copy it again") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT or not manifest.get("parts"):
        raise DamagedBundle(f"{path}: not a manifest of `harness pack` (format {FORMAT}); copy it again")
    return manifest


def sha256_of(path: Path) -> str:
    """The SHA-256 of the file at ``path``, hex."""
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def checked_parts(manifest_file: Path, manifest: Manifest) -> list[Path]:
    """Every part the manifest lists, beside it, each checked by size and SHA-256; the first that is
    missing or damaged is `DamagedBundle` naming it."""
    parts = manifest["parts"]
    paths = []
    for number, part in enumerate(parts, start=1):
        path = manifest_file.parent / part["name"]
        where = f"{path} (part {number} of {len(parts)})"
        if not path.is_file():
            raise DamagedBundle(f"{where} is missing; copy it beside {MANIFEST}")
        size = path.stat().st_size
        if size != part["size"]:
            raise DamagedBundle(f"{where} is damaged: {size:,} bytes, not {part['size']:,}; copy it again")
        digest = sha256_of(path)
        if digest != part["sha256"]:
            raise DamagedBundle(
                f"{where} is damaged: SHA-256 {digest[:12]}..., not {part['sha256'][:12]}...; copy it again"
            )
        paths.append(path)
    return paths


class Joined:
    """The parts read one after the other as one stream (what `tarfile` reads the bundle from)."""

    def __init__(self, paths: list[Path]) -> None:
        self.paths = iter(paths)
        self.current: BinaryIO | None = None

    def read(self, size: int = -1) -> bytes:
        chunks = []
        while size != 0:
            if self.current is None:
                path = next(self.paths, None)
                if path is None:
                    break
                self.current = path.open("rb")
            chunk = self.current.read(size if size > 0 else CHUNK)
            if not chunk:
                self.current.close()
                self.current = None
                continue
            chunks.append(chunk)
            size -= len(chunk) if size > 0 else 0
        return b"".join(chunks)


def safe_relative(name: str, where: str) -> PurePosixPath:
    """``name`` as a relative path that stays inside the folder it is extracted to."""
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise DamagedBundle(f"{where}: member {name!r} would be written outside the folder; pack the bundle again")
    return path


def extract(parts: list[Path], into: Path) -> None:
    """The bundle's files, from its parts in order, into ``into``: regular files and folders only."""
    with tarfile.open(fileobj=Joined(parts), mode="r|") as bundle:  # type: ignore[call-overload]
        for member in bundle:
            target = into / safe_relative(member.name, str(parts[0]))
            if member.isdir():
                target.mkdir(parents=True, exist_ok=True)
            elif member.isfile():
                target.parent.mkdir(parents=True, exist_ok=True)
                source = bundle.extractfile(member)
                with target.open("wb") as written:
                    shutil.copyfileobj(source, written, CHUNK)
            else:
                raise DamagedBundle(f"{parts[0]}: member {member.name!r} is not a file; pack the bundle again")


def wheel_target(name: str, wheel: Path) -> PurePosixPath | None:
    """Where a wheel's member goes in the site folder: its packages and dist-info as they are, the
    importable parts of ``<name>.data`` (purelib, platlib) at the top; None for the rest (scripts,
    headers, data files: the harness runs as ``python -m harness``)."""
    path = safe_relative(name, str(wheel))
    if path.parts[0].endswith(".data"):
        if len(path.parts) > 2 and path.parts[1] in WHEEL_LIBRARIES:
            return PurePosixPath(*path.parts[2:])
        return None
    return path


def install_wheel(wheel: Path, site: Path) -> None:
    """``wheel`` unzipped into ``site``, as an installer lays it out (file modes kept)."""
    with zipfile.ZipFile(wheel) as archive:
        for info in archive.infolist():
            relative = None if info.is_dir() else wheel_target(info.filename, wheel)
            if relative is None:
                continue
            target = site / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(info) as source, target.open("wb") as written:
                shutil.copyfileobj(source, written, CHUNK)
            mode = (info.external_attr >> 16) & 0o777
            if mode:
                target.chmod(mode | 0o600)


def environment(into: Path, manifest: Manifest) -> dict[str, str]:
    """The variables a run from ``into`` needs: the site folder first on Python's path, the hub
    offline (and its cache there, for a hub model), the data cache and GLUE folder there."""
    contents = manifest.get("contents", {})
    model = contents.get("model") or {}
    variables = {
        "PYTHONPATH": str(into / SITE),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HARNESS_DATA": str(into / DATA),
    }
    if model.get("kind") == "hub":
        variables["HF_HUB_CACHE"] = str(into / HUB_CACHE)
    if contents.get("tasks"):
        variables["GLUE_DIR"] = str(into / GLUE)
    return variables


def write_environment(folder: Path, variables: dict[str, str]) -> Path:
    """``folder/env.sh``: the variables exported (PYTHONPATH in front of any the shell has)."""
    lines = ["# source this file: the harness and its packages from this folder, offline (written by unpack)"]
    for name, value in variables.items():
        quoted = shlex.quote(value)
        lines.append(
            f'export PYTHONPATH={quoted}"${{PYTHONPATH:+:$PYTHONPATH}}"'
            if name == "PYTHONPATH"
            else f"export {name}={quoted}"
        )
    path = folder / ENVIRONMENT
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run_command(into: Path, manifest: Manifest) -> str:
    """The command that runs the packed model on the first packed task (TASK: none was packed) from ``into``."""
    contents = manifest.get("contents", {})
    model = contents.get("model")
    flags = ["--task", (contents.get("tasks") or ["TASK"])[0]]
    if model:
        flags += ["--model", str(into / model["argument"]) if model["kind"] == "folder" else model["argument"]]
    return f"source {shlex.quote(str(into / ENVIRONMENT))} && python3 -m harness run {shlex.join(flags)}"


def unpack(paths: Iterable[Path | str], into: Path | str) -> list[str]:
    """Check the parts, extract them into ``into`` (absent or empty), install the wheels into its
    site folder and write its ``env.sh``; the lines to print: what was unpacked and how to run."""
    into = Path(into).expanduser().absolute()
    manifest_file = manifest_path(paths)
    manifest = read_manifest(manifest_file)
    parts = checked_parts(manifest_file, manifest)
    if into.exists() and (not into.is_dir() or any(into.iterdir())):
        raise DamagedBundle(f"--into {into}: not an empty folder; unpack into a new folder")
    unpacking = into.with_name(f".{into.name}.unpacking")  # renamed to ``into`` when whole: no half unpacked folder
    shutil.rmtree(unpacking, ignore_errors=True)
    unpacking.mkdir(parents=True)
    try:
        extract(parts, unpacking)
        wheels = sorted((unpacking / WHEELS).glob("*.whl"))
        for wheel in wheels:
            install_wheel(wheel, unpacking / SITE)
        shutil.rmtree(unpacking / WHEELS, ignore_errors=True)  # installed; the parts still hold them
        write_environment(unpacking, environment(into, manifest))
        if into.exists():
            into.rmdir()
        unpacking.rename(into)
    finally:
        shutil.rmtree(unpacking, ignore_errors=True)
    lines = [
        f"unpacked {len(parts)} parts ({manifest['size'] / 1e6:,.1f} MB, each checked) into {into}: "
        f"{len(wheels)} wheels into {into / SITE}" + "".join(f", {line}" for line in contents_said(manifest)),
    ]
    python = manifest.get("python")
    if python and python != f"{sys.version_info.major}.{sys.version_info.minor}":
        lines.append(f"note: the wheels are for Python {python}; run the harness with that Python")
    lines += ["run from it (no pip, no network):", f"  {run_command(into, manifest)}"]
    return lines


def contents_said(manifest: Manifest) -> Iterator[str]:
    """The model, tasks and corpora of the bundle, in words."""
    contents = manifest.get("contents", {})
    if contents.get("model"):
        yield f"model {contents['model']['argument']}"
    if contents.get("tasks"):
        yield f"tasks {', '.join(contents['tasks'])}"
    if contents.get("corpora"):
        yield f"corpora {', '.join(contents['corpora'])}"


def main(argv: list[str] | None = None) -> int:
    """``python3 unpack.py [PARTS ...] --into DIR``: the parts default to this script's folder."""
    parser = argparse.ArgumentParser(prog=SCRIPT, description=__doc__.splitlines()[0])
    parser.add_argument("parts", nargs="*", help="the parts, their folder or their manifest (default: this folder)")
    parser.add_argument("--into", required=True, help="the folder to unpack into (absent or empty)")
    args = parser.parse_args(argv)
    try:
        for line in unpack(args.parts or [Path(__file__).resolve().parent], args.into):
            print(line)
    except DamagedBundle as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
