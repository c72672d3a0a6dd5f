"""The coreference source's check, run while a run is planned: a JSON-lines file without POS
tags is read, and the rules its head words and mention types then follow are said once."""

from __future__ import annotations

import json
import logging

from harness.config import AnalysisConfig
from harness.inputs.sources.coreference import CoreferenceSource

RECORD = {"sentences": [["Mary", "left", "."], ["She", "was", "tired"]], "clusters": [[[0, 0], [3, 3]]]}


def check(path) -> None:
    CoreferenceSource.check(AnalysisConfig(coref_data=path))


def test_documents_without_pos_tags_are_said_once(tmp_path, caplog):
    path = tmp_path / "dev.jsonlines"
    path.write_text(
        json.dumps(RECORD)
        + "\n"
        + json.dumps({**RECORD, "pos_tags": [["NNP", "VBD", "."], ["PRP", "VBD", "JJ"]]})
        + "\n"
    )
    with caplog.at_level(logging.WARNING):
        check(path)
        check(path)  # a study checks the file once per run
    assert [record.getMessage() for record in caplog.records] == [
        f"{path}: 1 of 2 documents have no 'pos_tags' or 'pos'; their head words and mention types come from word "
        "lists and capitalisation instead of POS tags (docs/coreference.md)"
    ]


def test_tagged_documents_are_read_without_a_word(tmp_path, caplog):
    path = tmp_path / "dev.jsonlines"
    path.write_text(json.dumps({**RECORD, "pos": [["NNP", "VBD", "."], ["PRP", "VBD", "JJ"]]}) + "\n")
    with caplog.at_level(logging.WARNING):
        check(path)
    assert not caplog.records
