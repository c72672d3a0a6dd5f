"""The patterns analysis: streaming per-head class counts of both checkpoints, figures from the summary."""

import json

import torch

from classifier import CLASSES, load_classifier
from harness.analyses.base import AnalysisContext
from harness.analyses.patterns import AttentionPatterns
from harness.attention import AttentionBatch, EncodedBatch, stream_attention
from harness.encoding import batched
from tasks.examples import Example
from tests.conftest import run_analysis

EXAMPLES = [Example("1", "the cat sat on the mat .", "the dog ran .", 0),
            Example("2", "he is not happy", "it sat", 1),
            Example("3", "a dog", "she sat", 1)]


def run_patterns(checkpoints, tokenizer, batch_size=2):
    return run_analysis(AttentionPatterns, checkpoints, tokenizer, EXAMPLES, batch_size)


def test_counts_match_classifying_each_map_on_its_own(tiny_pair, tiny_tokenizer):
    result = run_patterns(tiny_pair, tiny_tokenizer)
    classifier = load_classifier()
    expected = {name: {label: 0 for label in CLASSES} for name in tiny_pair}
    for batch in stream_attention(tiny_pair, batched(tiny_tokenizer, EXAMPLES, 1, 32)):
        for name in tiny_pair:
            maps = batch.maps(name, 0).reshape(-1, *batch.maps(name, 0).shape[-2:])
            for label in classifier.predict([m.numpy() for m in maps]):
                expected[name][label] += 1
    total = len(EXAMPLES) * 2 * 4
    for name in tiny_pair:
        assert result["pattern_proportions"][name] == {label: count / total for label, count in expected[name].items()}
    assert result["pattern_num_examples"] == 3
    assert len(result["pattern_per_head"]["pretrained"]) == 2 and len(result["pattern_per_head"]["finetuned"][0]) == 4


def test_known_maps_give_known_proportions_and_changed_heads(tiny_tokenizer):
    n, layers, heads = 20, 1, 2
    pre = torch.zeros(2, layers, heads, n, n)
    pre[:, :, :, :, 0] = 1.0  # every map vertical
    fine = pre.clone()
    fine[:, 0, 1] = torch.eye(n)  # head 2 becomes diagonal
    encoded = EncodedBatch(torch.ones(2, n, dtype=torch.long), torch.ones(2, n, dtype=torch.long), None, [0, 1])
    context = AnalysisContext(layers, heads, tiny_tokenizer, {}, "test")
    analysis = AttentionPatterns(context)
    analysis.update(AttentionBatch(encoded, {"pretrained": pre, "finetuned": fine}))
    result = analysis.result()
    assert result["pattern_proportions"]["pretrained"]["vertical"] == 1.0
    assert result["pattern_proportions"]["finetuned"]["vertical"] == 0.5
    assert result["pattern_proportions"]["finetuned"]["diagonal"] == 0.5
    assert result["pattern_per_head"] == {"pretrained": [["vertical", "vertical"]],
                                          "finetuned": [["vertical", "diagonal"]]}
    assert result["pattern_changed_heads"] == [{"layer": 1, "head": 2, "pretrained": "vertical",
                                                "finetuned": "diagonal"}]
    metrics = dict(AttentionPatterns.metrics(result))
    assert metrics["pattern_finetuned_diagonal"] == 0.5 and metrics["pattern_pretrained_vertical_diagonal"] == 0.0


def test_figures_are_drawn_from_the_stored_summary(tiny_pair, tiny_tokenizer, tmp_path):
    summary = json.loads(json.dumps({"model": "tiny", "task": "test", **run_patterns(tiny_pair, tiny_tokenizer)}))
    assert AttentionPatterns.stored_in(summary) and not AttentionPatterns.stored_in({"cosine_per_head": []})
    paths = AttentionPatterns.draw(summary, tmp_path)
    assert [path.name for path in paths] == ["pattern_proportions.png", "pattern_per_head.png"]
    assert all(path.stat().st_size > 10_000 for path in paths)
