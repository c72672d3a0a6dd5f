"""A run's summary entry of one analysis, typed by what its view declares it stores.

summary.json holds, per analysis, one entry of a single schema (`harness.run.engine.summary_entry`):
who measured what on which checkpoints and pairs, and the ``result``. A per-checkpoint
analysis's result is `PerCheckpoint`: each checkpoint's stored result and each pair's
comparison, of the TypedDicts its view declares (`harness.views.base.View.stored` and
``compared``); a joint analysis's result is its one stored TypedDict (which holds its pairs).

`Entry` is generic over that result, so every reader of a view's entry is checked by mypy
against the keys and value types the analysis writes: ``entry["result"]["per_checkpoint"]
["finetuned"]["overall"]`` is a known key of a known type, and a misspelt one fails the type
check, not a run. `decoded` is where the JSON read from disk becomes that type, once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Generic, NotRequired, TypedDict, TypeVar, cast

if TYPE_CHECKING:  # for the type checker alone (it ships typing_extensions); Python 3.13 has typing.ReadOnly
    from typing_extensions import ReadOnly

from harness.results.store import JsonObject, Settings, SourceIdentity, SourceNotes

Result = TypeVar("Result")  # an entry's result: `PerCheckpoint`, or a joint analysis's stored TypedDict
Stored = TypeVar("Stored")  # one checkpoint's stored result (a view's ``stored`` TypedDict)
Compared = TypeVar("Compared")  # one pair's comparison (a view's ``compared`` TypedDict)


class PerCheckpoint(TypedDict, Generic[Stored, Compared]):
    """A per-checkpoint analysis's result: each checkpoint's stored result and each pair's
    comparison, by checkpoint and pair name (``"pretrained->finetuned"``)."""

    per_checkpoint: dict[str, Stored]
    per_pair: dict[str, Compared]


class Pairs(TypedDict, Generic[Compared]):
    """What every analysis's result holds, joint or per checkpoint: each pair's comparison (read-only
    here, so that a reader of a part of a comparison reads any comparison that has that part)."""

    per_pair: ReadOnly[Mapping[str, Compared]]


class Source(TypedDict):
    """What the analysis read: the source's identity (`harness.results.store.ResultIdentity`'s
    inputs) and its notes (counts, skipped inputs), as the source described them."""

    identity: SourceIdentity
    notes: SourceNotes


class Entry(TypedDict, Generic[Result]):
    """One analysis's entry of summary.json: its name and version, whether it measured all
    checkpoints at once, the checkpoints and pairs, each stored result's key, the source, the
    settings its result depends on, the ``result``, the papers' numbers (``reference``) and,
    for an analysis that reads others' results, what it read of them (``related``)."""

    analysis: str
    version: int
    joint: bool
    checkpoints: list[str]
    pairs: list[list[str]]
    pair_names: list[str]
    keys: dict[str, str]
    source: Source
    settings: Settings
    result: ReadOnly[Result]  # read-only: an entry of `PerCheckpoint` results is also one of `Pairs`
    reference: JsonObject  # the papers' numbers, as each analysis words them
    related: NotRequired[JsonObject]  # other analyses' results, by the name the analysis asked them by


# Any analysis's entry, where code loops over every analysis (the run, the report, the study): its
# result's type is its view's to declare, and the view's methods, which declare it, receive the entry.
AnyEntry = Entry[Any]


def decoded(entry: Mapping[str, Any]) -> AnyEntry:
    """``entry`` as read from summary.json, as the type its view reads. Not checked again here:
    the results store checked each result's keys against the same declared shape when it was
    written (`harness.results.shapes.check`), and a summary is read only when its seal matches
    (`harness.results.summary`). Its result is Any until a view's methods, which declare their
    own `Entry` type, receive it."""
    return cast("AnyEntry", entry)
