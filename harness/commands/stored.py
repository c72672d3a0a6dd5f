"""The commands that read stored results only (figures from a run folder, report, docs, export): no torch, no model."""

from __future__ import annotations

import glob
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

from harness.config import DocsConfig, EnvironmentConfig, ExportConfig, FiguresConfig, ReportConfig, StoredSelection
from harness.present.doc_tables import documents, rebuild, take_run, take_study
from harness.present.frames import export_tables
from harness.present.redraw import drawn_files, drawn_names, redraw
from harness.present.report import build_report
from harness.results.summary import SUMMARY, whole_summary
from tasks.errors import InputError

Selection = TypeVar("Selection", bound=StoredSelection)


def figures(settings: FiguresConfig, environment: EnvironmentConfig) -> None:
    """Every figure (its PNG and the ``--vector-formats``) and table of the run in
    ``settings.run_folder``, or of the analyses ``settings.analyses`` names, drawn again from its summary."""
    run_folder = settings.run_folder
    if run_folder is None:  # `harness figures` without a folder finds its run first (harness.commands.compute)
        raise ValueError("figures are redrawn from a run's folder: find the run of the flags first")
    summary = whole_summary(run_folder)
    folder = run_folder / "figures"
    names = drawn_names(summary)
    unknown = [name for name in settings.analyses or [] if name not in names]
    if unknown:
        raise InputError(
            f"--analyses: {settings.run_folder} has no figures of {', '.join(unknown)}; "
            f"its analyses: {', '.join(names)}"
        )
    formats = environment.figure_formats
    redraw(summary, folder, force=True, formats=formats, only=settings.analyses, processes=environment.figure_processes)
    recorded = drawn_files(folder)
    drawn = [path for name in settings.analyses or names for path in recorded.get(name, [])]
    figures = [path for path in drawn if path.suffix == ".png"]
    tables = [path for path in drawn if path.suffix == ".md"]
    print(
        f"redrew {len(figures)} figures ({' and '.join(kind.upper() for kind in formats)}) and {len(tables)} "
        f"tables of {len(settings.analyses or names)} analyses in {folder}"
    )


def docs(settings: DocsConfig) -> bool:
    """Store the named runs' and studies' results (``--run``, ``--study``), then rebuild (or ``--check``) every table
    block of the README and docs; False when a check found differences."""
    for label, folder in settings.runs.items():
        print(f"stored {label}: {take_run(label, folder)}")
    for label, folder in settings.studies.items():
        print(f"stored {label}: {take_study(label, folder)}")
    differing = rebuild(documents(), check=settings.check)
    verb = "differs from its stored results" if settings.check else "rebuilt"
    for block in differing:
        print(f"{block}: {verb}")
    if not differing:
        print("every table agrees with its stored results")
    return not (settings.check and differing)


def report(settings: ReportConfig, environment: EnvironmentConfig) -> None:
    """One static HTML page of the stored study (or runs), with its figures copied beside it."""
    page, figures = build_report(placed(settings, environment.output_dir), environment)
    print(f"report: {page} ({figures} figures in {page.parent / 'figures'}; open it in a browser, no server needed)")


def export(settings: ExportConfig, environment: EnvironmentConfig) -> None:
    """The stored runs (and a study) as tidy Parquet and CSV tables, for notebooks and other tools."""
    for path in export_tables(placed(settings, environment.output_dir), environment.output_dir):
        print(path)


def placed(settings: Selection, output_dir: Path) -> Selection:
    """``settings`` as the command reads them: ``--out`` under ``output_dir`` unless given, and each
    glob pattern of ``--runs`` replaced by the run folders it matches (`matching_runs`)."""
    return replace(
        settings,
        out=settings.out_under(output_dir),
        runs=[run for name in settings.runs for run in matching_runs(name, output_dir)],
    )


def matching_runs(name: str, output_dir: Path) -> list[str]:
    """What ``--runs NAME`` names: ``name`` itself, or for a glob pattern (``'outputs/*rte*'``,
    quoted so that no shell expanded it) the run folders (those holding a summary.json) it
    matches as a path and as a name under ``output_dir``, sorted; one clear line when it matches none."""
    if glob.escape(name) == name:  # no wildcard in it
        return [name]
    found = {
        Path(path).resolve(): path
        for pattern in (name, str(output_dir / name))
        for path in glob.glob(pattern)
        if (Path(path) / SUMMARY).is_file()
    }
    if not found:
        raise InputError(
            f"--runs {name}: no run folder (a folder with {SUMMARY}) matches it, as a path or as a "
            f"name under {output_dir}; check the pattern, or leave --runs out to take every run there"
        )
    return sorted(found.values())
