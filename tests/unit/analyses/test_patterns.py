"""The patterns analysis: streaming per-head class counts of each checkpoint, figures from the stored entry."""

import json
import logging

import numpy as np
import pytest
import torch

from classifier import CLASSES
from classifier.correction import corrected_shares
from classifier.crossval import load_report
from classifier.model import load_classifier
from harness.analyses.patterns import AttentionPatterns, corrected
from harness.config import AnalysisConfig
from harness.inputs.batches import AttentionBatch, EncodedBatch
from harness.inputs.encoding import batched
from harness.results.store import FileHashes
from harness.views.evidence import UnitSums
from harness.views.metrics import values
from harness.views.patterns import PatternsView, draw_proportions
from harness.views.saving import plt
from tasks.examples import Example
from tests.fixtures import analysis_context, finish, run_analysis, stream

EXAMPLES = [
    Example("1", "the cat sat on the mat .", "the dog ran .", 0),
    Example("2", "he is not happy", "it sat", 1),
    Example("3", "a dog", "she sat", 1),
]


def run_patterns(models, tokenizer, batch_size=2):
    return run_analysis(AttentionPatterns, models, tokenizer, EXAMPLES, batch_size)


def test_counts_match_classifying_each_map_on_its_own(tiny_pair, tiny_tokenizer):
    result = run_patterns(tiny_pair, tiny_tokenizer)["per_checkpoint"]
    classifier = load_classifier()
    expected = {name: {label: 0 for label in CLASSES} for name in tiny_pair}
    for batch in stream(tiny_pair, batched(tiny_tokenizer, EXAMPLES, 1, 32, pair=True)):
        for name in tiny_pair:
            maps = batch.maps(name, 0).reshape(-1, *batch.maps(name, 0).shape[-2:])
            segments = [int(batch.second_segments[0])] * len(maps)
            for label in classifier.predict([m.numpy() for m in maps], segments):
                expected[name][label] += 1
    total = len(EXAMPLES) * 2 * 4
    for name in tiny_pair:
        assert result[name]["proportions"] == {label: count / total for label, count in expected[name].items()}
        assert result[name]["num_examples"] == 3
        assert len(result[name]["per_head"]) == 2 and len(result[name]["per_head"][0]) == 4
        assert torch.tensor(result[name]["counts_per_head"]).sum() == total
        units = UnitSums.read(json.loads(json.dumps(result[name]["units"])))
        assert (units.unit, units.numerators.shape) == ("dev examples", (3, len(CLASSES)))
        assert (units.denominators == 2 * 4).all() and units.numerators.sum(axis=0).tolist() == [
            expected[name][label] for label in CLASSES
        ]


def test_known_maps_give_known_proportions_and_changed_heads(tiny_tokenizer):
    n, layers, heads = 20, 1, 2
    pre = torch.zeros(2, layers, heads, n, n)
    pre[:, :, :, :, 0] = 1.0  # every map vertical
    fine = pre.clone()
    fine[:, 0, 1] = torch.eye(n)  # head 2 becomes diagonal
    encoded = EncodedBatch(torch.ones(2, n, dtype=torch.long), torch.ones(2, n, dtype=torch.long), None, [0, 1])
    analysis = AttentionPatterns(analysis_context(["pretrained", "finetuned"], layers, heads))
    analysis.update(AttentionBatch(encoded, {"pretrained": pre, "finetuned": fine}))
    result = finish(analysis)
    shares = {name: stats["proportions"] for name, stats in result["per_checkpoint"].items()}
    assert shares["pretrained"]["vertical"] == 1.0
    assert shares["finetuned"]["vertical"] == 0.5 and shares["finetuned"]["diagonal"] == 0.5
    assert {name: stats["per_head"] for name, stats in result["per_checkpoint"].items()} == {
        "pretrained": [["vertical", "vertical"]],
        "finetuned": [["vertical", "diagonal"]],
    }
    assert result["per_pair"]["pretrained->finetuned"]["changed_heads"] == [
        {"layer": 1, "head": 2, "before": "vertical", "after": "diagonal"}
    ]
    metrics = values(PatternsView.metrics({"result": result}))
    assert metrics["pattern_finetuned_diagonal"] == 0.5 and metrics["pattern_pretrained_vertical_diagonal"] == 0.0
    evidence = PatternsView.change_evidence({"result": result})
    assert set(evidence) == set(PatternsView.signed_changes) - {"pattern_change_block"}  # no pair: block cannot occur
    # every example lost its vertical head 2 to diagonal: the labelled share falls by 0.5 exactly; the change a
    # finding reads is of the shares corrected for the classifier's errors, with the classifier's confusion in
    # its interval (a labelled change's interval here would be [0.5, 0.5]: every resample the same)
    vertical, diagonal = (evidence[f"pattern_change_{name}"] for name in ("vertical", "diagonal"))
    corrected = {name: stats["corrected"] for name, stats in result["per_checkpoint"].items()}
    assert vertical["value"] == pytest.approx(corrected["finetuned"]["vertical"] - corrected["pretrained"]["vertical"])
    assert -0.55 < vertical["value"] < -0.45 and vertical["direction"] == "falls"
    low, high = diagonal["interval"]
    assert low < diagonal["value"] < high and high - low > 0.005 and "corrected" in diagonal["statistic"]
    assert evidence["pattern_change_heterogeneous"]["direction"] == "no clear change"


def test_figures_are_drawn_from_the_stored_entry(tiny_pair, tiny_tokenizer, tmp_path):
    entry = json.loads(
        json.dumps({"pairs": [["pretrained", "finetuned"]], "result": run_patterns(tiny_pair, tiny_tokenizer)})
    )
    paths = PatternsView.draw(entry, {"model": "tiny", "task": "test"}, tmp_path)
    assert [path.name for path in paths] == ["pattern_proportions.png", "pattern_per_head.png"]
    assert all(path.stat().st_size > 10_000 for path in paths)


def test_block_is_counted_for_sentence_pairs_only(tiny_tokenizer):
    n, split = 24, 12
    squares = torch.full((n, n), 0.01)
    squares[:split, 1:split] += 1.0
    squares[split:, split:] += 1.0
    # with a [CLS] column, as the real block heads have (two bare squares are read as heterogeneous)
    squares = 0.8 * squares / squares.sum(dim=1, keepdim=True)
    squares[:, 0] += 0.2
    maps = squares.expand(2, 1, 1, n, n)
    items = [Example("1", "a pair", "of sentences", 0), Example("2", "one sentence", None, 0)]
    token_types = torch.tensor([[0] * split + [1] * (n - split), [0] * n])
    encoded = EncodedBatch(torch.ones(2, n, dtype=torch.long), torch.ones(2, n, dtype=torch.long), token_types, items)
    analysis = AttentionPatterns(analysis_context(["pretrained", "finetuned"], 1, 1))
    analysis.update(AttentionBatch(encoded, {"pretrained": maps, "finetuned": maps}))
    for stats in finish(analysis)["per_checkpoint"].values():
        counts = stats["counts_per_head"][0][0]
        # the pair's map is a block (the CNN says so for both); the single sentence's cannot be
        assert counts[CLASSES.index("block")] == 1 and sum(counts) == 2


def test_shares_come_with_the_shipped_classifiers_cross_validation_and_corrected_intervals(tiny_tokenizer):
    n = 20
    maps = torch.zeros(2, 1, 2, n, n)
    maps[..., 0] = 1.0  # vertical
    maps[:, 0, 1] = torch.eye(n)  # diagonal
    items = [Example("1", "one sentence", None, 0), Example("2", "another", None, 1)]
    encoded = EncodedBatch(torch.ones(2, n, dtype=torch.long), torch.ones(2, n, dtype=torch.long), None, items)
    analysis = AttentionPatterns(analysis_context(["pretrained", "finetuned"], 1, 2))
    analysis.update(AttentionBatch(encoded, {"pretrained": maps, "finetuned": maps}))
    stats = finish(analysis)["per_checkpoint"]["pretrained"]
    corrected, intervals = stats["corrected"], stats["corrected_interval"]
    assert abs(sum(corrected.values()) - 1.0) < 1e-9 and corrected["block"] == 0.0  # single sentences: no block
    assert all(low <= corrected[name] <= high for name, (low, high) in intervals.items())
    score = AttentionPatterns.settings_identity(AnalysisConfig(), FileHashes())["cross_validation"]
    assert score["grouping"] == "task" and 0.0 < score["macro_f1_interval"][0] <= score["macro_f1"] <= 1.0
    metrics = values(PatternsView.metrics({"result": finish(analysis), "settings": {"cross_validation": score}}))
    assert metrics["pattern_classifier_cv_macro_f1"] == score["macro_f1"]


def test_value_labels_sit_above_the_corrected_intervals_not_on_them(tmp_path, monkeypatch, caplog):
    shares = dict(zip(CLASSES, (0.55, 0.0, 0.1, 0.05, 0.3)))
    proportions = {"pretrained": shares, "finetuned": {name: share / 2 for name, share in shares.items()}}
    corrected = {
        checkpoint: {name: [max(0.0, share - 0.05), share + 0.15] for name, share in values.items()}
        for checkpoint, values in proportions.items()
    }  # intervals reaching well above the bars
    closed = []
    monkeypatch.setattr(plt, "close", closed.append)  # keep the figure to read its labels
    with caplog.at_level(logging.WARNING, logger="harness.views.saving"):
        draw_proportions(proportions, corrected, tmp_path / "shares.png", title="tiny on test: patterns")
    monkeypatch.undo()
    (figure,) = closed
    labels = figure.axes[0].texts
    expected = [
        (f"{100 * share:.0f}", 100 * corrected[checkpoint][name][1])
        for checkpoint, values in proportions.items()
        for name, share in values.items()
    ]
    assert [(label.get_text(), label.xy[1]) for label in labels] == [
        (text, pytest.approx(top)) for text, top in expected
    ]
    assert caplog.records == []  # no label on an interval, none off the canvas
    plt.close(figure)


def stored_counts(per_example: np.ndarray, heads: int = 12) -> dict:
    """A checkpoint's stored result with the given per-example class counts (examples, classes) of ``heads`` heads."""
    return {
        "per_head": [["vertical"]],
        "pair_inputs": len(per_example),
        "units": UnitSums.of(per_example, np.full(len(per_example), heads), "dev examples").stored(),
    }


def class_counts(rng: np.random.Generator, shares: list[float], examples: int, heads: int = 12) -> np.ndarray:
    """Per example, its heads' classes drawn around ``shares`` (examples differ, as real inputs do)."""
    return np.array([rng.multinomial(heads, rng.dirichlet(10 * np.asarray(shares))) for _ in range(examples)])


def test_a_clear_change_of_share_rises_or_falls_and_noise_holds_zero():
    rng = np.random.default_rng(0)
    before = class_counts(rng, [0.6, 0.1, 0.1, 0.1, 0.1], 100)
    after = class_counts(rng, [0.3, 0.1, 0.1, 0.1, 0.4], 100)  # vertical maps turned heterogeneous
    changes = AttentionPatterns.compare(
        {"pretrained": stored_counts(before), "finetuned": stored_counts(after)}, [("pretrained", "finetuned")]
    )["pretrained->finetuned"]["evidence"]
    assert set(changes) == set(PatternsView.signed_changes)
    vertical, heterogeneous = changes["pattern_change_vertical"], changes["pattern_change_heterogeneous"]
    assert (vertical["direction"], heterogeneous["direction"]) == ("falls", "rises")
    assert vertical["interval"][1] < 0 < heterogeneous["interval"][0] and vertical["n"] == 100
    assert vertical["value"] == pytest.approx(after[:, 0].sum() / 1200 - before[:, 0].sum() / 1200)
    shuffled = {"pretrained": stored_counts(before), "finetuned": stored_counts(rng.permutation(before))}
    for change in AttentionPatterns.compare(shuffled, [("pretrained", "finetuned")])["pretrained->finetuned"][
        "evidence"
    ].values():  # the same maps, on other examples: only noise
        assert change["value"] == pytest.approx(0.0, abs=1e-12) and change["direction"] == "no clear change"
        assert change["interval"][0] < 0 < change["interval"][1]


def test_the_corrected_interval_covers_the_examples_drawn_and_narrows_as_they_grow():
    cross_validation = load_report("task")
    confusion = np.asarray(cross_validation["confusion"])
    rng = np.random.default_rng(0)
    widths = {}
    for examples in (20, 2000):
        units = UnitSums.of(
            class_counts(rng, [0.45, 0.08, 0.2, 0.1, 0.17], examples, heads=72), np.full(examples, 72), "dev examples"
        )
        both = corrected(units, cross_validation, pairs_seen=True, seed=0)
        observed = units.ratios(np.ones((1, examples)))[0]
        _, confusion_only = corrected_shares(observed, np.tile(observed, (1000, 1)), confusion, np.ones(5, bool))
        intervals = np.array([both["corrected_interval"][name] for name in CLASSES])
        assert (
            (intervals[:, 0] <= list(both["corrected"].values()))
            & (list(both["corrected"].values()) <= intervals[:, 1])
        ).all()
        widths[examples] = intervals[:, 1] - intervals[:, 0]
        if examples == 20:
            assert (widths[examples] > 1.5 * (confusion_only[:, 1] - confusion_only[:, 0])).all()
    assert (widths[2000] < widths[20] / 2).all()
