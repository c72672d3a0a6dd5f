"""``harness report``: one page from stored results only (a tiny run, a tiny study), every figure
it shows beside it, the parameters and the per-example maps in it, no path of this machine; where
it and ``harness export`` write by default, and the runs a glob pattern names."""

from __future__ import annotations

import html
import json
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest

from harness.cli import main
from harness.commands.stored import matching_runs
from harness.present.report import inline_json
from harness.present.study_figures import seed_text, task_text
from harness.recipes import describe_recipe
from harness.results.store import read_json
from harness.results.summary import SUMMARY, seal
from harness.views.across_tasks import mean_sd
from tests.fixtures import tiny_run_arguments

ANALYSES = ("--analyses", "cosine", "surface", "examples")
MARKUP = "<script>alert(1)</script>"


class Links(HTMLParser):
    """Every ``src`` and ``href`` of a page, and the text of its elements by id."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: list[str] = []
        self.images = 0
        self.by_id: dict[str, str] = {}
        self.current: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        self.links += [value for name, value in attrs if name in ("src", "href") and value]
        self.images += tag == "img"
        self.current = values.get("id")
        if self.current:
            self.ids.append(self.current)

    def handle_endtag(self, tag: str) -> None:
        self.current = None

    def handle_data(self, data: str) -> None:
        if self.current:
            self.by_id[self.current] = self.by_id.get(self.current, "") + data


def parsed(page: Path) -> Links:
    links = Links()
    links.feed(page.read_text())
    return links


def report(capsys, *argv: str) -> tuple[int, str]:
    code = main(["report", *argv])
    return code, capsys.readouterr().err


@pytest.fixture(scope="module")
def stored_run(tiny_model_dir, tiny_data, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("report_run")
    assert main(tiny_run_arguments(tiny_model_dir, tiny_data, root, *ANALYSES)) == 0
    return root


@pytest.fixture(scope="module")
def stored_study(tiny_model_dir, tiny_data, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("report_study")
    flags = tiny_run_arguments(tiny_model_dir, tiny_data, root, "--analyses", "cosine", "examples")[3:]  # no --task
    assert main(["study", "--tasks", "rte,mrpc", "--seeds", "2", "--name", "tiny", *flags]) == 0
    return root


def assert_self_contained(page: Path, root: Path) -> Links:
    """Every figure the page links is beside it, and the page names no folder of this machine."""
    links = parsed(page)
    text = page.read_text()
    assert str(root) not in text and "file:" not in text
    for link in links.links:
        assert not link.startswith("/") and "://" not in link, link
        assert link.startswith("#") or (page.parent / link).is_file(), link
    return links


def view_data(page: Path) -> dict:
    return json.loads(parsed(page).by_id["example-data"])


@pytest.mark.slow
def test_a_run_without_a_study_makes_a_page_that_works_when_moved(stored_run, capsys, tmp_path):
    page = stored_run / "report" / "index.html"
    code, _ = report(capsys, "--output-dir", str(stored_run / "out"), "--out", str(page))
    assert code == 0
    moved = tmp_path / "elsewhere"
    shutil.move(str(page.parent), moved)
    links = assert_self_contained(moved / "index.html", stored_run)
    (run_dir,) = (stored_run / "out").glob("rte-*")
    figures = {path.name for path in (run_dir / "figures").glob("*.png")}
    assert links.images == len(figures) > 0
    assert {Path(link).name for link in links.links if link.endswith(".png")} == figures
    assert links.ids.index("examples") < links.ids.index("tasks") and "study" not in links.ids


@pytest.mark.slow
def test_the_page_holds_the_runs_parameters_and_every_analysis(stored_run, capsys):
    page = stored_run / "report" / "params.html"
    assert report(capsys, "--output-dir", str(stored_run / "out"), "--out", str(page))[0] == 0
    (summary_path,) = (stored_run / "out").glob("rte-*/summary.json")
    summary = read_json(summary_path)
    text = html.unescape(page.read_text())
    run = summary["run"]
    assert describe_recipe(run["recipe"]) in text and run["key"] in text and run["finetune_key"] in text
    assert f"{run['num_eval_examples']} (dev)" in text
    for name, entry in summary["analyses"].items():
        assert f"<h4>{name} <small>version {entry['version']}</small></h4>" in text
        for key in entry["keys"].values():
            assert key in text


@pytest.mark.slow
def test_the_per_example_view_has_the_stored_maps_of_both_checkpoints(stored_run, capsys):
    page = stored_run / "report" / "view.html"
    assert report(capsys, "--output-dir", str(stored_run / "out"), "--out", str(page))[0] == 0
    (summary_path,) = (stored_run / "out").glob("rte-*/summary.json")
    stored = read_json(summary_path)["analyses"]["examples"]["result"]
    (run,) = view_data(page)["runs"]
    assert (run["layers"], run["heads"], run["before"], run["after"]) == (2, 4, "pre-trained", "fine-tuned")
    assert len(run["examples"]) == len(stored["per_checkpoint"]["finetuned"]["examples"]) == 4
    for shown, before, after in zip(
        run["examples"],
        stored["per_checkpoint"]["pretrained"]["examples"],
        stored["per_checkpoint"]["finetuned"]["examples"],
    ):
        assert (shown["tokens"], shown["before"], shown["after"]) == (before["tokens"], before["maps"], after["maps"])
        assert shown["tokens"][0] == "[CLS]" and len(shown["before"]) == 2 * 2 * 4 * len(shown["tokens"]) ** 2
        assert shown["most_changed"]["layer"] in (1, 2)


@pytest.mark.slow
def test_a_study_comes_first_with_its_findings_and_each_tasks_spread_over_seeds(stored_study, capsys):
    page = stored_study / "report" / "index.html"
    assert report(capsys, "--output-dir", str(stored_study / "out"), "--out", str(page))[0] == 0
    links = assert_self_contained(page, stored_study)
    assert links.ids.index("study") < links.ids.index("examples") < links.ids.index("tasks")
    study = read_json(stored_study / "out" / "studies" / "tiny" / "study.json")
    text = html.unescape(page.read_text())
    assert study["findings"]
    for finding in study["findings"].values():  # once: the claim's row, not its sentence as well
        assert text.count(finding["claim"]) == 1 and finding["text"] not in text
        holds = finding.get("holds_as", "holds")
        cells = "".join(f"<td>{task_text(cell, holds)}</td>" for cell in finding["per_task"].values())
        assert f"<th>{finding['claim']}</th><td>{finding['tasks_every_seed']} of {finding['tasks']}</td>{cells}" in text
        for cell in finding["per_task"].values():  # each seed's evidence, or its state where it has none
            assert all(record["state"] in text or seed_text(record) in text for record in cell["per_seed"])
    for task, entry in study["tasks"].items():
        assert f'id="task-{task}"' in text
        for name in entry["headline"]:
            assert mean_sd(entry["metrics"][name]) in text
    study_figures = {path.name for path in (stored_study / "out" / "studies" / "tiny" / "figures").glob("*.png")}
    assert study_figures and study_figures <= {Path(link).name for link in links.links}
    assert [run["label"].split(" (")[0] for run in view_data(page)["runs"]] == ["rte seed 42", "mrpc seed 42"]


@pytest.mark.slow
def test_a_study_is_found_by_name_or_folder_and_an_unknown_one_is_one_line(stored_study, capsys):
    out = stored_study / "out"
    for chosen in ("tiny", str(out / "studies" / "tiny")):
        assert (
            report(
                capsys, "--output-dir", str(out), "--study", chosen, "--out", str(stored_study / "by" / "index.html")
            )[0]
            == 0
        )
    code, err = report(capsys, "--output-dir", str(out), "--study", "nope", "--out", str(stored_study / "x.html"))
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "--study nope: no study.json" in err and "studies under" in err and "tiny" in err


def test_nothing_stored_is_one_clear_line(capsys, tmp_path):
    code, err = report(capsys, "--output-dir", str(tmp_path), "--out", str(tmp_path / "r" / "index.html"))
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "nothing stored under" in err and "run `harness run` or `harness study` first" in err
    code, err = report(capsys, "--out", str(tmp_path / "page.txt"))
    assert code == 2 and "--out" in err and "must end in .html" in err


@pytest.mark.slow
def test_an_unwritable_page_folder_is_one_line(stored_run, capsys, tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("a file where the page's folder would be")
    code, err = report(capsys, "--output-dir", str(stored_run / "out"), "--out", str(blocked / "index.html"))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--out" in err and "cannot write there" in err


@pytest.mark.slow
def test_names_with_markup_or_ampersands_are_shown_as_text(stored_study, capsys, tmp_path):
    """A study named with a script element and a run folder named with one and an ``&`` show as
    text: the page's templates escape every stored value by default."""
    out = tmp_path / "out"
    shutil.copytree(stored_study / "out" / "studies" / "tiny", out / "studies" / "odd")
    study = read_json(out / "studies" / "odd" / "study.json")
    first, run_name = study["runs"][0], "rte-<script>alert(1)&co"  # a folder name holds no "/"
    shutil.copytree(stored_study / "out" / first["folder"], out / run_name)
    study.update(name=f"{MARKUP} & co", runs=[{**first, "folder": run_name}])
    (out / "studies" / "odd" / "study.json").write_text(json.dumps(study))
    seal(out / "studies" / "odd", study)  # as the harness would have written them, names and all
    seal(out / run_name, read_json(out / run_name / "summary.json"))
    page = tmp_path / "report" / "index.html"
    assert report(capsys, "--output-dir", str(out), "--out", str(page))[0] == 0
    text = page.read_text()
    assert "<script>alert" not in text and "co</code>" in text
    assert text.count("&lt;script&gt;alert(1)&lt;/script&gt; &amp; co") == 3  # title, heading, study section
    assert "<code>rte-&lt;script&gt;alert(1)&amp;co</code>" in text
    links = assert_self_contained(page, tmp_path)  # the figures copied under the odd name load from it
    assert any(link.startswith(f"figures/{run_name}/") for link in links.links)


def test_the_inline_data_cannot_end_its_script_element():
    data = {"text": f"<!--{MARKUP}</SCRIPT>"}
    text = str(inline_json(data))
    assert "<" not in text and json.loads(text) == data


@pytest.mark.slow
def test_every_run_is_shown_by_default_and_runs_or_study_choose(stored_study, capsys, tmp_path):
    out = stored_study / "out"
    (study_run, *_) = sorted(out.glob("rte-*"))
    outside = out / "rte-outside-the-study"  # a run folder no study lists
    shutil.copytree(study_run, outside)
    page = tmp_path / "page" / "index.html"

    def shown(*argv: str) -> set[str]:
        assert report(capsys, "--output-dir", str(out), "--out", str(page), *argv)[0] == 0
        figures = {path.parent.name for path in (page.parent / "figures").rglob("*.png")}
        return figures | ({"study"} if 'id="study"' in page.read_text() else set())

    everything = shown()
    assert {"study", outside.name, study_run.name} <= everything
    assert outside.name not in shown("--study", "tiny")
    assert shown("--runs", outside.name) == {outside.name}  # and the copies of the others are gone
    assert shown("--runs", str(study_run), "--study", "tiny") == {study_run.name, "study-tiny", "study"}
    code, err = report(capsys, "--output-dir", str(out), "--runs", "nope", "--out", str(page))
    assert (
        code == 2 and err.startswith("error: --runs nope: no whole summary.json there") and len(err.splitlines()) == 1
    )
    shutil.rmtree(outside)


@pytest.mark.slow
def test_the_page_and_the_export_go_under_the_output_folder_by_default(stored_run, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # where ./outputs would be
    out = stored_run / "out"
    code, _ = report(capsys, "--output-dir", str(out))
    assert code == 0 and (out / "report" / "index.html").is_file()
    assert main(["export", "--output-dir", str(out)]) == 0
    assert {path.name for path in (out / "export").iterdir()} == {"runs.parquet", "runs.csv"}
    assert not (tmp_path / "outputs").exists()
    shutil.rmtree(out / "report")
    shutil.rmtree(out / "export")


@pytest.mark.slow
def test_runs_expands_a_quoted_glob_pattern_itself(stored_study, capsys, tmp_path, monkeypatch):
    out = stored_study / "out"
    runs = sorted(path.parent for path in out.glob(f"*-seed*/{SUMMARY}"))  # the study's four
    rte = [str(path) for path in runs if path.name.startswith("rte-")]
    assert len(rte) == 2 and matching_runs(str(out / "*-seed*"), out) == [str(path) for path in runs]
    assert matching_runs("rte-*-seed*", out) == rte  # a name under the output folder
    assert matching_runs("rte-nope", out) == ["rte-nope"]  # no pattern: as given
    page = tmp_path / "page" / "index.html"
    monkeypatch.chdir(out.parent)
    for pattern in ("out/rte-*-seed*", "rte-*-seed*"):
        assert report(capsys, "--output-dir", "out", "--out", str(page), "--runs", pattern)[0] == 0
        assert {path.parent.name for path in (page.parent / "figures").rglob("*.png")} == {Path(r).name for r in rte}
    for pattern in ("out/qqp-*", "../../*"):  # nothing, or no run folder: the pattern named, nothing written
        code, err = report(capsys, "--output-dir", "out", "--out", str(tmp_path / "none.html"), "--runs", pattern)
        assert code == 2 and len(err.strip().splitlines()) == 1
        assert err.startswith(f"error: --runs {pattern}: no run folder (a folder with summary.json) matches it")
        assert not (tmp_path / "none.html").exists()
