"""The report in a real headless Chromium, from ``file://``: every figure loads, the per-example
view draws the real MiniLM's maps, and no script error; a missing figure and a script error are
seen as such (so the checks can fail)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.cli import main
from tests.fixtures import GLUE_DIR, harness_arguments, tiny_run_arguments

CHROMIUM = next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        CHROMIUM is None,
        reason="no headless browser: install chromium (apt-get install chromium) to load the report in one",
    ),
    pytest.mark.skipif(not GLUE_DIR.is_dir(), reason=f"real GLUE data not found at {GLUE_DIR}"),
]


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    """The report of a small real run: MiniLM on RTE, a few analyses and the example maps."""
    root = tmp_path_factory.mktemp("report")
    assert (
        main(
            harness_arguments(
                "run",
                "minilm",
                GLUE_DIR,
                root,
                *("--max-train-examples", "64", "--epochs", "1", "--max-eval-examples", "80", "--max-length", "48"),
                *("--analyses", "cosine", "surface", "examples"),
            )
        )
        == 0
    )
    out = root / "report" / "index.html"
    assert main(["report", "--output-dir", str(root / "out"), "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def trajectory_page(tiny_model_dir, tiny_data, tmp_path_factory) -> Path:
    """The report of a tiny run whose model was kept at steps 2 and 4 of its 6 (the example maps alone)."""
    root = tmp_path_factory.mktemp("trajectory_report")
    along = ("--epochs", "2", "--trajectory", "0.34", "0.67", "--analyses", "examples", "--no-figures")
    assert main(tiny_run_arguments(tiny_model_dir, tiny_data, root, *along)) == 0
    out = root / "report" / "index.html"
    assert main(["report", "--output-dir", str(root / "out"), "--out", str(out)]) == 0
    return out


def browse(page: Path, profile: Path, fragment: str = "") -> tuple[str, str]:
    """The page's DOM once its scripts ran and its images loaded (virtual time), and the browser's log;
    ``fragment`` (``#step=0``) is added to the page's address."""
    done = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--user-data-dir={profile}",
            "--virtual-time-budget=10000",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
            page.as_uri() + fragment,
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, done.stderr


def attributes(dom: str, element_id: str | None = None) -> dict[str, str]:
    """The attributes of the element with ``element_id``, or of ``<html>``."""
    opening = "<html" if element_id is None else rf'<[a-z]+ id="{element_id}"'
    tag = re.search(rf"{opening}([^>]*)>", dom).group(1)
    return dict(re.findall(r'([\w-]+)="([^"]*)"', tag))


def test_every_figure_loads_the_view_draws_and_no_script_fails(page, tmp_path):
    dom, log = browse(page, tmp_path / "profile")
    status = attributes(dom, "report-status")
    images = len(re.findall(r"<img ", dom))
    assert images > 5 and status["data-images"] == status["data-loaded"] == str(images)
    assert (status["data-state"], status["data-failed"], status["data-errors"], status["data-view"]) == (
        "ready",
        "0",
        "0",
        "drawn",
    )
    view = attributes(dom, "view-maps")
    assert view["data-drawn"] == "yes" and view["data-example"].startswith("rte-")
    assert "hidden" in attributes(dom, "view-step-control")  # no steps kept along this run's fine-tuning
    assert 1 <= int(view["data-layer"]) <= 6 and 1 <= int(view["data-head"]) <= 12
    assert "data-errors" not in attributes(dom)  # set by the page's first script on any error
    assert "Uncaught" not in log and "Failed to load resource" not in log


def test_a_missing_figure_and_a_script_error_are_reported(page, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(page.parent, broken)
    next((broken / "figures").rglob("*.png")).unlink()
    text = (broken / "index.html").read_text()
    (broken / "index.html").write_text(text.replace("</body>", "<script>noSuchFunction();</script></body>"))
    dom, _ = browse(broken / "index.html", tmp_path / "profile")
    status = attributes(dom, "report-status")
    assert (status["data-state"], status["data-failed"]) == ("problems", "1")
    assert attributes(dom)["data-errors"] == status["data-errors"] == "1"
    assert "noSuchFunction is not defined" in re.search(r'<pre id="report-errors">([^<]*)</pre>', dom).group(1)


def test_the_slider_shows_an_example_at_each_step_kept_along_the_fine_tuning(trajectory_page, tmp_path):
    """The page holds each example's maps at every kept step (not the end's again); the view opens at the
    end of the fine-tuning, and a link opens it at a kept step, whose maps it draws and names."""
    embedded = re.search(
        r'<script type="application/json" id="example-data">(.*?)</script>', trajectory_page.read_text()
    )
    (run,) = json.loads(embedded.group(1))["runs"]
    assert run["steps"] == ["step 2 of 6 (33%)", "step 4 of 6 (67%)"]
    for example in run["examples"]:
        assert len(example["steps"]) == 2 and len(set(example["steps"]) | {example["after"]}) == 3
    ends, _ = browse(trajectory_page, tmp_path / "profile")
    at_first, log = browse(trajectory_page, tmp_path / "profile-step", "#step=0")
    assert (attributes(ends, "view-step")["max"], attributes(ends, "view-maps")["data-step"]) == ("2", "final")
    assert "hidden" not in attributes(ends, "view-step-control")
    assert '<span id="view-step-label">end of the fine-tuning</span>' in ends
    view = attributes(at_first, "view-maps")
    assert view["data-drawn"] == "yes" and view["data-step"] == "step 2 of 6 (33%)"
    title = re.search(r'<figcaption id="view-title-after">([^<]*)</figcaption>', at_first).group(1)
    assert title.startswith("fine-tuned at step 2 of 6 (33%) (layer ")
    status = attributes(at_first, "report-status")
    assert (status["data-state"], status["data-errors"]) == ("ready", "0") and "Uncaught" not in log
    # #step= is a training step: step 4 is the second kept one, whose own most changed head is named
    at_four, _ = browse(trajectory_page, tmp_path / "profile-four", "#step=4")
    assert attributes(at_four, "view-maps")["data-step"] == "step 4 of 6 (67%)"
    note = re.search(r'<p id="view-note">([^<]*)</p>', at_four).group(1)
    assert "the head that changed most on it by step 4 of 6 (67%): layer " in note


def test_the_page_of_typed_inputs_draws_each_input_without_a_script_error(tiny_model_dir, tiny_data, tmp_path):
    """``harness maps``'s page: the report's per-example view of the inputs typed for a run, alone."""
    assert main(tiny_run_arguments(tiny_model_dir, tiny_data, tmp_path, "--analyses", "cosine", "--no-figures")) == 0
    (folder,) = (tmp_path / "out").glob("rte-*")
    for text, pair in (("the cat sat on the mat .", "a dog sat"), ("he ran", None)):
        assert main(["maps", str(folder), "--text", text, *(["--pair", pair] if pair else [])]) == 0
    dom, log = browse(folder / "maps" / "index.html", tmp_path / "profile")
    view = attributes(dom, "view-maps")
    assert view["data-drawn"] == "yes" and view["data-example"] == "typed-1"
    status = attributes(dom, "report-status")
    assert (status["data-state"], status["data-errors"], status["data-view"]) == ("ready", "0", "drawn")
    assert "Uncaught" not in log and "data-errors" not in attributes(dom)
    said = re.search(r'<p id="report-status"[^>]*>([^<]*)</p>', dom).group(1)
    assert said == "no figures on this page; per-example view drawn"  # not "0 of 0 figures loaded"
    text = re.search(r'<p id="view-text">([^<]*)</p>', dom).group(1)
    assert "Predicted: pre-trained (untrained head): " in text and "; fine-tuned: " in text
