"""Installed as users install it: the wheel, not the checkout.

The wheel and the sdist are built (`python -m build --no-isolation`: the sdist, then the wheel
from the unpacked sdist, so the wheel also proves the sdist is complete) from a copy of the
checkout's packages and top-level files, and checked to hold every file of the packages (the
classifier's weights, its stored cross-validation and labelled maps, the report's script, style
and templates, the pinned corpora's manifest). The wheel is then installed, not editable, into a
fresh virtual environment inside a user's project (a git checkout of its own), and from there,
with the checkout nowhere on the path, ``harness run --task rte --model minilm`` at tiny sizes
with ``GLUE_DIR`` set downloads the default corpora (from a real HTTP server on 127.0.0.1 laid
out like raw.githubusercontent.com, into ``$HARNESS_DATA``), fine-tunes, analyses and draws;
``harness figures`` redraws the run and ``harness report`` writes the page, all under the
project folder. The sdist installs into another fresh environment with the same files and
``harness --help`` works from it.

What the fresh environments share, and why: they are made with the interpreter the suite's
environment was made from (`python -m venv --without-pip`), and one ``.pth`` file in each adds
a folder of links to the suite environment's site-packages entries: the third-party
dependencies (torch, transformers, mlflow, the bundled MiniLM, pip and setuptools), so nothing
is downloaded or reinstalled. The links leave out everything of this project there: its
packages, its dist-info, the editable install's finder and every ``.pth`` file (the editable
finder is installed by one, and a ``.pth`` in a folder that a ``.pth`` adds is not run anyway),
so ``harness``, ``tasks`` and ``classifier`` can only come from the installed wheel or sdist,
which the test asserts. The package itself is installed with ``--no-deps
--no-build-isolation``: its dependencies are those shared ones.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

from tasks.corpora import CORPORA
from tests.fixtures import GLUE_DIR, SHARED_DATA, mirror_shared_corpora

CHECKOUT = Path(__file__).resolve().parents[2]
PACKAGES = ("harness", "tasks", "classifier")
DISTRIBUTION = "attention-shift-harness"
# What the package reads from its own folders (`Path(__file__)` in harness/, tasks/, classifier/),
# named so that the comparison with the checkout below cannot pass on an empty list.
READ_FROM_THE_PACKAGE = {
    "classifier/weights.pt",
    "classifier/crossval.json",
    "classifier/data/labels.tsv",
    "classifier/data/maps.npz",
    "classifier/data/second_pass.txt",
    "harness/present/report.js",
    "harness/present/report.css",
    "harness/present/templates/page.html",
    "tasks/corpora.json",
}
BASE_PYTHON = getattr(sys, "_base_executable", sys.executable)  # the interpreter the suite's venv was made from
# Unset for the installed commands: nothing points Python at the checkout, the defaults are the user's.
UNSET = {
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONSTARTUP",
    "VIRTUAL_ENV",
    "HF_HUB_OFFLINE",
    "TRANSFORMERS_OFFLINE",
    "MLFLOW_TRACKING_URI",
    "HARNESS_DATA",
    "HARNESS_DATA_MIRROR",
    "GLUE_DIR",
}
TINY_RUN = (
    "--no-figures",  # `harness figures` draws them below
    "--max-train-examples",
    "16",
    "--epochs",
    "1",
    "--quick",
    "--max-dev-examples",
    "16",
    "--max-corpus-items",
    "6",
    "--probe-train-sentences",
    "16",
    "--max-eval-examples",
    "8",
    "--max-length",
    "64",
)
# What `harness figures` redraws from the installed package: a head grid and the pattern panels,
# as PNG and, as a paper's figures are made, PDF (the fonts and styles it reads); the pipeline's
# tests draw every figure.
REDRAWN = ("--analyses", "cosine", "patterns", "--vector-formats", "pdf")
LOCATE = (
    "import importlib.metadata, json, sys, sysconfig, harness, tasks, classifier; print(json.dumps({"
    "'site': sysconfig.get_paths()['purelib'], 'prefix': sys.prefix, 'path': sys.path, "
    "'modules': [harness.__file__, tasks.__file__, classifier.__file__], "
    f"'metadata': str(importlib.metadata.distribution('{DISTRIBUTION}').locate_file('harness/cli.py'))}}))"
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not (GLUE_DIR / "RTE").is_dir(), reason=f"real GLUE RTE not found at {GLUE_DIR}"),
    pytest.mark.skipif(
        not all((SHARED_DATA / corpus.shared).is_dir() for corpus in CORPORA.values()),
        reason=f"the default corpora to serve are not in {SHARED_DATA}",
    ),
]


def run(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``command`` run to its end in ``cwd``; a failure shows its output."""
    completed = subprocess.run(command, check=False, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, f"{command}: exit {completed.returncode}\n{completed.stdout}\n{completed.stderr}"
    assert "Traceback" not in completed.stderr, completed.stderr
    return completed


def package_files(root: Path) -> set[str]:
    """Every file of the packages under ``root`` (bytecode aside), relative to ``root``."""
    return {
        path.relative_to(root).as_posix()
        for package in PACKAGES
        for path in (root / package).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }


def in_packages(names: set[str]) -> set[str]:
    """The names of files inside the packages among an archive's ``names``."""
    return {name for name in names if name.split("/")[0] in PACKAGES and not name.endswith("/")}


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The sdist and the wheel built from a copy of the checkout (packages and top-level files),
    so the build writes nothing into the checkout: ``{"sdist": ..., "wheel": ...}`` (``build``
    comes with the dev extra)."""
    root = tmp_path_factory.mktemp("build")
    source = root / "source"
    for package in PACKAGES:
        shutil.copytree(CHECKOUT / package, source / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for path in CHECKOUT.iterdir():
        if path.is_file():
            shutil.copy2(path, source / path.name)
    run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(root / "dist"), str(source)], root)
    (sdist,), (wheel,) = (root / "dist").glob("*.tar.gz"), (root / "dist").glob("*.whl")
    return {"sdist": sdist, "wheel": wheel}


@pytest.fixture(scope="module")
def shared_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of links to the suite environment's site-packages entries, this project's left out."""
    folder = tmp_path_factory.mktemp("shared-site")
    paths = sysconfig.get_paths()
    for site in dict.fromkeys([paths["purelib"], paths["platlib"]]):
        for entry in Path(site).iterdir():
            ours = entry.name in PACKAGES or entry.name.startswith(("__editable__", "attention_shift_harness"))
            shared = not ours and entry.suffix != ".pth" and entry.name != "__pycache__"
            if shared and not (folder / entry.name).exists():
                (folder / entry.name).symlink_to(entry)
    return folder


def fresh_venv(folder: Path, shared_site: Path) -> Path:
    """A new virtual environment in ``folder`` that sees ``shared_site``; its python."""
    run([BASE_PYTHON, "-m", "venv", "--without-pip", str(folder)], folder.parent)
    python = folder / "bin" / "python"
    site = run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], folder).stdout
    (Path(site.strip()) / "shared-dependencies.pth").write_text(f"{shared_site}\n")
    return python


def user_env(venv: Path, **variables: str) -> dict[str, str]:
    """This process's environment as a user's shell with ``venv`` activated, plus ``variables``."""
    env = {key: value for key, value in os.environ.items() if key not in UNSET}
    env.update(VIRTUAL_ENV=str(venv), PATH=f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}", **variables)
    return env


def install(python: Path, artifact: Path, env: dict[str, str]) -> Path:
    """``artifact`` (a wheel or an sdist) installed into ``python``'s environment, not editable;
    returns that environment's site-packages, checked to be where the packages import from."""
    run(
        [str(python), "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index", str(artifact)],
        artifact.parent,
        env,
    )
    found = json.loads(run([str(python), "-c", LOCATE], python.parents[2], env).stdout)
    site = Path(found["site"]).resolve()
    assert Path(found["prefix"]).resolve() == python.parents[1].resolve()
    for module in [*found["modules"], found["metadata"]]:
        assert Path(module).resolve().is_relative_to(site), f"{module} is not in the fresh environment {site}"
    assert not any(entry and Path(entry).resolve() == CHECKOUT for entry in found["path"])
    return site


def git_checkout(folder: Path) -> None:
    """``folder`` as a git checkout with one commit: a user's project."""
    folder.mkdir()
    identity = ["-c", "user.name=user", "-c", "user.email=user@example.org", "-c", "init.defaultBranch=main"]
    run(["git", *identity, "init", "-q"], folder)
    run(["git", *identity, "commit", "-q", "--allow-empty", "-m", "a user's project"], folder)


def test_the_wheel_and_the_sdist_hold_every_file_of_the_packages_and_nothing_else(dist):
    expected = package_files(CHECKOUT)
    assert READ_FROM_THE_PACKAGE <= expected
    wheel_names = set(zipfile.ZipFile(dist["wheel"]).namelist())
    assert expected - wheel_names == set(), "not in the wheel: fix [tool.setuptools.package-data] in pyproject.toml"
    (metadata,) = {name.split("/")[0] for name in wheel_names} - set(PACKAGES)  # and nothing else: no tests, no docs
    assert metadata.endswith(".dist-info")
    with tarfile.open(dist["sdist"]) as sdist:
        sdist_names = {member.name.split("/", 1)[1] for member in sdist.getmembers() if "/" in member.name}
    assert expected - sdist_names == set(), "not in the sdist"


def test_the_installed_wheel_runs_redraws_and_reports_from_a_users_project(dist, shared_site, mirror, tmp_path):
    server, served, host = mirror
    mirror_shared_corpora(served)
    project = tmp_path / "project"  # unrelated to the checkout, no ../shared beside it, its own git history
    git_checkout(project)
    python = fresh_venv(project / ".venv", shared_site)
    cache = tmp_path / "data-cache"
    env = user_env(
        project / ".venv", GLUE_DIR=str(GLUE_DIR.resolve()), HARNESS_DATA=str(cache), HARNESS_DATA_MIRROR=host
    )  # GLUE_DIR made absolute: the harness runs from another folder
    site = install(python, dist["wheel"], env)
    harness = str(project / ".venv" / "bin" / "harness")

    listed = run([harness, "data", "list"], project, env).stdout  # an installed package has no ../shared/data
    assert listed.count("absent; `harness data download") == len(CORPORA) and "shared" not in listed.split("lookup")[0]

    ran = run([harness, "run", "--task", "rte", "--model", "minilm", *TINY_RUN], project, env)
    assert "downloading LitBank" in ran.stderr and "downloading UD English EWT" in ran.stderr and server.requests
    assert {corpus.folder_name for corpus in CORPORA.values()} <= {path.name for path in cache.iterdir()}
    (done,) = [line for line in ran.stdout.splitlines() if line.startswith("done: ")]
    summary_path = project / done.removeprefix("done: ")
    run_folder = summary_path.parent
    assert run_folder.parent == project / "outputs" and summary_path.is_file()
    summary = json.loads(summary_path.read_text())
    assert summary["run"]["skipped"] == {}
    assert {"patterns", "syntax", "probes", "coreference", "examples"} <= set(summary["analyses"])
    # the classifier's stored cross-validation, read from the installed package, corrects the pattern shares
    assert summary["analyses"]["patterns"]["settings"]["cross_validation"] is not None
    assert (project / ".cache" / "checkpoints").is_dir()
    with sqlite3.connect(project / "mlruns" / "mlflow.db") as database:
        code = dict(
            database.execute(
                "SELECT key, value FROM tags WHERE key IN ('harness.version', 'harness.git_commit')"
            ).fetchall()
        )
    # tags (what identifies the code), and not the commit of the user's project that holds the environment
    assert code == {"harness.version": "0.1.0", "harness.git_commit": "unknown"}

    (said,) = run(
        [harness, "figures", str(run_folder.relative_to(project)), *REDRAWN], project, env
    ).stdout.splitlines()
    drawn = list((run_folder / "figures").glob("*.png"))
    assert drawn and said.startswith(f"redrew {len(drawn)} figures (PNG and PDF) and ")
    assert {path.with_suffix(".pdf") for path in drawn} <= set((run_folder / "figures").glob("*.pdf"))
    assert said.endswith(str((run_folder / "figures").relative_to(project)))

    reported = run([harness, "report"], project, env).stdout
    page = project / "outputs" / "report" / "index.html"
    assert reported.startswith("report: outputs/report/index.html") and page.is_file()
    assert any((page.parent / "figures").rglob("*.png"))
    text = page.read_text()
    for asset in ("report.js", "report.css"):  # inlined from the installed package
        assert (site / "harness" / "present" / asset).read_text().strip() in text


def test_the_sdist_installs_the_same_files_and_the_command(dist, shared_site, tmp_path):
    python = fresh_venv(tmp_path / "venv", shared_site)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = user_env(tmp_path / "venv")
    site = install(python, dist["sdist"], env)
    installed = {name for name in package_files(site) if not name.endswith(".pyc")}
    assert installed == in_packages(set(zipfile.ZipFile(dist["wheel"]).namelist()))
    assert READ_FROM_THE_PACKAGE <= installed
    usage = run([str(tmp_path / "venv" / "bin" / "harness"), "--help"], elsewhere, env).stdout
    assert all(command in usage for command in ("run", "figures", "report", "data"))
