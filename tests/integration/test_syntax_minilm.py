"""Dependency heads, linguistic features and probes on real UD English EWT with the real MiniLM.

No fine-tuning here (too slow for a test): the "fine-tuned" side is a randomly initialised
model of the same shape, whose attention knows no syntax, so the pre-trained model must beat
it clearly on every measure.
"""

import random

import pytest
from transformers import AutoModelForSequenceClassification

from harness.analyses.base import AnalysisContext
from harness.analyses.dependency import DependencyHeads
from harness.analyses.features import LinguisticFeatures, feature_positions
from harness.analyses.probes import Probes
from harness.attention import FINETUNED, PRETRAINED, stream_attention
from harness.models import load_sequence_classifier, load_tokenizer
from harness.treebank_sources import DEV, TRAIN, sentence_batches
from tasks import get_task
from tasks.treebank import read_treebank
from tests.conftest import SHARED_DATA

EWT = SHARED_DATA / "ud-english-ewt"


@pytest.mark.slow
@pytest.mark.skipif(not EWT.is_dir(), reason="needs ../shared/data/ud-english-ewt")
def test_minilm_heads_and_probes_read_syntax_that_random_attention_does_not():
    tokenizer = load_tokenizer("minilm")
    pretrained = load_sequence_classifier("minilm", get_task("rte")).eval()
    random_init = AutoModelForSequenceClassification.from_config(pretrained.config).eval()
    checkpoints = {PRETRAINED: pretrained, FINETUNED: random_init}
    context = AnalysisContext(6, 12, tokenizer, checkpoints, "rte", seed=0,
                              options={"word_attention_from": "mean", "syntax_min_count": 60})
    dev = read_treebank(EWT / "en_ewt-ud-dev.conllu")[:150]
    train = random.Random(0).sample(read_treebank(EWT / "en_ewt-ud-train.conllu"), 100)

    heads, features = DependencyHeads(context), LinguisticFeatures(context)
    for batch in stream_attention(checkpoints, sentence_batches(tokenizer, dev, 32, 128)):
        heads.update(batch)
        features.update(batch)
    probes = Probes(context)
    items = [(TRAIN, s) for s in train] + [(DEV, s) for s in dev]
    for batch in stream_attention(checkpoints, sentence_batches(tokenizer, train + dev, 32, 128, items)):
        probes.update(batch)

    syntax = heads.result()["syntax"]
    rows = {row["relation"]: row for row in syntax["relations"]}
    assert syntax["num_sentences"] == 150 and syntax["words_cut"] == 0
    assert {"all", "det", "nsubj", "case"} <= set(rows)
    assert rows["det"][PRETRAINED]["accuracy"] > 65 > rows["det"][FINETUNED]["accuracy"]
    assert rows["all"][PRETRAINED]["accuracy"] > rows["all"]["baseline"]["accuracy"] + 5
    assert rows["all"]["change"] < -10 and rows["obj"]["paper"]["relation"] == "dobj"

    stored = features.result()["features"]
    with_nouns = sum(bool(feature_positions(s, len(s))["nouns"]) for s in dev)
    assert stored["sentences_with_feature"]["nouns"] == with_nouns
    assert stored["sentences_with_feature"]["[CLS]"] == 150
    assert len(stored["per_head"][PRETRAINED]["negation"]) == 6
    # MiniLM's early layers look at [CLS] (Clark et al. saw it in BERT): some head puts a third there
    assert max(max(row) for row in stored["per_head"][PRETRAINED]["[CLS]"]) > 0.3

    uas = probes.result()["probes"]["uas"]
    assert uas[PRETRAINED]["attn"] > uas[FINETUNED]["attn"] + 10
    assert uas[PRETRAINED]["attn"] > uas["right_branching"]
