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

Without a study, every run folder under ``--output-dir`` is shown. The PNG figures are
copied into ``figures/`` beside the page and linked relatively, so the folder can be moved
or archived whole. The page reports on itself in ``#report-status``: once every figure has
loaded and the per-example view has drawn, its ``data-state`` is ``ready`` (``problems``
when a figure failed or a script error was caught), which a headless browser's DOM dump shows.
"""

from __future__ import annotations

import html
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from markdown_it import MarkdownIt

from harness.config import EnvironmentConfig, ReportConfig, describe_recipe
from harness.present.redraw import drawn_files
from harness.present.study_figures import mean_sd
from harness.results.checkpoints import PAIRS
from harness.results.store import ensure_writable, read_json
from harness.results.summary import STUDIES, SUMMARY, flatten, stored_summary
from harness.views import VIEWS
from harness.views.examples import ExamplesView
from harness.views.style import checkpoint_title, model_title
from harness.views.summary import headline_names, summary_metrics
from tasks.errors import InputError
from tasks.files import atomic_write_text

ASSETS = "figures"  # beside the page: every figure it shows
STUDY_FINDINGS = "findings.md"  # the study's findings, shown from study.json with their support instead
MARKDOWN = MarkdownIt("commonmark", {"html": False}).enable("table")  # our own tables; raw HTML stays text
HEADING = re.compile(r"<(/?)h([1-6])>")  # a table's "# title" sits under the page's own headings
PAGE_SCRIPT = Path(__file__).with_name("report.js")
PAGE_STYLE = Path(__file__).with_name("report.css")


@dataclass
class Run:
    """A run folder and its summary (None when it has none that is whole: a failed run)."""

    folder: Path
    summary: dict[str, Any] | None

    @property
    def task(self) -> str:
        return self.summary["run"]["task"] if self.summary else self.folder.name.split("-")[0]

    @property
    def label(self) -> str:
        return f"{self.task} seed {self.summary['run']['seed']}" if self.summary else self.folder.name


@dataclass
class Stored:
    """What the page shows: a study (its folder and study.json) or none, and the runs."""

    study_folder: Path | None
    study: dict[str, Any] | None
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
    raise InputError(f"--study {settings.study}: no study.json there nor in {studies / settings.study} "
                     f"(studies under {studies}: {known})")


def gather(settings: ReportConfig, environment: EnvironmentConfig) -> Stored:
    """The study and runs to show, or one clear line when nothing is stored."""
    output_dir = environment.output_dir
    folder = find_study(settings, output_dir)
    if folder is not None:
        study = read_json(folder / "study.json", note_damage=False)
        if not isinstance(study, dict) or "runs" not in study:
            raise InputError(f"{folder / 'study.json'}: damaged; run the same `harness study` again to rewrite it")
        runs_dir = folder.parent.parent  # <output_dir>/studies/<name>: the runs sit in <output_dir>
        return Stored(folder, study, [load_run(runs_dir / run["folder"]) for run in study["runs"]])
    runs = [load_run(path.parent) for path in sorted(output_dir.glob("*/summary.json"))]
    runs = [run for run in runs if run.summary is not None]
    if not runs:
        raise InputError(f"nothing stored under {output_dir}: run `harness run` or `harness study` first")
    return Stored(None, None, sorted(runs, key=lambda run: (run.task, run.summary["run"]["seed"], run.folder.name)))


def load_run(folder: Path) -> Run:
    return Run(folder, stored_summary(folder / SUMMARY))


def build_report(settings: ReportConfig, environment: EnvironmentConfig) -> tuple[Path, int]:
    """Write the page and copy its figures beside it; returns the page and the number of figures."""
    stored = gather(settings, environment)
    ensure_writable(settings.out.parent, "--out")
    page = Page(settings.out.parent / ASSETS)
    body = [page.contents(stored)]
    if stored.study is not None:
        body.append(page.study_section(stored.study, stored.study_folder))
    body.append(example_view())
    body.append(page.tasks_section(stored))
    title = f"Study {stored.study['name']}" if stored.study else f"Runs under {environment.output_dir.name}"
    text = document(title, "\n".join(body), example_data(stored))
    return atomic_write_text(settings.out, text), page.figures


class Page:
    """The page's sections, copying each figure it shows into ``assets`` as it goes."""

    def __init__(self, assets: Path) -> None:
        self.assets = assets
        self.figures = 0

    def contents(self, stored: Stored) -> str:
        links = ([("study", "The study across tasks")] if stored.study else []) + [
            ("examples", "Attention on single examples"), ("tasks", "Tasks, runs and analyses")]
        items = "".join(f'<li><a href="#{anchor}">{text}</a></li>' for anchor, text in links)
        return (f'<p id="report-status" data-state="loading">loading figures…</p>'
                f'<pre id="report-errors" hidden></pre><nav><ul>{items}</ul></nav>')

    def figure_list(self, paths: list[Path], group: str) -> str:
        """The PNG figures among ``paths``, copied to ``assets/group`` and shown from there."""
        shown = []
        for path in sorted(p for p in paths if p.suffix == ".png" and p.is_file()):
            target = self.assets / group / path.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
            self.figures += 1
            source = f"{ASSETS}/{group}/{path.name}"
            shown.append(f'<figure><a href="{html.escape(source)}"><img src="{html.escape(source)}" '
                         f'alt="{html.escape(path.stem)}"></a><figcaption>{html.escape(path.name)}</figcaption>'
                         "</figure>")
        return f'<div class="figures">{"".join(shown)}</div>' if shown else ""

    def study_section(self, study: dict[str, Any], folder: Path) -> str:
        figures = folder / "figures"
        tables = [path for path in sorted(figures.glob("*.md")) if path.name != STUDY_FINDINGS]
        return (f'<section id="study"><h2>The study across tasks: {html.escape(study["name"])}</h2>'
                f"{study_settings(study)}<h3>Findings</h3>{findings(study['findings'])}"
                f"<h3>Figures</h3>{self.figure_list(sorted(figures.glob('*.png')), 'study-' + folder.name)}"
                f"<h3>Tables</h3>{markdown_files(tables, titled=True)}</section>")

    def tasks_section(self, stored: Stored) -> str:
        tasks = list(dict.fromkeys(run.task for run in stored.runs))
        parts = [self.task_section(task, [run for run in stored.runs if run.task == task], stored.study)
                 for task in tasks]
        return f'<section id="tasks"><h2>Tasks, runs and analyses</h2>{"".join(parts)}</section>'

    def task_section(self, task: str, runs: list[Run], study: dict[str, Any] | None) -> str:
        entry = (study or {}).get("tasks", {}).get(task)
        spread = (seed_spread(entry) if entry else
                  "<p>No study: each run below is one seed (a study gives each metric's mean ± s.d. over seeds).</p>")
        details = "".join(self.run_details(run, open_=index == 0) for index, run in enumerate(runs))
        name = html.escape(task)
        return f'<section class="task" id="task-{name}"><h3>{name}</h3>{spread}{details}</section>'

    def run_details(self, run: Run, open_: bool) -> str:
        name = html.escape(run.folder.name)
        if run.summary is None:
            return f"<p>{name}: no whole summary.json (the run failed or has not run)</p>"
        drawn = drawn_files(run.folder / "figures")
        sections = [self.analysis_section(analysis, entry, drawn.get(analysis, []), run.folder.name)
                    for analysis, entry in run.summary["analyses"].items()]
        if not drawn:
            sections.append(self.unattributed(run.folder))
        return (f'<details class="run"{" open" if open_ else ""}><summary>{html.escape(run.label)} '
                f"<code>{name}</code></summary>{run_parameters(run.summary)}{run_headline(run.summary)}"
                f'{"".join(sections)}</details>')

    def unattributed(self, folder: Path) -> str:
        """Every figure and table of a run drawn before `redraw` recorded which analysis drew which."""
        files = sorted((folder / "figures").glob("*"))
        return ('<section class="analysis"><h4>Figures and tables</h4><p>Drawn before the harness recorded which '
                "analysis drew which file (<code>harness figures</code> with the run's flags redraws them).</p>"
                f"{self.figure_list(files, folder.name)}"
                f"{markdown_files([path for path in files if path.suffix == '.md'], titled=False)}</section>")

    def analysis_section(self, name: str, entry: dict[str, Any], files: list[Path], group: str) -> str:
        note = ' <a href="#examples">(shown in the per-example view)</a>' if name == ExamplesView.name else ""
        return (f'<section class="analysis"><h4>{html.escape(name)} <small>version {entry.get("version")}</small></h4>'
                f"<p>{what_it_does(name)}{note}</p>{analysis_parameters(entry)}{self.figure_list(files, group)}"
                f"{markdown_files([path for path in files if path.suffix == '.md'], titled=False)}</section>")


def what_it_does(name: str) -> str:
    """What the analysis measures (`View.description`), as HTML."""
    return MARKDOWN.renderInline(VIEWS[name].description() if name in VIEWS else "")


def shown(name: str, value: Any) -> str:
    """A stored value as the page shows it: hashes shortened, a path by its last part only
    (the page names no folder of the machine that made it)."""
    text = str(value)
    if name.endswith("sha256") and len(text) > 16:
        return text[:16] + "…"
    return Path(text).name if text.startswith("/") else text


def key_values(values: dict[str, Any]) -> str:
    return "; ".join(f"{name} = {shown(name, value)}" for name, value in flatten("", values).items()) or "-"


def table(rows: list[tuple[str, str]]) -> str:
    """Name-value rows as an HTML table."""
    body = "".join(f"<tr><th>{html.escape(name)}</th><td>{html.escape(value)}</td></tr>" for name, value in rows)
    return f'<table class="parameters">{body}</table>'


def run_parameters(summary: dict[str, Any]) -> str:
    """The ``run`` section: model, seed, recipe, keys, examples, checkpoints."""
    run = summary["run"]
    rows = [("task", run["task"]), ("model", model_title(run["model"])), ("seed", str(run["seed"])),
            ("fine-tuning recipe", describe_recipe(run["recipe"])),
            ("run key", run["key"]), ("fine-tune key", run.get("finetune_key", "-")),
            ("training examples", str(run.get("train_examples", "-"))),
            ("dev examples compared", f"{run.get('num_eval_examples', '-')} ({run.get('eval_split', 'dev')})"),
            ("layers x heads", f"{run['num_layers']} x {run['num_heads']}"), ("precision", str(run.get("precision")))]
    rows += [(f"{checkpoint_title(name)} checkpoint", key_values(identity))
             for name, identity in run.get("checkpoints", {}).items()]
    rows += [("every recipe setting", key_values(run["recipe"]))]
    return "<h4>Parameters</h4>" + table(rows)


def run_headline(summary: dict[str, Any]) -> str:
    metrics = summary_metrics(summary)
    rows = [(name, f"{metrics[name]:.4g}") for name in headline_names(summary, metrics)]
    return "<h4>Headline metrics of this run</h4>" + table(rows) if rows else ""


def analysis_parameters(entry: dict[str, Any]) -> str:
    source = entry.get("source", {})
    rows = [("input", key_values(source.get("identity", {}))), ("input notes", key_values(source.get("notes", {}))),
            ("settings", key_values(entry.get("settings", {}))), ("stored results", key_values(entry.get("keys", {})))]
    return table(rows)


def seed_spread(entry: dict[str, Any]) -> str:
    """The task's headline metrics over the study's seeds: mean ± s.d., range, seeds."""
    rows = []
    for name in entry["headline"]:
        values = entry["metrics"][name]
        rows.append(f"<tr><th>{html.escape(name)}</th><td>{html.escape(mean_sd(values))}</td>"
                    f"<td>{values['min']:.3f} to {values['max']:.3f}</td><td>{values['n']}</td></tr>")
    return ("<h4>Headline metrics over seeds</h4><table class=\"spread\"><tr><th>metric</th><th>mean ± s.d.</th>"
            f"<th>range</th><th>seeds</th></tr>{''.join(rows)}</table>")


def study_settings(study: dict[str, Any]) -> str:
    rows = [("model", model_title(study["model"])), ("tasks asked", ", ".join(study["tasks_asked"])),
            ("seeds per task", str(study["seeds_asked"])), ("study key", study["key"]),
            ("tasks skipped (no data)", key_values(study["skipped"])),
            ("runs that failed", key_values(study["failed"]))]
    rows += [(f"{task} recipe", describe_recipe({**recipe, "seed": "per run"}))
             for task, recipe in study["recipes"].items()]
    return table(rows)


def findings(found: dict[str, Any]) -> str:
    """Each finding's sentence, then on how many seeds of each task it holds."""
    if not found:
        return "<p>No finding could be judged on every run.</p>"
    tasks = list(dict.fromkeys(task for finding in found.values() for task in finding["per_task"]))
    head = "<tr><th>finding</th>" + "".join(f"<th>{html.escape(task)}</th>" for task in tasks) + "</tr>"
    rows = []
    for finding in found.values():
        cells = [finding["per_task"].get(task) for task in tasks]
        rows.append(f"<tr><th>{html.escape(finding['claim'])}</th>" + "".join(
            f"<td>{c['holds']}/{c['seeds']}</td>" if c else "<td>-</td>" for c in cells) + "</tr>")
    items = "".join(f"<li>{html.escape(finding['text'])}</li>" for finding in found.values())
    return f'<ul class="findings">{items}</ul><table class="support">{head}{"".join(rows)}</table>'


def markdown_files(paths: list[Path], titled: bool) -> str:
    """Markdown tables as HTML; ``titled``: headed by their file name (the study's have no title line)."""
    parts = []
    for path in paths:
        title = f"<h4>{html.escape(path.stem.replace('_', ' '))}</h4>" if titled else ""
        text = HEADING.sub(lambda tag: f"<{tag[1]}h{min(int(tag[2]) + 4, 6)}>", MARKDOWN.render(path.read_text()))
        parts.append(f'<div class="table">{title}{text}</div>')
    return "".join(parts)


def example_view() -> str:
    """The per-example view's frame; the page's script fills it from the embedded data."""
    selects = "".join(f'<label>{name} <select id="view-{name}"></select></label>'
                      for name in ("run", "example", "layer", "head"))
    scales = '<option value="shared">shared by both maps</option><option value="own">each map its own</option>'
    canvases = "".join(f'<figure><figcaption id="view-title-{slot}"></figcaption><canvas id="view-{slot}"></canvas>'
                       "</figure>" for slot in ("before", "after", "change"))
    return ('<section id="examples"><h2>Attention on single examples</h2><p>A few seeded dev examples of each run '
            "(the <code>examples</code> analysis): each row is the attention of one token over the tokens it attends "
            "to; the change is fine-tuned minus pre-trained. The view opens each example on the head whose map "
            "changed most on it (lowest cosine); hover over a map for its weights.</p>"
            f'<div class="controls">{selects}<label>colour scale <select id="view-scale">{scales}</select></label>'
            '</div><p id="view-text"></p><p id="view-note"></p>'
            f'<div id="view-maps" data-drawn="no">{canvases}</div><p id="view-hover">&nbsp;</p></section>')


def example_data(stored: Stored) -> dict[str, Any]:
    """The maps the view shows: every run with stored examples (in a study, the first seed of each task)."""
    runs, tasks = [], set()
    for run in stored.runs:
        entry = run.summary and run.summary["analyses"].get(ExamplesView.name)
        if entry is None or (stored.study is not None and run.task in tasks):
            continue
        tasks.add(run.task)
        runs.append(view_run(run, entry))
    return {"runs": [run for run in runs if run is not None]}


def view_run(run: Run, entry: dict[str, Any]) -> dict[str, Any] | None:
    """One run's examples for the view: tokens, both checkpoints' maps and the pair's comparison."""
    before, after = PAIRS[0]
    per_checkpoint = entry["result"]["per_checkpoint"]
    if before not in per_checkpoint or after not in per_checkpoint:
        return None
    compared = entry["result"]["per_pair"].get(f"{before}->{after}", {}).get("examples", [])
    first, second = per_checkpoint[before], per_checkpoint[after]
    examples = [{"guid": a["guid"], "split": a["split"], "label": a["label"], "text_a": a["text_a"],
                 "text_b": a["text_b"], "tokens": a["tokens"], "before": a["maps"], "after": b["maps"],
                 "cosine": c.get("cosine_per_head"), "most_changed": c.get("most_changed")}
                for a, b, c in zip(first["examples"], second["examples"], compared)]
    return {"label": f"{run.label} ({model_title(run.summary['run']['model'])})", "layers": first["num_layers"],
            "heads": first["num_heads"], "before": checkpoint_title(before), "after": checkpoint_title(after),
            "examples": examples, "candidates": first["candidates"], "max_tokens": first["max_tokens"]}


def document(title: str, body: str, data: dict[str, Any]) -> str:
    """The whole page: style, body, the view's data as JSON (``</`` escaped so it cannot end
    the script element) and the script, all inline."""
    payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{PAGE_STYLE.read_text()}</style>"
            # first, so that an error anywhere later on the page is caught and shown
            "<script>window.reportErrors=[];window.onerror=function(m,s,l){window.reportErrors.push(m+' (line '+l+')');"
            "document.documentElement.setAttribute('data-errors',window.reportErrors.length);};</script></head>"
            f"<body><h1>{html.escape(title)}</h1>{body}"
            f'<script type="application/json" id="example-data">{payload}</script>'
            f"<script>{PAGE_SCRIPT.read_text()}</script></body></html>\n")
