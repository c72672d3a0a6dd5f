"""The typed entry is a contract mypy enforces: a view that reads a key its analysis does not
store, or reads a stored value as another type, fails the type check (`harness.results.entries`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from mypy import api

pytestmark = (
    pytest.mark.slow
)  # mypy reads the harness's modules: about 5 s a check (a shared cache: less after the first)

ROOT = Path(__file__).resolve().parents[3]

READER = """
from harness.results.entries import Entry, PerCheckpoint
from harness.views.base import per_checkpoint_results, per_pair_results
from harness.views.sinks import SinksComparison, SinksResult


def reads(entry: Entry[PerCheckpoint[SinksResult, SinksComparison]]) -> None:
    stats = per_checkpoint_results(entry)["finetuned"]
    mean: float = stats["overall"]["mean"]["cls"]
    changes = per_pair_results(entry)["pretrained->finetuned"]
    evidence = changes["evidence"]
    {wrong}
"""


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mypy_cache")


def checked(reader: str, tmp_path: Path, cache: Path) -> str:
    """mypy's report on one reader module, checked with the project's settings."""
    module = tmp_path / "reader.py"
    module.write_text(reader)
    report, errors, _ = api.run(
        [
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(cache),
            "--follow-imports=silent",
            str(module),
        ]
    )
    return report + errors


def test_a_reader_of_the_stored_keys_passes(tmp_path: Path, cache: Path) -> None:
    report = checked(READER.format(wrong="del evidence, mean"), tmp_path, cache)
    assert "Success" in report, report


def test_a_misspelt_stored_key_fails_the_type_check(tmp_path: Path, cache: Path) -> None:
    report = checked(
        READER.format(wrong='count = per_checkpoint_results(entry)["finetuned"]["num_item"]'), tmp_path, cache
    )
    assert 'TypedDict "SinksResult" has no key "num_item"' in report, report


def test_a_stored_value_read_as_another_type_fails_the_type_check(tmp_path: Path, cache: Path) -> None:
    report = checked(
        READER.format(wrong='name: str = per_checkpoint_results(entry)["finetuned"]["num_items"]'), tmp_path, cache
    )
    assert 'Incompatible types in assignment (expression has type "int", variable has type "str")' in report, report


def test_a_misspelt_key_of_stored_evidence_fails_the_type_check(tmp_path: Path, cache: Path) -> None:
    """Evidence is declared too (`harness.views.evidence.Change`): its keys and their types are checked."""
    report = checked(READER.format(wrong='low, high = evidence["raw_share_cls_change"]["intervall"]'), tmp_path, cache)
    assert 'TypedDict "Change" has no key "intervall"' in report, report
    report = checked(READER.format(wrong='word: str = evidence["raw_share_cls_change"]["value"]'), tmp_path, cache)
    assert 'expression has type "float", variable has type "str"' in report, report


STUDY_READER = """
from harness.results.study_record import StudyRecord
from harness.views.cosine import cosine_part


def reads(study: StudyRecord) -> None:
    for entry in study["tasks"].values():
        per_layer = cosine_part(entry)["cosine"]["per_layer"]
        {wrong}
"""


def test_a_misspelt_key_of_a_views_part_of_a_study_task_fails_the_type_check(tmp_path: Path, cache: Path) -> None:
    """A task's aggregate is open (each view adds its keys), but a view reads its own part through the
    type its `across_seeds` returns (`harness.results.study_record.view_part`): its keys are checked."""
    report = checked(STUDY_READER.format(wrong="del per_layer"), tmp_path, cache)
    assert "Success" in report, report
    report = checked(STUDY_READER.format(wrong='grid = cosine_part(entry)["cosine"]["per_haed"]'), tmp_path, cache)
    assert 'TypedDict "CosineSeries" has no key "per_haed"' in report, report
