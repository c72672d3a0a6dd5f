"""The commands that read stored results only (figures from a run folder, report, docs, export): no torch, no model."""

from __future__ import annotations

from harness.config import DocsConfig, EnvironmentConfig, ExportConfig, FiguresConfig, ReportConfig
from harness.present.doc_tables import documents, rebuild, take_run, take_study
from harness.present.frames import export_tables
from harness.present.redraw import drawn_files, redraw
from harness.present.report import build_report
from harness.results.summary import whole_summary


def figures(settings: FiguresConfig) -> None:
    """Every figure and table of the run in ``settings.run_folder``, drawn again from its summary."""
    summary = whole_summary(settings.run_folder)
    folder = settings.run_folder / "figures"
    written = redraw(summary, folder, force=True)
    figures = [path for path in written if path.suffix == ".png"]
    tables = [path for path in written if path.suffix == ".md"]
    print(f"redrew {len(figures)} figures (PNG and PDF) and {len(tables)} tables of "
          f"{len(drawn_files(folder))} analyses in {folder}")


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
    page, figures = build_report(settings, environment)
    print(f"report: {page} ({figures} figures in {page.parent / 'figures'}; open it in a browser, no server needed)")


def export(settings: ExportConfig, environment: EnvironmentConfig) -> None:
    """The stored runs (and a study) as tidy Parquet and CSV tables, for notebooks and other tools."""
    for path in export_tables(settings, environment.output_dir):
        print(path)
