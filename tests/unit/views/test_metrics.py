"""Metrics as records: the names MLflow, a study and the exported tables show are derived from
each view's records, and stay the names they were before the records (stored studies and MLflow
comparisons across versions read them)."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from harness.results.checkpoints import FINETUNED, PRETRAINED
from harness.results.shapes import ShapeError, check, check_value
from harness.run.pipeline import checkpoint_metrics
from harness.views import VIEWS
from harness.views.metrics import Metric, changes, values
from harness.views.summary import headline_records, summary_records

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"
# Every metric's name, analysis and value in a tiny RTE run with every analysis, the ablation, the
# transplant and the baselines (its summary beside it), as tests/data/regenerate_tiny_run.py wrote
# them: regenerated when an analysis's version moves on purpose, the diff read for names that went.
PINNED = json.loads((DATA / "metric_names.json").read_text())
# The 341 names metrics had when views built names as strings (stored studies and MLflow comparisons
# read them), the dev score's margin over the majority class since named as a dev score
# (dev_above_majority_*: it sat first of a checkpoint's metrics in MLflow's tables).
AS_STRINGS = (DATA / "metric_names_as_strings.txt").read_text().split()


@pytest.fixture(scope="module")
def tiny_summary() -> dict[str, Any]:
    return json.loads(gzip.decompress((DATA / "tiny_run_summary.json.gz").read_bytes()))


def test_every_metric_keeps_its_pinned_name_and_value(tiny_summary):
    summary = tiny_summary
    records = summary_records(summary)
    assert {metric.name: metric.analysis for metric in records} == PINNED["metrics"]
    assert values(records) == pytest.approx(PINNED["values"], rel=0, abs=1e-12)
    assert [metric.name for metric in headline_records(summary)] == PINNED["headline"]
    for checkpoint in (PRETRAINED, FINETUNED):
        assert sorted(checkpoint_metrics(records, checkpoint)) == sorted(PINNED["checkpoints"][checkpoint])
        assert sorted(checkpoint_metrics(headline_records(summary), checkpoint)) == sorted(
            PINNED["checkpoint_headlines"][checkpoint]
        )


def test_no_name_metrics_had_when_names_were_strings_is_gone(tiny_summary):
    missing = set(AS_STRINGS) - {metric.name for metric in summary_records(tiny_summary)}
    assert len(AS_STRINGS) == 341 and not missing, sorted(missing)


def test_a_record_says_its_checkpoint_or_pair_without_its_name_being_read(tiny_summary):
    records = {metric.name: metric for metric in summary_records(tiny_summary)}
    assert records["pattern_finetuned_vertical"].checkpoint == FINETUNED
    assert records["dev_accuracy_change"].pair == (PRETRAINED, FINETUNED) and records["dev_accuracy_change"].change
    assert records["dev_accuracy_majority"].checkpoint is None and records["dev_accuracy_majority"].reference
    assert records["cosine_layer_2"].layer == 2 and records["cosine_layer_2"].analysis == "cosine"


def test_a_change_is_the_fine_tuned_minus_the_pre_trained_value_of_the_same_record():
    before = Metric("sinks", "sink_share", detail="cls", checkpoint=PRETRAINED, value=0.25)
    after = Metric("sinks", "sink_share", detail="cls", checkpoint=FINETUNED, value=0.75)
    other = Metric("sinks", "sink_share", detail="sep", checkpoint=FINETUNED, value=0.5)
    (change,) = changes([before, after, other])
    assert (change.name, change.value, change.pair) == ("sink_share_change_cls", 0.5, (PRETRAINED, FINETUNED))


def test_every_stored_result_has_the_shape_its_view_declares(tiny_summary):
    for name, entry in tiny_summary["analyses"].items():
        view = VIEWS[name]
        assert view.stored is not None, f"{name} declares no stored shape"
        result = entry["result"]
        stored = [result] if entry["joint"] else list(result["per_checkpoint"].values())
        for one in stored:
            check_value(one, view.stored, name)
        if view.compared is not None and not entry["joint"]:
            for compared in result.get("per_pair", {}).values():
                check_value(compared, view.compared, name)


def test_a_misspelt_key_is_refused_where_it_is_written(tiny_summary, tmp_path):
    result = copy.deepcopy(tiny_summary["analyses"]["sinks"]["result"]["per_checkpoint"]["finetuned"])
    result["sink_shares"] = result.pop(next(iter(result)))
    with pytest.raises(ShapeError, match="sinks: key 'sink_shares' is not one of"):
        check("sinks", result)
