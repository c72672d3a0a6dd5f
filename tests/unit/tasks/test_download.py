"""Downloading a pinned corpus from a real HTTP server on 127.0.0.1: verified, atomic, resumable,
one-line errors (checksum mismatch, connection dropped mid-file, 404, host unreachable)."""

from __future__ import annotations

import hashlib
import socket
from dataclasses import replace
from pathlib import Path

import pytest

from tasks.corpora import (
    CACHE,
    CORPORA,
    LITBANK,
    SHARED,
    UD_ENGLISH_EWT,
    Corpus,
    CorpusFile,
    cache_folder,
    data_home,
    find,
)
from tasks.download import download_corpus
from tasks.errors import InputError
from tests.fixtures import SHARED_DATA, mirror_shared_corpora

CONTENTS = {"conll/a.conll": b"the cat sat .\n" * 40, "conll/b.conll": b"it ran .\n" * 25}
UPSTREAM_FOLDER = "owner/tiny-corpus/0123abc/coref/"


def tiny_corpus() -> Corpus:
    files = tuple(CorpusFile(path, hashlib.sha256(body).hexdigest(), len(body)) for path, body in CONTENTS.items())
    return replace(LITBANK, name="tiny", version="0123abc", url=UPSTREAM_FOLDER, files=files)


def serve(root: Path, contents: dict[str, bytes]) -> None:
    for path, body in contents.items():
        target = root / UPSTREAM_FOLDER / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(body)


def files_under(folder: Path) -> list[Path]:
    return sorted(path for path in folder.rglob("*") if path.is_file()) if folder.exists() else []


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HARNESS_DATA", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_a_download_is_verified_renamed_into_place_and_not_repeated(mirror, cache, capsys):
    server, root, host = mirror
    serve(root, CONTENTS)
    corpus = tiny_corpus()
    folder = download_corpus(corpus, host=host)
    assert folder == cache / "tiny-0123abc" == cache_folder(corpus)
    assert {str(path.relative_to(folder)): path.read_bytes() for path in files_under(folder)} == CONTENTS
    assert "downloading LitBank coreference 0123abc (CC BY 4.0, 2 files" in capsys.readouterr().err
    assert find(corpus, cache / "no-shared-copy").place == CACHE
    requests = len(server.requests)
    assert download_corpus(corpus, host=host) == folder
    assert len(server.requests) == requests  # everything was there: nothing fetched again


def test_a_checksum_mismatch_names_the_file_the_url_and_both_hashes_and_keeps_nothing(mirror, cache):
    server, root, host = mirror
    serve(root, {**CONTENTS, "conll/a.conll": b"another release\n"})
    corpus = tiny_corpus()
    with pytest.raises(InputError) as error:
        download_corpus(corpus, host=host)
    message = str(error.value)
    url = f"{host}/{UPSTREAM_FOLDER}conll/a.conll"
    served = hashlib.sha256(b"another release\n").hexdigest()
    pinned = corpus.files[0]
    assert "\n" not in message and message.startswith(
        f"{url}: conll/a.conll has SHA-256 {served} (16 bytes), pinned {pinned.sha256} ({pinned.size} bytes); "
        "nothing was kept"
    )
    assert files_under(cache) == [] and not cache_folder(corpus).exists()


def test_a_connection_dropped_mid_file_leaves_no_partial_file_and_a_rerun_completes(mirror, cache):
    server, root, host = mirror
    serve(root, CONTENTS)
    corpus = tiny_corpus()
    server.cut_short.add(f"/{UPSTREAM_FOLDER}conll/a.conll")
    with pytest.raises(InputError) as error:
        download_corpus(corpus, host=host)
    size = len(CONTENTS["conll/a.conll"])
    assert "\n" not in str(error.value)
    assert f"a.conll: the connection closed after {size // 2} of {size} bytes of conll/a.conll" in str(error.value)
    assert "harness data download" in str(error.value)
    assert files_under(cache) == []
    folder = download_corpus(corpus, host=host)
    assert {str(path.relative_to(folder)): path.read_bytes() for path in files_under(folder)} == CONTENTS


def test_a_file_missing_on_the_server_is_a_404_line(mirror, cache):
    server, root, host = mirror
    serve(root, {"conll/a.conll": CONTENTS["conll/a.conll"]})
    with pytest.raises(InputError) as error:
        download_corpus(tiny_corpus(), host=host)
    assert str(error.value).startswith(f"{host}/{UPSTREAM_FOLDER}conll/b.conll: HTTP 404 ")
    assert "\n" not in str(error.value)


def test_an_unreachable_host_is_one_line_and_writes_nothing(cache):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(InputError) as error:
        download_corpus(tiny_corpus(), host=f"http://127.0.0.1:{port}")
    assert "could not connect" in str(error.value) and "offline?" in str(error.value)
    assert files_under(cache) == []


@pytest.mark.skipif(not (SHARED_DATA / "ud-english-ewt").is_dir(), reason="needs ../shared/data/ud-english-ewt")
def test_the_pinned_treebank_downloads_from_the_mirror_variable_into_the_layout_the_readers_take(
    mirror, cache, monkeypatch
):
    server, root, host = mirror
    mirror_shared_corpora(root)
    monkeypatch.setenv("HARNESS_DATA_MIRROR", host)
    download_corpus(UD_ENGLISH_EWT)
    location = find(UD_ENGLISH_EWT, SHARED_DATA)
    assert location.place == CACHE and location.entry == cache / "ud-english-ewt-r2.16" / "en_ewt-ud-dev.conllu"
    assert (location.folder / "en_ewt-ud-train.conllu").is_file()  # beside dev: the probes find it by name


@pytest.mark.skipif(not (SHARED_DATA / "litbank").is_dir(), reason="needs ../shared/data")
@pytest.mark.parametrize("name", CORPORA)
def test_the_pinned_files_are_the_shared_copies(name):
    corpus = CORPORA[name]
    folder = SHARED_DATA / corpus.shared
    pinned = {file.path: (file.sha256, file.size) for file in corpus.files}
    copies = {
        str(path.relative_to(folder)): (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_size)
        for path in folder.rglob("*")
        if path.is_file() and str(path.relative_to(folder)) in pinned
    }
    assert copies == pinned
    if name == LITBANK.name:
        assert len(pinned) == len(list((folder / "conll").iterdir())) == 100


def test_the_data_cache_is_harness_data_else_the_xdg_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("HARNESS_DATA", str(tmp_path / "mine"))
    assert data_home() == tmp_path / "mine"
    monkeypatch.delenv("HARNESS_DATA")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert data_home() == tmp_path / "xdg" / "attention-shift-harness"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert data_home() == tmp_path / "home" / ".cache" / "attention-shift-harness"


@pytest.mark.skipif(not (SHARED_DATA / "litbank").is_dir(), reason="needs ../shared/data")
def test_the_cache_comes_before_the_shared_copy_and_a_partial_cache_does_not_count(cache):
    assert find(LITBANK, SHARED_DATA).place == SHARED
    first = LITBANK.files[0]
    (cache_folder(LITBANK) / first.path).parent.mkdir(parents=True)
    (cache_folder(LITBANK) / first.path).write_bytes((SHARED_DATA / "litbank" / first.path).read_bytes())
    assert find(LITBANK, SHARED_DATA).place == SHARED  # one file of 100: not the corpus
    assert find(LITBANK, cache / "elsewhere") is None
