"""The attention transplant on tiny BERTs: which heads each variant gives the donor's maps, each score
against the model run alone with those maps, every stored interval recomputed from the stored
predictions, a model given its own attention unchanged, the findings both ways, and a tagging
task scored on its words."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import BertConfig, BertForTokenClassification

from harness.analyses.significance import metric_rows, paired_differences
from harness.analyses.transplant import Transplant, edge_layers, family_statistics, share_kept, transplant_masks
from harness.config import AnalysisConfig
from harness.inputs.encoding import encode_examples
from harness.model.forward import Capture, Interventions, forward
from harness.results.checkpoints import FINETUNED, MAIN_PAIR, PRETRAINED
from harness.results.store import ResultStore
from harness.run.engine import analyse
from harness.views.transplant import (
    LAYER_FAMILIES,
    ROWS,
    TransplantView,
    decode,
    family_rows,
    store_predictions,
    stored_predictions,
    variant_count,
)
from tasks.loading import load_examples, resolved
from tasks.registry import get_task
from tasks.spec import task_from_spec
from tests.fixtures import TINY_VOCAB, as_checkpoints, tiny_bert, tiny_dev_sources

PAIRS = [(PRETRAINED, FINETUNED)]


def test_each_variant_gives_the_donors_maps_to_exactly_its_heads():
    layers, heads = 3, 2
    masks = transplant_masks(layers, heads)
    assert masks.shape == (variant_count(layers, heads), layers, heads) == (1 + 6 + 9 + 1, 3, 2)
    assert not masks[family_rows("intact", layers, heads)].any()
    for index, mask in enumerate(masks[family_rows("heads", layers, heads)]):
        assert mask.nonzero().tolist() == [[index // heads, index % heads]]
    for layer in range(layers):
        given = {
            family: masks[family_rows(family, layers, heads).start + layer].all(dim=1) for family in LAYER_FAMILIES
        }
        assert given["alone"].tolist() == [k == layer for k in range(layers)]
        assert given["from"].tolist() == [k >= layer for k in range(layers)]
        assert given["all_but"].tolist() == [k != layer for k in range(layers)]
    assert masks[family_rows("first_two", layers, heads)].all(dim=-1).tolist() == [[True, True, False]]
    assert family_rows(ROWS[-1], layers, heads).stop == len(masks)


def rte_sources(tiny_tokenizer, tiny_data, **settings):
    rte = get_task("rte")
    examples = load_examples(rte, "dev", tiny_data / "glue")
    return examples, tiny_dev_sources(tiny_tokenizer, rte, examples, AnalysisConfig(eval_batch_size=4, **settings))


@pytest.fixture(scope="module")
def transplanted(tiny_tokenizer, tiny_data, tmp_path_factory):
    """The tiny pre-trained BERT's attention in a tiny 'fine-tuned' one, on the tiny RTE dev set."""
    examples, sources = rte_sources(tiny_tokenizer, tiny_data)
    checkpoints = as_checkpoints({PRETRAINED: tiny_bert(0), FINETUNED: tiny_bert(1, init=0.1)})
    store = ResultStore(tmp_path_factory.mktemp("transplant_store"))
    entry = analyse([Transplant], checkpoints, PAIRS, sources, store)["transplant"]
    return entry, checkpoints, examples


def test_each_score_is_the_model_run_alone_with_the_donors_maps(transplanted, tiny_tokenizer):
    entry, checkpoints, examples = transplanted
    result = entry["result"]["per_pair"][MAIN_PAIR]
    donor, model = checkpoints[0].model, checkpoints[1].model
    encoded = encode_examples(tiny_tokenizer, examples, max_length=64, pair=True)
    labels = np.array([example.label for example in examples])
    maps = forward(donor, encoded, capture=Capture(attention=True)).attentions

    def accuracy(given: torch.Tensor | None) -> float:
        interventions = Interventions() if given is None else Interventions(given_heads=given, given_attention=maps)
        predicted = forward(model, encoded, interventions=interventions).logits.argmax(-1).numpy()
        return float((predicted == labels).mean())

    intact = accuracy(None)
    assert result["intact"] == pytest.approx(intact) and result["examples"] == len(examples)
    assert result["majority"] == pytest.approx(max(labels.mean(), 1 - labels.mean()))
    one_head = torch.zeros(len(examples), 2, 4, dtype=torch.bool)
    one_head[:, 1, 3] = True
    assert result["heads"]["delta"][1][3] == pytest.approx(accuracy(one_head) - intact)
    everything = torch.ones(len(examples), 2, 4, dtype=torch.bool)
    assert result["layers"]["from"]["score"][0] == pytest.approx(accuracy(everything))
    only_first = everything.clone()
    only_first[:, 1] = False
    assert result["layers"]["alone"]["score"][0] == pytest.approx(accuracy(only_first))
    assert result["layers"]["all_but"]["score"][1] == pytest.approx(accuracy(only_first))
    assert "last_two_vs_first_two" not in result  # two layers: the first two are the last two


def test_every_stored_interval_and_test_is_recomputed_from_the_stored_predictions(transplanted):
    result = transplanted[0]["result"]["per_pair"][MAIN_PAIR]
    predictions = stored_predictions(result["predictions"])
    labels = decode(result["labels"])
    assert predictions.shape == (variant_count(2, 4), len(labels))
    intact = predictions[0]
    assert metric_rows("accuracy", intact[None], labels)[0] == pytest.approx(result["intact"])
    again = family_statistics("accuracy", predictions[family_rows("heads", 2, 4)], intact, labels, (2, 4))
    assert again == result["heads"]
    for family in LAYER_FAMILIES:
        assert (
            family_statistics("accuracy", predictions[family_rows(family, 2, 4)], intact, labels, (2,))
            == (result["layers"][family])
        )
    for family in ("heads", *LAYER_FAMILIES):  # simultaneous intervals: no narrower than each member's own 95%
        grids = result["heads"] if family == "heads" else result["layers"][family]
        rows = predictions[family_rows(family, 2, 4)]
        own = paired_differences("accuracy", rows, intact, labels).intervals
        low, high = (np.asarray(grids[key]).ravel() for key in ("low", "high"))
        assert (low <= own[:, 0] + 1e-12).all() and (high >= own[:, 1] - 1e-12).all()
        assert (np.asarray(grids["p_holm"]) >= np.asarray(grids["p"]) - 1e-12).all()


def test_stored_predictions_keep_only_what_changed_and_read_back_exactly():
    rows = np.array([[0, 1, 2, 1], [0, 1, 2, 1], [1, 1, 0, 1], [2.5, 1, 2, 1]])
    stored = store_predictions(rows)
    assert decode(stored["changed_at"]).tolist() == [8, 10, 12]
    assert np.array_equal(stored_predictions(stored), rows)


def test_a_model_given_its_own_attention_keeps_every_score(tiny_tokenizer, tiny_data, tmp_path):
    _, sources = rte_sources(tiny_tokenizer, tiny_data)
    checkpoints = as_checkpoints({PRETRAINED: tiny_bert(1, init=0.1), FINETUNED: tiny_bert(1, init=0.1)})
    result = analyse([Transplant], checkpoints, PAIRS, sources, ResultStore(tmp_path))["transplant"]
    pair = result["result"]["per_pair"][MAIN_PAIR]
    assert np.all(np.asarray(pair["heads"]["delta"]) == 0) and pair["heads"]["hurts"] == pair["heads"]["helps"] == 0
    assert all(np.all(np.asarray(pair["layers"][family]["delta"]) == 0) for family in LAYER_FAMILIES)
    assert np.all(np.asarray(pair["heads"]["p_holm"]) == 1.0)
    share = pair["share_kept"]
    assert share["value"] is None or share["value"] == pytest.approx(1.0)


def hand_made(count: int, kept: int, gain: int, seed: int = 0) -> tuple[np.ndarray, ...]:
    """Labels, and predictions: intact right on the first ``gain`` examples beyond the majority's
    half, all-transplanted right on ``kept`` of those, the majority class (all 0) half right."""
    labels = np.r_[np.zeros(count // 2, dtype=int), np.ones(count - count // 2, dtype=int)]
    majority = np.zeros(count, dtype=int)
    intact = majority.copy()
    intact[count // 2 : count // 2 + gain] = 1
    everything = majority.copy()
    everything[count // 2 : count // 2 + kept] = 1
    return everything, intact, majority, labels


def test_the_share_kept_holds_above_one_half_fails_below_and_is_unclear_between():
    holds = share_kept("accuracy", *hand_made(400, 180, 200), "dev examples")
    assert holds["value"] == pytest.approx(0.9) and holds["verdict"] == "holds"
    assert 0.5 < holds["interval"][0] < 0.9 < holds["interval"][1] <= 1.0
    fails = share_kept("accuracy", *hand_made(400, 20, 200), "dev examples")
    assert fails["value"] == pytest.approx(0.1) and fails["verdict"] == "fails"
    unclear = share_kept("accuracy", *hand_made(60, 5, 10), "dev examples")
    assert unclear["verdict"] == "unclear" and unclear["interval"][0] < 0.5 < unclear["interval"][1]
    none = share_kept("accuracy", *hand_made(40, 0, 0), "dev examples")
    assert none["value"] is None and "no gain" in none["note"]


def test_the_edge_layers_finding_can_hold_and_fail():
    labels = np.ones(300, dtype=int)
    good, bad = np.ones(300, dtype=int), np.r_[np.ones(200, dtype=int), np.zeros(100, dtype=int)]
    assert edge_layers("accuracy", good, bad, labels, "dev examples")["verdict"] == "holds"
    failing = edge_layers("accuracy", bad, good, labels, "dev examples")
    assert failing["verdict"] == "fails" and failing["value"] == pytest.approx(-1 / 3)
    judge = TransplantView.claims["last_two_layers_cost_more"].judge
    assert judge({"result": {"per_pair": {MAIN_PAIR: {"last_two_vs_first_two": failing}}}}) == failing
    assert judge({"result": {"per_pair": {}}}) is None


def test_a_tagging_task_scores_its_words(tiny_tokenizer, tiny_data, tmp_path):
    spec = {
        "name": "tiny-upos",
        "text_fields": ["form"],
        "label_field": "upos",
        "label_kind": "tags",
        "eval_splits": ["dev"],
        "data_files": {"train": str(tiny_data / "tiny-train.conllu"), "dev": str(tiny_data / "tiny-dev.conllu")},
    }
    task = resolved(task_from_spec(spec, "a test spec"))
    sentences = load_examples(task, "dev")
    words = sum(len(sentence.words) for sentence in sentences)

    def tagger(seed: int) -> BertForTokenClassification:
        torch.manual_seed(seed)
        config = BertConfig(
            vocab_size=len(TINY_VOCAB),
            hidden_size=16,
            num_hidden_layers=3,
            num_attention_heads=2,
            intermediate_size=32,
            num_labels=task.num_labels,
            attn_implementation="eager",
        )
        return BertForTokenClassification(config).eval()

    sources = tiny_dev_sources(tiny_tokenizer, task, sentences, AnalysisConfig(eval_batch_size=4))
    checkpoints = as_checkpoints({PRETRAINED: tagger(0), FINETUNED: tagger(1)})
    entry = analyse([Transplant], checkpoints, PAIRS, sources, ResultStore(tmp_path))["transplant"]
    result = entry["result"]["per_pair"][MAIN_PAIR]
    assert result["unit"] == "words" and result["examples"] == words
    assert stored_predictions(result["predictions"]).shape == (variant_count(3, 2), words)
    assert "last_two_vs_first_two" in result  # three layers: the first two and the last two differ
