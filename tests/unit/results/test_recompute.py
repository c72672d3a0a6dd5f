"""Every interval a run shows can be recomputed from what it stored: each pair's comparison from
the stored per-checkpoint results, the ablation's intervals from its stored predictions, a
paired interval by an independent bootstrap written here, and the same from the snapshot the
docs' tables are generated from."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from harness.analyses.ablation_masks import PRUNING_FRACTIONS, single_variants
from harness.analyses.ablation_statistics import area_comparisons
from harness.analyses.base import ANALYSES
from harness.analyses.significance import simultaneous_intervals
from harness.cli import main
from harness.present.doc_tables import RESULTS
from harness.views.base import per_checkpoint_results, per_pair_results
from harness.views.evidence import UnitSums, unpack
from tests.fixtures import tiny_run_arguments

DOCS_RUN = RESULTS / "rte-minilm.json"


@pytest.fixture(scope="module")
def summary(tiny_model_dir: Path, tiny_data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("recompute")
    assert main(tiny_run_arguments(tiny_model_dir, tiny_data, root, "--no-figures", "--ablation", "on")) == 0
    (path,) = (root / "out").glob("*/summary.json")
    return json.loads(path.read_text())


def independent_paired_interval(before: UnitSums, after: UnitSums) -> list[float]:
    """A paired percentile bootstrap of a ratio of sums written out here, not with the harness's
    helpers: 1000 multinomial draws of the units from the seed-0 generator, the same for both."""
    count = before.count
    draws = np.random.default_rng(0).multinomial(count, np.full(count, 1.0 / count), size=1000).astype(float)
    after_ratio = (draws @ after.numerators) / (draws @ after.denominators)[:, None]
    before_ratio = (draws @ before.numerators) / (draws @ before.denominators)[:, None]
    change = after_ratio - before_ratio
    return np.percentile(change.mean(axis=1), [2.5, 97.5]).tolist()


def compared_again(name: str, entry: dict) -> dict:
    """The analysis's pair comparisons computed again from its stored per-checkpoint results only."""
    return ANALYSES[name].compare(per_checkpoint_results(entry), [tuple(pair) for pair in entry["pairs"]])


def ablation_recomputed(result: dict) -> None:
    """Each family's simultaneous intervals and the pruning areas' intervals, from the stored predictions."""
    units = result["units"]
    labels, intact, single = (unpack(units[key]) for key in ("labels", "intact", "single"))
    layers, heads = np.asarray(result["heads"]["uniform"]["delta"]).shape
    described, _ = single_variants(layers, heads)
    for mode in ("uniform", "zero"):
        for scope in ("heads", "layers"):
            rows = [
                index
                for index, variant in enumerate(described)
                if variant["mode"] == mode and (variant["head"] is None) == (scope == "layers")
            ]
            family = result[scope][mode]
            intervals = simultaneous_intervals(result["metric"], single[rows], intact, labels)
            assert np.allclose(intervals[:, 0], np.ravel(family["low_simultaneous"]), atol=1e-6)
            assert np.allclose(intervals[:, 1], np.ravel(family["high_simultaneous"]), atol=1e-6)
    held_out = {order: unpack(packed) for order, packed in units["held_out"].items()}
    areas = area_comparisons(result["metric"], held_out, labels, PRUNING_FRACTIONS)
    for baseline in ("random", "oracle"):
        stored = result["pruning"].get(f"importance_vs_{baseline}")
        if stored is not None:
            assert np.allclose(areas[f"importance_vs_{baseline}"]["interval"], stored["interval"], atol=1e-6)


@pytest.mark.slow  # a whole tiny run with the ablation
def test_every_stored_comparison_recomputes_from_the_summary_alone(summary):
    compared = 0
    for name, entry in summary["analyses"].items():
        if entry.get("joint") or name not in ANALYSES:
            continue
        stored = per_pair_results(entry)
        if not stored:
            continue
        assert json.loads(json.dumps(compared_again(name, entry))) == stored, name
        compared += 1
    assert compared >= 6  # patterns, sinks, vig, syntax, coreference, probes (and more)


@pytest.mark.slow  # a whole tiny run with the ablation
def test_a_paired_interval_recomputes_by_an_independent_bootstrap(summary):
    sinks = per_checkpoint_results(summary["analyses"]["sinks"])
    before, after = (UnitSums.read(sinks[checkpoint]["units"]["cls"]) for checkpoint in ("pretrained", "finetuned"))
    stored = next(iter(per_pair_results(summary["analyses"]["sinks"]).values()))["evidence"]
    (evidence,) = [value for key, value in stored.items() if key.endswith("cls")]
    assert np.allclose(independent_paired_interval(before, after), evidence["interval"], atol=1e-9)


@pytest.mark.slow  # a whole tiny run with the ablation
def test_the_ablations_intervals_recompute_from_its_stored_predictions(summary):
    result = per_checkpoint_results(summary["analyses"]["ablation"])["finetuned"]
    ablation_recomputed(result)


def test_the_docs_snapshot_keeps_what_its_intervals_are_computed_from():
    snapshot = json.loads(DOCS_RUN.read_text())["analyses"]
    for name in ("coreference", "syntax"):
        assert json.loads(json.dumps(compared_again(name, snapshot[name]))) == per_pair_results(snapshot[name]), name
    ablation_recomputed(per_checkpoint_results(snapshot["ablation"])["finetuned"])
