"""Figures and tables drawn from a stored summary only (``harness figures`` and the end of
``harness run``): each analysis draws its own entry; nothing is recomputed.

Drawing is the slowest part of a rerun that finds everything stored (tens of figures at
200 dpi), so ``figures/.drawn.json`` records, for each analysis, the hash of what its figures
were drawn from (the run's description, the analysis's entry, the file formats asked for, and
the code that draws: every module of `harness.views`, so a new figure style redraws) and
the files it drew. `redraw` draws again only the analyses whose hash changed or whose files
are gone (``harness ablate`` adding the ablation to a run draws the ablation's figures
alone); ``harness figures`` always draws everything. The report groups each run's files by
the analysis that drew them from the same record.

A figure drawn from a quick look's sample says so in a footnote (`sample_note`, from the sample
sizes the entry's source recorded), whichever view drew it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path

from harness.config import DEFAULT_FIGURE_FORMATS, QUICK
from harness.present.parallel import drawn
from harness.results.entries import decoded
from harness.results.run_record import RunSection, RunSummary
from harness.results.store import key_of, read_json, write_json
from harness.views import VIEWS_FOLDER
from harness.views import trajectory as trajectory_view
from harness.views.base import Entry, View, current_entries
from harness.views.evaluation import EvaluationView
from harness.views.saving import figure_formats, figure_note, vector_copies
from harness.views.summary import summary_metrics
from harness.views.tokens import model_tokens, own_tokens
from tasks.collector import frozen_heap
from tasks.files import atomic_write_text, remove_orphans, writing

DRAWN = ".drawn.json"
TRAJECTORY = "trajectory"  # what the drawn record names the trajectory's figures by, beside the analyses


def drawing_code_hash() -> str:
    """SHA-256 of the source files that draw: every module of `harness.views`."""
    digest = hashlib.sha256()
    for path in sorted(VIEWS_FOLDER.glob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def redraw(
    summary: RunSummary,
    out_dir: Path,
    force: bool = False,
    formats: Sequence[str] = DEFAULT_FIGURE_FORMATS,
    only: Sequence[str] | None = None,
    processes: int = 1,
) -> list[Path]:
    """Every figure (as each of ``formats``) and table of every analysis entry in ``summary`` whose
    version is the current one: those recorded as drawn from the same entry, run, formats and code
    are kept, the rest drawn, each analysis's in one of ``processes`` processes (0: one per core;
    `harness.present.parallel`); with ``only``, the analyses not named there are left as recorded. A
    full disk is one `DiskFull` line naming ``out_dir`` (each file is written atomically: none is
    left half drawn, and the rerun draws those missing)."""
    with (
        writing(out_dir, "the figures and tables"),
        model_tokens(summary["run"].get("special_tokens")),
        figure_formats(formats),
        frozen_heap(),  # drawing allocates millions of artists: collections scan those alone
    ):
        return draw_missing(summary, out_dir, force, tuple(formats), only, processes)


Drawer = Callable[[Path], tuple[list[Path], dict[str, str]]]


def drawings(summary: RunSummary) -> Iterator[tuple[str, object, Drawer]]:
    """What a summary draws, piece by piece: each current analysis entry, then the trajectory
    along fine-tuning where the run has one; each as its name, what its drawing depends on, and
    a drawer of its figures and tables (by file stem) into a folder (picklable: a worker process
    of `harness.present.parallel` may draw it)."""
    run = summary["run"]
    for name, (view, entry) in current_entries(summary).items():
        yield name, entry, partial(draw_entry, view, entry, run)
    if "trajectory" in summary and EvaluationView.name in summary["analyses"]:
        metrics = summary_metrics(summary)
        main = EvaluationView.main_score(decoded(summary["analyses"][EvaluationView.name]))
        depends_on = {"trajectory": summary["trajectory"], "metrics": metrics}
        yield TRAJECTORY, depends_on, partial(draw_trajectory, summary, metrics, main)


def draw_entry(view: type[View], entry: Entry, run: RunSection, out_dir: Path) -> tuple[list[Path], dict[str, str]]:
    """The figures (files) and tables (by file stem) of ``view``'s entry, each figure with the
    sample it was drawn from as its footnote (`sample_note`)."""
    with figure_note(sample_note(view, entry)):
        return view.draw(entry, run, out_dir), view.tables(entry, run)


def draw_trajectory(
    summary: RunSummary, metrics: dict[str, float], main: tuple[str, str], out_dir: Path
) -> tuple[list[Path], dict[str, str]]:
    """The figures and table of the run's trajectory along fine-tuning."""
    return (
        trajectory_view.draw_run(summary, metrics, main, out_dir),
        {"trajectory_table": trajectory_view.run_table(summary, metrics, main)},
    )


def draw_missing(
    summary: RunSummary,
    out_dir: Path,
    force: bool,
    formats: tuple[str, ...],
    only: Sequence[str] | None,
    processes: int,
) -> list[Path]:
    """`redraw`'s drawing, without its translation of a full disk."""
    remove_orphans(out_dir)  # a drawing killed before it could rename its files left them
    code = drawing_code_hash()
    recorded = read_json(out_dir / DRAWN, note_damage=False)
    recorded = recorded if isinstance(recorded, dict) else {}
    fingerprints, by_analysis, pieces = {}, {}, {}
    for name, depends_on, draw in drawings(summary):
        kept = [out_dir / file for file in recorded.get("analyses", {}).get(name, [])]
        if only is not None and name not in only:  # left as recorded, drawn or not
            if name in recorded.get("fingerprints", {}):
                fingerprints[name], by_analysis[name] = recorded["fingerprints"][name], kept
            continue
        drawn_from = {"run": summary["run"], "entry": depends_on, "drawn_by": code, "formats": list(formats)}
        fingerprints[name] = key_of(drawn_from, 64)
        if (
            not force
            and recorded.get("fingerprints", {}).get(name) == fingerprints[name]
            and all(path.is_file() for path in kept)
        ):
            by_analysis[name] = kept
            continue
        by_analysis[name], pieces[name] = [], partial(draw, out_dir)  # its place in the record, filled when drawn
    with drawn(list(pieces.values()), processes) as results:
        for name, result in zip(pieces, results):
            figures, texts = result()
            tables = [
                atomic_write_text(out_dir / f"{stem}.md", own_tokens(text, markdown=True))
                for stem, text in texts.items()
            ]
            copies = [copy for path in figures for copy in vector_copies(path) if copy.is_file()]
            by_analysis[name] = figures + copies + tables
    record = {
        "fingerprints": fingerprints,
        "analyses": {name: relative(paths, out_dir) for name, paths in by_analysis.items()},
    }
    if force or record != recorded:  # a forced drawing is recorded anew, as the figures it wrote
        write_json(out_dir / DRAWN, record)
    return [path for paths in by_analysis.values() for path in paths]


def drawn_names(summary: RunSummary) -> list[str]:
    """The names `redraw` draws a summary's figures by: its current analyses, and the trajectory where it has one."""
    return [name for name, _, _ in drawings(summary)]


def sample_note(view: type[View], entry: Entry) -> str:
    """``"quick look: 64 dev examples"``: the footnote of an analysis's figures where its source
    drew a sample no larger than ``--quick`` makes it (`harness.config.QUICK`, whether --quick or
    a smaller flag capped it), read from the sizes the entry's source recorded (`View.samples`);
    "" otherwise."""
    source = entry.get("source", {})
    small = [
        f"{size} {what}"
        for size, cap, what in view.samples(source.get("identity", {}), source.get("notes", {}))
        if size is not None and size <= QUICK[cap]
    ]
    return f"quick look: {', '.join(small)}" if small else ""


def relative(paths: list[Path], folder: Path) -> list[str]:
    """``paths`` as strings relative to ``folder`` (each must lie under it)."""
    return [str(path.relative_to(folder)) for path in paths]


def drawn_files(out_dir: Path) -> dict[str, list[Path]]:
    """``{analysis: its figure and table files}`` as `redraw` last recorded them in ``out_dir``
    (for the report); an empty dict when they were drawn before it recorded which drew what."""
    drawn = read_json(out_dir / DRAWN, note_damage=False)
    analyses = drawn.get("analyses", {}) if isinstance(drawn, dict) else {}
    return {name: [out_dir / file for file in files] for name, files in analyses.items()}
