"""The default corpora of the syntax, probe, feature and coreference analyses, pinned, and where they are.

Each corpus is pinned to an upstream release or commit in ``corpora.json`` (shipped with the
package): its licence, the URL its files are downloaded from, and every file's SHA-256 and
size. A corpus is looked for, in order, in the user's data cache (`data_home`: ``$HARNESS_DATA``,
else ``$XDG_CACHE_HOME/attention-shift-harness``, else ``~/.cache/attention-shift-harness``) and
in a development copy (``../shared/data`` beside a checkout, given by the caller);
`tasks.download` fills the cache. Either place holds the layout the readers take: the UD
folder with ``en_ewt-ud-{train,dev}.conllu`` side by side, LitBank's ``conll/`` folder.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from tasks.errors import InputError

MANIFEST = Path(__file__).with_name("corpora.json")
DATA_VARIABLE = "HARNESS_DATA"  # the data cache folder
MIRROR_VARIABLE = "HARNESS_DATA_MIRROR"  # a server laid out like UPSTREAM (tests, air-gapped mirrors)
UPSTREAM = "https://raw.githubusercontent.com"
CACHE_NAME = "attention-shift-harness"
CACHE, SHARED = "cache", "shared"  # the places a corpus is found in, in lookup order
DOWNLOAD_COMMAND = "harness data download"


@dataclass(frozen=True)
class CorpusFile:
    """One pinned file: its path inside the corpus folder, SHA-256 and size in bytes."""

    path: str
    sha256: str
    size: int


@dataclass(frozen=True)
class Corpus:
    """A pinned corpus: what it is, where it comes from and under which licence, and its files.

    ``url`` is the folder the file paths are relative to, below the download host;
    ``entry`` is the path inside the corpus folder that the readers take (a file or folder);
    ``shared`` is the corpus's folder in the development copy.
    """

    name: str
    title: str
    version: str
    commit: str
    licence: str
    homepage: str
    url: str
    shared: str
    entry: str
    purpose: str
    files: tuple[CorpusFile, ...]

    @property
    def folder_name(self) -> str:
        """The corpus's folder in the data cache, versioned so a new pin never mixes with an old one."""
        return f"{self.name}-{self.version}"

    @property
    def size(self) -> int:
        """Bytes of all its files."""
        return sum(file.size for file in self.files)

    def file_url(self, file: CorpusFile, host: str | None = None) -> str:
        """Where ``file`` is downloaded from: ``host`` (default `download_host`) with the upstream path."""
        return f"{(host or download_host()).rstrip('/')}/{self.url}{file.path}"


@dataclass(frozen=True)
class Location:
    """Where a corpus was found: the place (`CACHE` or `SHARED`) and its folder there."""

    corpus: Corpus
    place: str
    folder: Path

    @property
    def entry(self) -> Path:
        """The file or folder the readers take."""
        return self.folder / self.corpus.entry


def read_manifest(path: Path = MANIFEST) -> dict[str, Corpus]:
    """Every pinned corpus of the manifest at ``path``, by name."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    return {
        name: Corpus(
            name=name,
            **{key: value for key, value in fields.items() if key != "files"},
            files=tuple(CorpusFile(file, **pinned) for file, pinned in fields["files"].items()),
        )
        for name, fields in raw.items()
    }


CORPORA = read_manifest()
UD_ENGLISH_EWT, LITBANK = CORPORA["ud-english-ewt"], CORPORA["litbank"]


def get_corpus(name: str) -> Corpus:
    """The pinned corpus ``name``, or a one-line error listing the names."""
    if name not in CORPORA:
        raise InputError(f"unknown corpus {name!r}; valid: {', '.join(CORPORA)}")
    return CORPORA[name]


def data_home() -> Path:
    """The data cache: ``$HARNESS_DATA``, else the XDG cache folder's ``attention-shift-harness``."""
    if os.environ.get(DATA_VARIABLE):
        return Path(os.environ[DATA_VARIABLE]).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / CACHE_NAME


def download_host() -> str:
    """``$HARNESS_DATA_MIRROR`` when set, else the upstream host."""
    return os.environ.get(MIRROR_VARIABLE) or UPSTREAM


def cache_folder(corpus: Corpus) -> Path:
    """The corpus's folder in the data cache (whether or not it is there)."""
    return data_home() / corpus.folder_name


def missing_files(corpus: Corpus, folder: Path) -> list[CorpusFile]:
    """The corpus's files that ``folder`` lacks or holds with another size (contents are verified
    when downloaded, and hashed by the run that reads them)."""
    missing = []
    for file in corpus.files:
        path = folder / file.path
        if not path.is_file() or path.stat().st_size != file.size:
            missing.append(file)
    return missing


def places(corpus: Corpus, shared_data: Path | None) -> list[tuple[str, Path]]:
    """Where ``corpus`` is looked for, in order: the cache, then the development copy under
    ``shared_data`` (None: there is none, as for an installed package)."""
    development = [(SHARED, shared_data / corpus.shared)] if shared_data is not None else []
    return [(CACHE, cache_folder(corpus)), *development]


def find(corpus: Corpus, shared_data: Path | None) -> Location | None:
    """The first place of `places` that holds every file of ``corpus``, or None."""
    for place, folder in places(corpus, shared_data):
        if not missing_files(corpus, folder):
            return Location(corpus, place, folder)
    return None
