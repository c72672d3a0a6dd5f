"""``harness data list`` and ``harness data download``: where each corpus is, fetching it from a
real HTTP server on 127.0.0.1 (``$HARNESS_DATA_MIRROR``), and one-line errors; ``harness tasks``."""

from __future__ import annotations

from pathlib import Path

import pytest

import harness.corpus_lookup
from harness.cli import build_parser, main, subcommands
from tasks.registry import TASKS
from tests.fixtures import SHARED_DATA, mirror_shared_corpora

needs_shared = pytest.mark.skipif(
    not all((SHARED_DATA / name).is_dir() for name in ("litbank", "ud-english-ewt")),
    reason="needs the corpora in ../shared/data",
)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HARNESS_DATA", str(tmp_path / "cache"))
    return tmp_path / "cache"


def data(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, list[str], str]:
    code = main(["data", *argv])
    captured = capsys.readouterr()
    return code, captured.out.splitlines(), captured.err


@needs_shared
def test_list_says_the_version_licence_and_place_of_each_corpus(cache, capsys):
    code, lines, _ = data(capsys)
    assert code == 0
    assert lines[0] == (
        f"ud-english-ewt r2.16 (CC BY-SA 4.0, 16.0 MB): present in ../shared/data (the development "
        f"copy): {SHARED_DATA / 'ud-english-ewt'}"
    )
    assert lines[2].startswith("litbank 3e50db0 (CC BY 4.0, 13.0 MB): present in ../shared/data")
    assert lines[-1].startswith(f"data cache: {cache} ($HARNESS_DATA moves it)")


def test_list_names_the_command_that_fetches_an_absent_corpus(cache, capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(harness.corpus_lookup, "SHARED_DATA", tmp_path / "no-shared-data")
    code, lines, _ = data(capsys, "list", "litbank")
    assert code == 0 and len(lines) == 3
    assert lines[0] == (
        f"litbank 3e50db0 (CC BY 4.0, 13.0 MB): absent; `harness data download litbank` puts it in "
        f"{cache / 'litbank-3e50db0'}"
    )
    assert lines[1] == ("  LitBank coreference, for the coreference analysis; from https://github.com/dbamman/litbank")


@needs_shared
def test_download_fills_the_cache_from_the_mirror_then_list_finds_it_there(cache, capsys, mirror, monkeypatch):
    _, root, host = mirror
    mirror_shared_corpora(root)
    monkeypatch.setenv("HARNESS_DATA_MIRROR", host)
    code, lines, err = data(capsys, "download", "ud-english-ewt")
    folder = cache / "ud-english-ewt-r2.16"
    assert code == 0 and lines == [f"ud-english-ewt r2.16: downloaded and verified, {folder}"]
    assert f"downloading UD English EWT r2.16 (CC BY-SA 4.0, 3 files, 16.0 MB) from {host} into {folder}" in err
    assert sorted(path.name for path in folder.iterdir()) == [
        "LICENSE.txt",
        "en_ewt-ud-dev.conllu",
        "en_ewt-ud-train.conllu",
    ]
    again = data(capsys, "download", "ud-english-ewt")[1]
    assert again == [f"ud-english-ewt r2.16: already in the data cache, {folder}"]
    assert data(capsys, "list", "ud-english-ewt")[1][0].endswith(f"present in the data cache: {folder}")


def test_a_failed_download_is_one_line_and_leaves_the_cache_empty(cache, capsys, mirror, monkeypatch):
    _, _, host = mirror  # serves nothing: every file is a 404
    monkeypatch.setenv("HARNESS_DATA_MIRROR", host)
    code, lines, err = data(capsys, "download", "litbank")
    assert code == 2 and lines == []
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"error: {host}/dbamman/litbank/3e50db0ffc033d7ccbb94f4d88f6b99210328ed8/coref/conll/")
    assert "HTTP 404" in last and "Traceback" not in err
    assert not cache.exists() or not any(path.is_file() for path in cache.rglob("*"))


def test_an_unknown_corpus_is_one_line(cache, capsys):
    code, _, err = data(capsys, "download", "penn-treebank")
    assert code == 2 and err.strip() == "error: unknown corpus 'penn-treebank'; valid: ud-english-ewt, litbank"


def test_tasks_lists_each_task_the_task_flag_takes_with_its_labels_metrics_and_data(capsys, monkeypatch):
    monkeypatch.setenv("GLUE_DIR", "/data/glue")
    assert main(["tasks"]) == 0
    header, *rows, data_line, own_line = capsys.readouterr().out.splitlines()
    assert header.split()[:3] == ["task", "inputs", "labels"]
    assert [row.split()[0] for row in rows] == list(TASKS)
    rows_by_task = dict(zip(TASKS, rows))
    assert "pair of texts" in rows_by_task["rte"] and "entailment, not_entailment" in rows_by_task["rte"]
    assert "one text" in rows_by_task["cola"] and "matthews" in rows_by_task["cola"]
    assert "a score (regression)" in rows_by_task["stsb"] and "pearson, spearman" in rows_by_task["stsb"]
    assert "dev_matched, dev_mismatched" in rows_by_task["mnli"]
    assert data_line.startswith("data: the GLUE TSV folder of --data-dir or $GLUE_DIR (now /data/glue)")
    assert own_line.startswith("your own task: --task a spec file (.toml or .yaml")
    task_help = next(action.help for action in subcommands(build_parser())["run"]._actions if action.dest == "task")
    assert f"{', '.join(TASKS)} (`harness tasks` describes them)" in task_help
