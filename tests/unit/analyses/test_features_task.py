"""Kovaleva et al.'s feature attention on the task's own inputs (spaCy tags, token level,
zeros kept but for negation) and her §5, on hand-built maps whose values are known exactly;
the figures drawn from the stored entry."""

from __future__ import annotations

import logging

import pytest
import torch

from harness.analyses.features_task import TaskFeatures, feature_membership
from harness.inputs.batches import AttentionBatch
from harness.inputs.encoding import encode_examples
from harness.results.checkpoints import FINETUNED, PRETRAINED
from harness.views.features_task import TaskFeaturesView
from harness.views.saving import plt
from tasks.examples import Example
from tasks.registry import get_task
from tasks.tagging import TaggedToken, tagger_identity
from tests.fixtures import analysis_context, finish

SST2 = get_task("sst2")


def test_every_piece_of_a_word_with_a_feature_is_marked_and_nothing_else():
    tokens = [
        TaggedToken(0, 2, "He", "PRP", "nsubj"),
        TaggedToken(3, 6, "did", "VBD", "aux"),
        TaggedToken(6, 9, "n't", "RB", "neg"),
        TaggedToken(10, 18, "runaways", "NNS", "dobj"),
    ]
    spans = [None, (0, 0, 2), (0, 3, 6), (0, 6, 9), (0, 10, 13), (0, 13, 18), None]  # "runaways" in two pieces
    membership = feature_membership(spans, (tokens, []), 8)
    marked = {
        name: membership[index].nonzero().flatten().tolist()
        for index, name in enumerate(["nouns", "verbs", "pronouns", "subjects", "objects", "negation"])
    }
    assert marked == {
        "nouns": [4, 5],
        "verbs": [2],
        "pronouns": [1],
        "subjects": [1],
        "objects": [4, 5],
        "negation": [3],
    }
    assert not membership[6:].any()  # [CLS] and [SEP] are the caller's


def uniform_maps(lengths: list[int], seq_len: int, layers: int = 2, heads: int = 4) -> torch.Tensor:
    """(batch, layers, heads, seq, seq): every real row 1/n over the n real tokens, padding rows 0."""
    maps = torch.zeros(len(lengths), layers, heads, seq_len, seq_len)
    for row, n in enumerate(lengths):
        maps[row, :, :, :n, :n] = 1.0 / n
    return maps


def uniform_features(tokenizer) -> TaskFeatures:
    """The analysis after one batch of uniform maps (fine-tuned: half of them) over two single
    sentences: "the cat sat" (n = 5) has a noun and no pronoun; "he is not happy" (n = 6) a
    pronoun, a negation word and no noun."""
    examples = [Example("1", "the cat sat", None, 1), Example("2", "he is not happy", None, 0)]
    encoded = encode_examples(tokenizer, examples, 32, pair=False)
    assert encoded.lengths.tolist() == [5, 6]
    maps = uniform_maps([5, 6], encoded.input_ids.shape[1])
    analysis = TaskFeatures(analysis_context([PRETRAINED, FINETUNED], tokenizer=tokenizer, task=SST2))
    analysis.update(AttentionBatch(encoded, {PRETRAINED: maps, FINETUNED: maps * 0.5}))
    return analysis


def test_inputs_without_a_feature_count_as_zero_except_for_negation(tiny_tokenizer):
    """Uniform attention: every real token receives 1/n."""
    result = uniform_features(tiny_tokenizer).result()
    stats = result[PRETRAINED]
    expected = {
        "nouns": (1 / 5 + 0) / 2,
        "pronouns": (0 + 1 / 6) / 2,
        "negation": 1 / 6,
        "[CLS]": (1 / 5 + 1 / 6) / 2,
        "[SEP]": (1 / 5 + 1 / 6) / 2,
    }
    for name, value in expected.items():
        assert stats["per_layer"][name] == pytest.approx([value, value]), name
        assert stats["cls_last_layer"][name] == pytest.approx([value] * 4), name  # §5: [CLS]'s row is uniform too
    assert stats["inputs_with_feature"]["negation"] == 1 and stats["inputs_counted"]["negation"] == 1
    assert stats["inputs_counted"]["nouns"] == 2 and stats["inputs_with_feature"]["nouns"] == 1
    assert result[FINETUNED]["per_layer"]["nouns"] == pytest.approx([expected["nouns"] / 2] * 2)


def test_results_are_keyed_by_the_tagger():
    assert TaskFeatures.settings_identity(analysis_context([]).settings, None) == tagger_identity()
    assert tagger_identity()["tagger"] == "en_core_web_sm"


@pytest.mark.slow
def test_each_figure_title_says_the_inputs_once(tiny_tokenizer, tmp_path, monkeypatch, caplog):
    entry = {"pairs": [[PRETRAINED, FINETUNED]], "result": finish(uniform_features(tiny_tokenizer))}
    closed = []
    monkeypatch.setattr(plt, "close", closed.append)  # keep the figures to read their titles
    with caplog.at_level(logging.WARNING, logger="harness.views.saving"):
        files = TaskFeaturesView.draw(entry, {"model": "tiny", "task": "sst2"}, tmp_path)
    monkeypatch.undo()
    titles = {path.name: " ".join(figure.get_suptitle().split()) for path, figure in zip(files, closed)}
    on = "tiny on sst2 dev (spaCy tags): attention to"
    assert titles["features_task_negation.png"] == f"{on} negation (1 of 2 inputs)"
    assert titles["features_task_cls.png"] == f"{on} [CLS] (2 of 2 inputs)"
    (focus,) = closed[-1].axes[:1]
    assert " ".join(focus.get_title().split()).startswith("tiny on sst2 dev (2 inputs, spaCy tags): where [CLS] looks")
    assert caplog.records == []  # no title says a thing twice, no legend over the range bars
    for figure in closed:
        plt.close(figure)
