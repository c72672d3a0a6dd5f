"""The second labelling pass: its pool hides the labels and spreads over tasks; its agreement is reproducible."""

import json

import numpy as np
import pytest

from classifier.agreement import AGREEMENT_FILE, SECOND_PASS_FILE, agreement, draw_second_pass
from classifier.annotate import parse_label_lines
from classifier.data import CLASSES, read_labels, read_maps, read_sources


def test_the_pool_for_a_second_pass_spreads_over_tasks_and_shows_no_labels(tmp_path):
    rows, maps = read_labels(), read_maps()
    sheets = draw_second_pass(rows, maps, 35, seed=1, out=tmp_path / "pool")
    header = (tmp_path / "pool" / "candidates.tsv").read_text().splitlines()[0].split("\t")
    assert "label" not in header and len(sheets) == 2
    sources = read_sources(tmp_path / "pool" / "candidates.tsv")
    tasks = [source.task for source in sources]
    assert len(sources) == 35 and len(set(tasks)) == 7 and all(tasks.count(task) == 5 for task in set(tasks))
    assert tasks != sorted(tasks)  # shuffled: the second labeller does not go task by task
    pool_maps = read_maps(tmp_path / "pool" / "candidates.npz")
    assert all(np.array_equal(pool_maps[source.id], maps[source.id]) for source in sources)


@pytest.mark.slow  # a training of the classifier
def test_agreement_counts_what_two_passes_share():
    rows = read_labels()[:40]
    same = {row.id: row.label for row in rows}
    perfect = agreement(rows, same)
    assert perfect["cohen_kappa"] == pytest.approx(1.0) and perfect["raw_agreement"] == 1.0
    other = {map_id: CLASSES[(CLASSES.index(label) + 1) % len(CLASSES)] for map_id, label in same.items()}
    assert agreement(rows, other)["raw_agreement"] == 0.0 and agreement(rows, other)["cohen_kappa"] < 0
    with pytest.raises(ValueError, match="no stored label"):
        agreement(rows, {"not-a-map": "vertical"})


@pytest.mark.slow
def test_the_stored_agreement_is_what_the_stored_second_pass_gives():
    stored = json.loads(AGREEMENT_FILE.read_text())
    second = parse_label_lines(SECOND_PASS_FILE.read_text().splitlines(), str(SECOND_PASS_FILE))
    again = agreement(read_labels(), second)
    assert stored["maps"] == len(second) >= 200
    assert np.isclose(again["cohen_kappa"], stored["cohen_kappa"]) and again["confusion"] == stored["confusion"]
    assert stored["with_lines"]["cohen_kappa"] >= stored["cohen_kappa"]
