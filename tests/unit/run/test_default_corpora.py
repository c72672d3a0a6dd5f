"""The default corpora in a run: looked up in the data cache, then ../shared/data, then downloaded
on first use (from a real HTTP server on 127.0.0.1); without them a default run leaves their
analyses out, says so in one line and records it, and an analysis named in --analyses is a
one-line error before any model work."""

from __future__ import annotations

import html
import json
import socket
import sqlite3
from pathlib import Path

import pytest
from huggingface_hub import constants as hub_constants

import harness.corpus_lookup
from harness.cli import build_parser, configs_from, main
from harness.config import AnalysisConfig
from harness.results.store import FileHashes
from harness.run.plan import Downloads, leave_out, select_analyses, settings_identity, with_default_data
from harness.study.runner import aggregate, plan_study
from tests.fixtures import SHARED_DATA, mirror_shared_corpora, store_untouched, tiny_run_arguments

UD_READERS, LITBANK_READERS = ("syntax", "features", "probes", "surface_text", "cka_text"), ("coreference",)
DATA_FLAGS = ("--syntax-data", "--coref-data", "--corpus")


def without_data_flags(argv: list[str]) -> list[str]:
    """``argv`` without the treebank and coreference flags (and their values): the defaults are looked up."""
    kept: list[str] = []
    for index, word in enumerate(argv):
        if word not in DATA_FLAGS and (index == 0 or argv[index - 1] not in DATA_FLAGS):
            kept.append(word)
    return kept


def closed_port() -> int:
    with socket.socket() as probe:  # bound and closed at once: nothing listens there
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def no_corpora(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty data cache and no development copy: every default corpus is absent."""
    monkeypatch.setenv("HARNESS_DATA", str(tmp_path / "data-cache"))
    monkeypatch.setattr(harness.corpus_lookup, "SHARED_DATA", tmp_path / "no-shared-data")
    return tmp_path / "data-cache"


@pytest.mark.parametrize("offline", ["HF_HUB_OFFLINE", "host refuses"])
def test_an_analysis_named_without_its_corpus_is_one_line_before_any_work(
    offline, no_corpora, tiny_model_dir, tiny_data, tmp_path, capsys, caplog, monkeypatch
):
    if offline == "HF_HUB_OFFLINE":
        monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", True)
        why = "nothing is downloaded offline (HF_HUB_OFFLINE is set)"
    else:
        monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", False)
        monkeypatch.setenv("HARNESS_DATA_MIRROR", f"http://127.0.0.1:{closed_port()}")
        why = "the download failed (http://127.0.0.1:"
    argv = without_data_flags(tiny_run_arguments(tiny_model_dir, tiny_data, tmp_path, "--analyses", "cosine", "probes"))
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and not caplog.records
    if offline == "HF_HUB_OFFLINE":  # nothing tried: the error alone (a download says what it tries first)
        assert len(err.strip().splitlines()) == 1
    last = err.strip().splitlines()[-1]
    assert last.startswith(
        f"error: --analyses probes: no UD English EWT r2.16 in the data cache or ../shared/data, and {why}"
    )
    assert last.endswith(
        "run `harness data download ud-english-ewt` where the network is reachable, or pass --syntax-data"
    )
    assert store_untouched(tmp_path) and not (tmp_path / "cache").exists()
    assert not no_corpora.exists() or not any(path.is_file() for path in no_corpora.rglob("*"))


@pytest.mark.skipif(not (SHARED_DATA / "litbank").is_dir(), reason="needs the corpora in ../shared/data")
def test_the_absent_corpora_are_downloaded_on_first_use_and_hash_as_the_shared_copies(
    no_corpora, mirror, tmp_path, monkeypatch, capsys
):
    _, root, host = mirror
    mirror_shared_corpora(root)
    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HARNESS_DATA_MIRROR", host)
    assert leave_out(AnalysisConfig(), select_analyses(None), Downloads()) == {}
    err = capsys.readouterr().err
    assert (
        f"downloading LitBank coreference 3e50db0 (CC BY 4.0, 100 files, 13.0 MB) from {host} into "
        f"{no_corpora / 'litbank-3e50db0'}" in err
    )
    assert "downloading UD English EWT r2.16 (CC BY-SA 4.0, 3 files" in err
    cached = with_default_data(AnalysisConfig())
    assert cached.syntax_data == no_corpora / "ud-english-ewt-r2.16" / "en_ewt-ud-dev.conllu"
    assert cached.syntax_train_data == no_corpora / "ud-english-ewt-r2.16" / "en_ewt-ud-train.conllu"
    assert cached.coref_data == no_corpora / "litbank-3e50db0" / "conll"
    monkeypatch.setattr(harness.corpus_lookup, "SHARED_DATA", SHARED_DATA)
    monkeypatch.setenv("HARNESS_DATA", str(tmp_path / "another-empty-cache"))
    shared = with_default_data(AnalysisConfig())
    assert shared.coref_data == SHARED_DATA / "litbank" / "conll"
    # the same files wherever they are found: the same run key and stored results
    assert settings_identity(cached, FileHashes()) == settings_identity(shared, FileHashes())


def test_a_command_that_downloads_nothing_leaves_the_analyses_out_silently(no_corpora, mirror, monkeypatch):
    server, _, host = mirror
    monkeypatch.setenv("HARNESS_DATA_MIRROR", host)
    skipped = leave_out(AnalysisConfig(), select_analyses(None), Downloads(allowed=False))
    assert set(skipped) == {*UD_READERS, *LITBANK_READERS} and server.requests == []
    assert skipped["coreference"] == (
        "no LitBank coreference 3e50db0 in the data cache or ../shared/data, and this "
        "command downloads nothing; `harness data download litbank` fetches it"
    )


def test_a_study_tries_each_absent_corpus_once_not_once_per_run(
    no_corpora, mirror, tiny_model_dir, tiny_data, tmp_path, monkeypatch
):
    server, _, host = mirror  # serves nothing: every file is a 404
    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HARNESS_DATA_MIRROR", host)
    argv = without_data_flags(tiny_run_arguments(tiny_model_dir, tiny_data, tmp_path))
    settings, configs = configs_from(build_parser().parse_args(["study", *argv[1:], "--seeds", "3"]))
    plan = plan_study(settings, configs)
    assert len(plan.runs) == 3 and len(server.requests) == 1  # UD English EWT's first file; LitBank then not tried
    assert all(run.skipped == plan.runs[0].skipped for run in plan.runs)
    assert (
        plan.runs[2]
        .skipped["syntax"]
        .startswith("no UD English EWT r2.16 in the data cache or ../shared/data, and the download failed (")
    )
    assert "no download was tried after that of UD English EWT failed" in plan.runs[2].skipped["coreference"]
    assert aggregate(plan, {}, {})["analyses_skipped"] == plan.runs[0].skipped  # what every run left out


@pytest.mark.slow  # a whole tiny run
def test_a_default_run_without_its_corpora_and_offline_skips_their_analyses_says_so_and_records_it(
    no_corpora, tiny_model_dir, tiny_data, tmp_path, monkeypatch, capsys
):
    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HARNESS_DATA_MIRROR", f"http://127.0.0.1:{closed_port()}")
    assert main(without_data_flags(tiny_run_arguments(tiny_model_dir, tiny_data, tmp_path, "--no-figures"))) == 0
    out = capsys.readouterr().out.splitlines()
    skipped_lines = [line for line in out if line.startswith("skipped ")]
    assert len(skipped_lines) == 1
    assert skipped_lines[0].startswith(
        "skipped surface_text, cka_text, syntax, probes, features: no UD English EWT r2.16 in "
        "the data cache or ../shared/data, and the download failed (http://127.0.0.1:"
    )
    assert skipped_lines[0].endswith(
        "`harness data download ud-english-ewt` fetches it; coreference: no LitBank "
        "coreference 3e50db0 in the data cache or ../shared/data, and no download was "
        "tried after that of UD English EWT failed; `harness data download litbank` "
        "fetches it"
    )
    (summary_path,) = (tmp_path / "out").glob("*/summary.json")
    summary = json.loads(summary_path.read_text())
    assert set(summary["run"]["skipped"]) == {*UD_READERS, *LITBANK_READERS}
    assert summary["run"]["skipped"]["probes"].endswith("`harness data download ud-english-ewt` fetches it")
    assert not set(summary["analyses"]) & {*UD_READERS, *LITBANK_READERS}
    assert {"evaluation", "cosine"} <= set(summary["analyses"])
    with sqlite3.connect(tmp_path / "mlflow.db") as database:
        (tag,) = database.execute("SELECT value FROM tags WHERE key = 'harness.analyses_skipped'").fetchone()
    assert tag == "surface_text, cka_text, syntax, probes, features, coreference"
    page = tmp_path / "report" / "index.html"
    assert main(["report", "--output-dir", str(tmp_path / "out"), "--out", str(page)]) == 0
    text = html.unescape(page.read_text())
    assert "analyses skipped (no data)" in text and "probes = no UD English EWT r2.16 in the data cache" in text
