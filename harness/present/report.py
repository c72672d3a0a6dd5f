"""``harness report``: one static HTML page of stored results, readable from ``file://``.

What it shows, from files only (nothing is recomputed, no model is loaded):

* a study first (``<output_dir>/studies/<name>/study.json`` and its ``figures/``): its
  settings, the findings with the seeds and tasks they hold for, the cross-task figures and
  tables;
* an interactive view of single inputs: for a few dev examples of each task (the `examples`
  analysis's stored maps), the pre-trained and the fine-tuned checkpoint's attention side by
  side with their difference, for any layer and head, tokens on the axes (inline JavaScript
  and canvas: no server, no script from elsewhere);
* then each task: its headline metrics as mean ± s.d. over the study's seeds, and each run
  with the parameters that produced it and every analysis that ran, each with its inputs,
  settings, result keys, figures and tables (grouped by the analysis that drew them,
  `harness.present.redraw.drawn_files`).

The page is rendered from the Jinja2 templates in ``templates/`` with autoescaping on: every
stored value is escaped by default, and only HTML made here and known to be safe (Markdown
rendered without raw HTML, the inline JSON, the package's own CSS and script) is passed as
``Markup``. Without a study, every run folder under ``--output-dir`` is shown. The PNG figures are
copied into ``figures/`` beside the page and linked relatively, so the folder can be moved
or archived whole. The page reports on itself in ``#report-status``: once every figure has
loaded and the per-example view has drawn, its ``data-state`` is ``ready`` (``problems``
when a figure failed or a script error was caught), which a headless browser's DOM dump shows.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NotRequired, TypedDict

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markdown_it import MarkdownIt
from markupsafe import Markup

from harness.config import EnvironmentConfig, ReportConfig
from harness.present.redraw import TRAJECTORY, drawn_files
from harness.present.study_figures import task_text, tasks_text
from harness.recipes import describe_recipe
from harness.results.checkpoints import PAIRS
from harness.results.entries import AnyEntry, decoded
from harness.results.run_record import RunSummary, Trajectory, TrajectoryPoint
from harness.results.store import ensure_writable
from harness.results.study_record import Finding, StudyRecord, TaskAggregate
from harness.results.summary import STUDIES, SUMMARY, checked_study, checked_summary, flatten
from harness.views import VIEWS
from harness.views.across_tasks import mean_sd
from harness.views.base import pair_name, per_checkpoint_results, per_pair_results
from harness.views.evaluation import EvaluationView, learned_line, learning_warning
from harness.views.examples import ExamplesEntry, ExamplesView
from harness.views.papers import paper_cells
from harness.views.summary import headline_names, summary_metrics
from harness.views.titles import checkpoint_title, model_title
from harness.views.trajectory import points_of
from tasks.errors import InputError
from tasks.files import atomic_write_text

ASSETS = "figures"  # beside the page: every figure it shows
STUDY_FINDINGS = "findings.md"  # the study's findings, shown from study.json with their support instead
MARKDOWN = MarkdownIt("commonmark", {"html": False}).enable("table")  # our own tables; raw HTML stays text
HEADING = re.compile(r"<(/?)h([1-6])>")  # a table's "# title" sits under the page's own headings
PAGE_SCRIPT = Path(__file__).with_name("report.js")
PAGE_STYLE = Path(__file__).with_name("report.css")
TEMPLATES = Environment(
    loader=PackageLoader("harness.present", "templates"),
    autoescape=select_autoescape(["html"]),
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)


@dataclass
class Run:
    """A run folder and its summary (None when it has none that is whole: a failed run)."""

    folder: Path
    summary: RunSummary | None

    @property
    def task(self) -> str:
        """The run's task (from its folder name when it has no summary)."""
        return self.summary["run"]["task"] if self.summary else self.folder.name.split("-")[0]

    @property
    def label(self) -> str:
        """The run as the page names it: task and seed, or its folder when it has no summary."""
        return f"{self.task} seed {self.summary['run']['seed']}" if self.summary else self.folder.name


@dataclass
class Stored:
    """What the page shows: a study (its folder and study.json) or none, and the runs."""

    study_folder: Path | None
    study: StudyRecord | None
    runs: list[Run]


def find_study(settings: ReportConfig, output_dir: Path) -> Path | None:
    """The study folder ``--study`` names (a folder, or a name under ``<output_dir>/studies``),
    else the one whose study.json was written last; None when there is no study."""
    studies = output_dir / STUDIES
    if settings.study is None:
        written = sorted(studies.glob("*/study.json"), key=lambda path: path.stat().st_mtime)
        return written[-1].parent if written else None
    for folder in (Path(settings.study), studies / settings.study):
        if (folder / "study.json").is_file():
            return folder
    known = ", ".join(sorted(path.parent.name for path in studies.glob("*/study.json"))) or "none"
    raise InputError(
        f"--study {settings.study}: no study.json there nor in {studies / settings.study} "
        f"(studies under {studies}: {known})"
    )


def gather(settings: ReportConfig, environment: EnvironmentConfig) -> Stored:
    """The study and runs to show, or one clear line when nothing is stored: ``--runs`` (beside
    ``--study``'s section when both are given), else ``--study`` with its own runs, else the
    latest study's section and every run under the output folder."""
    output_dir = environment.output_dir
    folder = find_study(settings, output_dir) if settings.study or not settings.runs else None
    study = checked_study(folder) if folder is not None else None
    if settings.runs:
        runs = [named_run(name, output_dir) for name in settings.runs]
    elif settings.study and folder is not None and study is not None:  # --study: find_study found its folder
        runs = [load_run(folder.parent.parent / run["folder"]) for run in study["runs"]]  # <output>/studies/<name>
    else:
        failed = (
            [load_run(folder.parent.parent / run["folder"]) for run in study["runs"]]
            if folder is not None and study is not None
            else []
        )
        runs = [
            *(load_run(path.parent) for path in sorted(output_dir.glob(f"*/{SUMMARY}"))),
            *(run for run in failed if run.summary is None),
        ]
    if not runs:
        raise InputError(f"nothing stored under {output_dir}: run `harness run` or `harness study` first")
    tasks = study["tasks_asked"] if study else []  # a study's tasks in its order, then any others by name

    def order(run: Run) -> tuple:
        seed = run.summary["run"]["seed"] if run.summary else -1
        return (tasks.index(run.task) if run.task in tasks else len(tasks), run.task, seed, run.folder.name)

    return Stored(folder, study, sorted(runs, key=order))


def named_run(name: str, output_dir: Path) -> Run:
    """The run ``--runs`` names: a folder, or a folder's name under the output folder; one clear
    line when it holds no whole summary."""
    for folder in (Path(name), output_dir / name):
        if (folder / SUMMARY).is_file():
            run = load_run(folder)
            if run.summary is not None:
                return run
    known = ", ".join(sorted(path.parent.name for path in output_dir.glob(f"*/{SUMMARY}"))) or "none"
    raise InputError(
        f"--runs {name}: no whole {SUMMARY} there nor in {output_dir / name} (runs under {output_dir}: {known})"
    )


def load_run(folder: Path) -> Run:
    """The run in ``folder`` with its summary, if it has a whole one (one line if it differs from its seal)."""
    return Run(folder, checked_summary(folder / SUMMARY))


def build_report(settings: ReportConfig, environment: EnvironmentConfig) -> tuple[Path, int]:
    """Write the page and copy its figures beside it; returns the page and the number of figures."""
    stored = gather(settings, environment)
    out = settings.out_under(environment.output_dir)
    ensure_writable(out.parent, "--out")
    page = Page(out.parent / ASSETS)
    study = (
        page.study_section(stored.study, stored.study_folder)
        if stored.study is not None and stored.study_folder is not None
        else None
    )
    title = f"Study {stored.study['name']}" if stored.study else f"Runs under {environment.output_dir.name}"
    text = render(title, study, page.tasks_section(stored), example_data(stored))
    written = atomic_write_text(out, text)
    page.remove_unshown()
    return written, page.figures


class Figure(TypedDict):
    """A figure the page shows: its link from the page, its file name and stem."""

    source: str
    name: str
    stem: str


class MarkdownPart(TypedDict):
    """A Markdown table as HTML, with its title (None: its own title line says it)."""

    title: str | None
    html: Markup


class FindingsTable(TypedDict):
    """The study's findings as a table: the tasks (columns), and a row per finding (`findings`)."""

    tasks: list[str]
    rows: list[tuple[str, str, list[str], str, str]]


class StudySection(TypedDict):
    """The study's part of the page (`Page.study_section`)."""

    name: str
    settings: list[tuple[str, str]]
    findings: FindingsTable | None
    kept_out: list[tuple[str, str]]
    figures: list[Figure]
    tables: list[MarkdownPart]


class Unattributed(TypedDict):
    """Every figure and table of a run drawn before each was recorded under its analysis."""

    figures: list[Figure]
    tables: list[MarkdownPart]


class AnalysisSection(TypedDict):
    """One analysis of a run (or the run's trajectory) on the page."""

    name: str
    version: int | None
    description: Markup
    in_view: bool
    parameters: list[tuple[str, str]]
    figures: list[Figure]
    tables: list[MarkdownPart]


class RunDetails(TypedDict):
    """One run on the page; a failed run has only its folder."""

    folder: str
    failed: bool
    label: NotRequired[str]
    analyses: NotRequired[list[AnalysisSection]]
    parameters: NotRequired[list[tuple[str, str]]]
    headline: NotRequired[list[tuple[str, str]]]
    unattributed: NotRequired[Unattributed | None]


class TaskSection(TypedDict):
    """One task on the page: its metrics over the study's seeds (None without a study) and its runs."""

    name: str
    spread: list[tuple[str, str, str, int]] | None
    runs: list[RunDetails]


# The per-example view's data, read by the page's script (report.js) as JSON, not by Python: left open.
ViewData = dict[str, Any]


def render(title: str, study: StudySection | None, tasks: list[TaskSection], data: ViewData, intro: str = "") -> str:
    """The whole page from ``templates/page.html``: style, sections, the view's data and its script, all
    inline; the per-example view says ``intro`` of its inputs (default: the runs' seeded dev examples)."""
    # The package's own style sheet and script, inlined as they are (escaping them would break them).
    style, script = Markup(PAGE_STYLE.read_text()), Markup(PAGE_SCRIPT.read_text())
    return TEMPLATES.get_template("page.html").render(
        title=title, study=study, tasks=tasks, data=inline_json(data), style=style, script=script, intro=intro
    )


def inline_json(data: ViewData) -> Markup:
    """``data`` as JSON for a ``<script type="application/json">`` element, every ``<`` written
    ``\\u003c`` (the same string to JSON.parse), so that no value can end the element or open a
    comment or script inside it."""
    # Safe as it is: a script element's text is not HTML (entities would reach JSON.parse undecoded), and with
    # no "<" left in it nothing in the data can change where the element ends.
    return Markup(json.dumps(data, separators=(",", ":")).replace("<", "\\u003c"))


class Page:
    """The page's sections as the templates' data, copying each figure it shows into ``assets`` as it goes."""

    def __init__(self, assets: Path) -> None:
        self.assets = assets
        self.figures = 0
        self.copied: set[Path] = set()

    def figure_list(self, paths: list[Path], group: str) -> list[Figure]:
        """The PNG figures among ``paths``, copied to ``assets/group``: each one's link from the page and name."""
        shown: list[Figure] = []
        for path in sorted(p for p in paths if p.suffix == ".png" and p.is_file()):
            target = self.assets / group / path.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
            self.copied.add(target)
            self.figures += 1
            shown.append({"source": f"{ASSETS}/{group}/{path.name}", "name": path.name, "stem": path.stem})
        return shown

    def remove_unshown(self) -> None:
        """Delete the figure copies an earlier page left in ``assets`` that this page does not show
        (the folder holds only what the page links, so it stays as small as the page)."""
        for path in sorted(self.assets.rglob("*"), reverse=True):  # files before their folders
            if path.is_file() and path not in self.copied:
                path.unlink()
            elif path.is_dir() and not any(path.iterdir()):
                path.rmdir()

    def study_section(self, study: StudyRecord, folder: Path) -> StudySection:
        """The study's settings, findings, figures and tables."""
        figures = folder / "figures"
        tables = [path for path in sorted(figures.glob("*.md")) if path.name != STUDY_FINDINGS]
        return {
            "name": study["name"],
            "settings": study_settings(study),
            "findings": findings(study["findings"]),
            "kept_out": list(study.get("kept_out_of_findings", {}).items()),
            "figures": self.figure_list(sorted(figures.glob("*.png")), "study-" + folder.name),
            "tables": markdown_files(tables, titled=True),
        }

    def tasks_section(self, stored: Stored) -> list[TaskSection]:
        """Each task with its runs, in the order the runs come."""
        tasks = list(dict.fromkeys(run.task for run in stored.runs))
        return [
            self.task_section(task, [run for run in stored.runs if run.task == task], stored.study) for task in tasks
        ]

    def task_section(self, task: str, runs: list[Run], study: StudyRecord | None) -> TaskSection:
        """One task: its metrics over the study's seeds (None without a study) and its runs."""
        entry = study["tasks"].get(task) if study else None
        return {
            "name": task,
            "spread": seed_spread(entry) if entry else None,
            "runs": [self.run_details(run) for run in runs],
        }

    def run_details(self, run: Run) -> RunDetails:
        """One run: its parameters, headline metrics and every analysis that ran, or that it failed."""
        if run.summary is None:
            return {"folder": run.folder.name, "failed": True}
        drawn = drawn_files(run.folder / "figures")
        analyses = [
            self.analysis_section(analysis, entry, drawn.get(analysis, []), run.folder.name)
            for analysis, entry in run.summary["analyses"].items()
        ]
        if TRAJECTORY in drawn and run.summary.get("trajectory"):
            analyses.append(self.trajectory_section(run.summary["trajectory"], drawn[TRAJECTORY], run.folder.name))
        return {
            "folder": run.folder.name,
            "failed": False,
            "label": run.label,
            "analyses": analyses,
            "parameters": run_parameters(run.summary),
            "headline": run_headline(run.summary),
            "unattributed": None if drawn else self.unattributed(run.folder),
        }

    def unattributed(self, folder: Path) -> Unattributed:
        """Every figure and table of a run drawn before `redraw` recorded which analysis drew which."""
        files = sorted((folder / "figures").glob("*"))
        return {
            "figures": self.figure_list(files, folder.name),
            "tables": markdown_files([path for path in files if path.suffix == ".md"], titled=False),
        }

    def analysis_section(self, name: str, entry: AnyEntry, files: list[Path], group: str) -> AnalysisSection:
        """One analysis of a run: what it measures, its inputs and settings, figures and tables."""
        return {
            "name": name,
            "version": entry.get("version"),
            "description": what_it_does(name),
            "in_view": name == ExamplesView.name,
            "parameters": analysis_parameters(entry),
            "figures": self.figure_list(files, group),
            "tables": markdown_files([path for path in files if path.suffix == ".md"], titled=False),
        }

    def trajectory_section(self, trajectory: Trajectory, files: list[Path], group: str) -> AnalysisSection:
        """A --trajectory run's checkpoints along the fine-tuning: which steps, and the figures and
        table drawn over them."""
        steps = ", ".join(f"{point['step']} ({point['examples_seen']:,} examples)" for point in trajectory["points"])
        return {
            "name": TRAJECTORY,
            "version": None,
            "description": Markup(
                MARKDOWN.renderInline(
                    "The analyses `--trajectory-analyses` chose (by default the dev evaluation, cosine, patterns "
                    "and the example maps) on the checkpoints kept along the fine-tuning, each beside the "
                    "pre-trained model and compared with the final one: when attention changes."
                )
            ),
            "in_view": False,
            "parameters": [("steps kept", f"{steps} of {trajectory['of_steps']}")],
            "figures": self.figure_list(files, group),
            "tables": markdown_files([path for path in files if path.suffix == ".md"], titled=False),
        }


def what_it_does(name: str) -> Markup:
    """What the analysis measures (`View.description`), as HTML."""
    # Safe: MARKDOWN renders with raw HTML off, so any markup in the text comes out escaped.
    return Markup(MARKDOWN.renderInline(VIEWS[name].description() if name in VIEWS else ""))


def shown(name: str, value: object) -> str:
    """A stored value as the page shows it: hashes shortened, a path by its last part only
    (the page names no folder of the machine that made it)."""
    text = str(value)
    if name.endswith("sha256") and len(text) > 16:
        return text[:16] + "…"
    return Path(text).name if text.startswith("/") else text


def key_values(values: Mapping[str, object]) -> str:
    """Nested values as one line of ``name = value`` pairs (``-`` when there are none)."""
    return "; ".join(f"{name} = {shown(name, value)}" for name, value in flatten("", values).items()) or "-"


def run_parameters(summary: RunSummary) -> list[tuple[str, str]]:
    """The ``run`` section as name-value rows: model, seed, recipe, keys, examples, checkpoints,
    the model's id and revision, and the analyses left out for want of their data."""
    run = summary["run"]
    rows = [
        ("task", run["task"]),
        ("model", model_title(run["model"])),
        ("seed", str(run["seed"])),
        ("fine-tuning recipe", describe_recipe(run["recipe"])),
        ("run key", run["key"]),
        ("fine-tune key", run.get("finetune_key", "-")),
        ("training examples", str(run.get("train_examples", "-"))),
        ("dev examples compared", f"{run.get('num_eval_examples', '-')} ({run.get('eval_split', 'dev')})"),
        ("layers x heads", f"{run['num_layers']} x {run['num_heads']}"),
        ("precision", str(run.get("precision"))),
    ]
    rows += [
        (f"{checkpoint_title(name)} checkpoint", key_values(identity))
        for name, identity in run.get("checkpoints", {}).items()
    ]
    rows += [
        ("every recipe setting", key_values(run["recipe"])),
        ("model provenance", key_values(run.get("provenance", {}))),
        ("analyses skipped (no data)", key_values(run.get("skipped", {}))),
    ]
    return rows


def run_headline(summary: RunSummary) -> list[tuple[str, str]]:
    """Whether the run learned its task, in words, then its headline metrics as name-value rows."""
    metrics = summary_metrics(summary)
    return learning_rows(summary) + [(name, f"{metrics[name]:.4g}") for name in headline_names(summary)]


def learning_rows(summary: RunSummary) -> list[tuple[str, str]]:
    """The fine-tuned model's learning check said in words: learned (by how much) or not (and so
    its attention changes are not what learning the task does); none without a dev evaluation."""
    entry = summary["analyses"].get(EvaluationView.name)
    if entry is None:
        return []
    warning = learning_warning(entry)
    if warning is not None:
        return [("learned the task", "no: " + warning.removeprefix("warning: "))]
    learned = learned_line(entry)
    return [("learned the task", "yes: " + learned.removeprefix("learned: "))] if learned else []


def analysis_parameters(entry: AnyEntry) -> list[tuple[str, str]]:
    """An analysis's input, input notes, settings and stored result keys as name-value rows."""
    source = entry.get("source", {})
    return [
        ("input", key_values(source.get("identity", {}))),
        ("input notes", key_values(source.get("notes", {}))),
        ("settings", key_values(entry.get("settings", {}))),
        ("stored results", key_values(entry.get("keys", {}))),
    ]


def seed_spread(entry: TaskAggregate) -> list[tuple[str, str, str, int]]:
    """The task's headline metrics over the study's seeds: name, mean ± s.d., range, seeds."""
    metrics = entry["metrics"]
    return [
        (name, mean_sd(metrics[name]), f"{metrics[name]['min']:.3f} to {metrics[name]['max']:.3f}", metrics[name]["n"])
        for name in entry["headline"]
    ]


def study_settings(study: StudyRecord) -> list[tuple[str, str]]:
    """The study's model, tasks, seeds, key, what it skipped or lost, and each task's recipe, as rows."""
    rows = [
        ("model", model_title(study["model"])),
        ("tasks asked", ", ".join(study["tasks_asked"])),
        ("seeds per task", str(study["seeds_asked"])),
        ("study key", study["key"]),
        ("tasks skipped (no data)", key_values(study["skipped"])),
        ("analyses skipped (no data)", key_values(study.get("analyses_skipped", {}))),
        ("runs that failed", key_values(study["failed"])),
    ]
    rows += [
        (f"{task} recipe", describe_recipe({**recipe, "seed": "per run"})) for task, recipe in study["recipes"].items()
    ]
    return rows


def findings(found: dict[str, Finding]) -> FindingsTable | None:
    """Each finding once, as a row: the claim, on how many tasks it is clear on every seed, per
    task its seeds and each seed's evidence (`task_text`), and the papers beside it (None when
    there is none)."""
    if not found:
        return None
    tasks = list(dict.fromkeys(task for finding in found.values() for task in finding["per_task"]))
    rows = [
        (
            finding["claim"],
            tasks_text(finding),
            [
                task_text(cell, finding.get("holds_as", "holds")) if (cell := finding["per_task"].get(task)) else "-"
                for task in tasks
            ],
            *paper_cells(finding.get("paper")),
        )
        for finding in found.values()
    ]
    return {"tasks": tasks, "rows": rows}


def markdown_files(paths: list[Path], titled: bool) -> list[MarkdownPart]:
    """Markdown tables as HTML, each with its title (its file name when ``titled``: the study's have no
    title line; else None), its headings moved under the page's own."""
    parts: list[MarkdownPart] = []
    for path in paths:
        text = HEADING.sub(lambda tag: f"<{tag[1]}h{min(int(tag[2]) + 4, 6)}>", MARKDOWN.render(path.read_text()))
        # Safe: MARKDOWN renders with raw HTML off, so any markup in the file comes out escaped.
        parts.append({"title": path.stem.replace("_", " ") if titled else None, "html": Markup(text)})
    return parts


def example_data(stored: Stored) -> ViewData:
    """The maps the view shows: every run with stored examples (in a study, the first seed of each task)."""
    runs, tasks = [], set()
    for run in stored.runs:
        entry = run.summary["analyses"].get(ExamplesView.name) if run.summary is not None else None
        if run.summary is None or entry is None or (stored.study is not None and run.task in tasks):
            continue
        tasks.add(run.task)
        runs.append(view_run(run.summary, run.label, decoded(entry)))
    return {"runs": [run for run in runs if run is not None]}


def view_run(summary: RunSummary, label: str, entry: ExamplesEntry) -> ViewData | None:
    """One run's examples for the view: tokens, both checkpoints' maps and the pair's comparison,
    and, for a run with a trajectory, each example's maps at every kept step (`stored_steps`)."""
    before, after = PAIRS[0]
    per_checkpoint = per_checkpoint_results(entry)
    if before not in per_checkpoint or after not in per_checkpoint:
        return None
    comparison = per_pair_results(entry).get(pair_name((before, after)))
    compared = comparison["examples"] if comparison is not None else []
    first, second = per_checkpoint[before], per_checkpoint[after]
    steps = stored_steps(summary, len(first["examples"]))
    trajectory = summary.get("trajectory")
    of_steps = trajectory["of_steps"] if trajectory else None  # and no steps
    examples = [
        {
            "guid": a["guid"],
            "split": a["split"],
            "label": a["label"],
            "text_a": a["text_a"],
            "text_b": a["text_b"],
            "tokens": a["tokens"],
            "before": a["maps"],
            "after": b["maps"],
            "steps": [point["example_maps"][index] for point in steps],
            "cosine": c.get("cosine_per_head"),
            "most_changed": c.get("most_changed"),
        }
        for index, (a, b, c) in enumerate(zip(first["examples"], second["examples"], compared))
    ]
    return {
        "label": f"{label} ({model_title(summary['run']['model'])})",
        "layers": first["num_layers"],
        "heads": first["num_heads"],
        "before": checkpoint_title(before),
        "after": checkpoint_title(after),
        "examples": examples,
        "candidates": first["candidates"],
        "max_tokens": first["max_tokens"],
        # the slider's positions before the fine-tuned model's, and their training steps (index.html#step=N)
        "steps": [f"step {point['step']} of {of_steps} ({point['step'] / of_steps:.0%})" for point in steps]
        if of_steps is not None
        else [],
        "step_numbers": [point["step"] for point in steps],
        "of_steps": of_steps,
    }


def stored_steps(summary: RunSummary, examples: int) -> list[TrajectoryPoint]:
    """The trajectory's points (earliest first) that stored the maps of all ``examples`` examples."""
    return [point for point in points_of(summary) if len(point.get("example_maps", [])) == examples]
