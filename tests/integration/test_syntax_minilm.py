"""Dependency heads, linguistic features and probes on real UD English EWT with the real MiniLM.

No fine-tuning here (too slow for a test): the "fine-tuned" side is a randomly initialised
model of the same shape, whose attention knows no syntax, so the pre-trained model must beat
it clearly on every measure.
"""

import random

import pytest
from transformers import AutoModelForSequenceClassification

from harness.analyses.dependency import DependencyHeads
from harness.analyses.features import LinguisticFeatures, feature_positions
from harness.analyses.probes import Probes
from harness.inputs.sources.treebank import DEV, TRAIN, sentence_batches
from harness.results.checkpoints import FINETUNED, PRETRAINED
from harness.views.dependency import ALL_CLARK, DependencyView
from harness.views.probes import ProbesView
from tasks.treebank import read_treebank
from tests.fixtures import SHARED_DATA
from tests.integration.conftest import run_on

EWT = SHARED_DATA / "ud-english-ewt"


@pytest.mark.slow
@pytest.mark.skipif(not EWT.is_dir(), reason="needs ../shared/data/ud-english-ewt")
def test_minilm_heads_and_probes_read_syntax_that_random_attention_does_not(minilm):
    tokenizer, pretrained = minilm["tokenizer"], minilm["models"][PRETRAINED]
    models = {
        PRETRAINED: pretrained,
        FINETUNED: AutoModelForSequenceClassification.from_config(pretrained.config).eval(),
    }
    dev = read_treebank(EWT / "en_ewt-ud-dev.conllu")[:150]
    train = random.Random(0).sample(read_treebank(EWT / "en_ewt-ud-train.conllu"), 100)
    settings = {"syntax_min_count": 60, "analysis_seed": 0}

    syntax = run_on(DependencyHeads, models, tokenizer, sentence_batches(tokenizer, dev, 32, 128), **settings)
    pre, fine = ({row["relation"]: row for row in syntax["per_checkpoint"][c]["relations"]} for c in models)
    assert syntax["per_checkpoint"][PRETRAINED]["num_sentences"] == 150
    assert syntax["per_checkpoint"][PRETRAINED]["words_cut"] == 0
    assert {"all", "det", "nsubj", "case"} <= set(pre)
    assert pre["det"]["best"]["accuracy"] > 65 > fine["det"]["best"]["accuracy"]
    assert pre["all"]["best"]["accuracy"] > pre["all"]["baseline"]["accuracy"] + 5
    changes = {row["relation"]: row for row in syntax["per_pair"]["pretrained->finetuned"]["relations"]}
    assert changes["all"]["change"] < -10
    # clear of resampling the 150 sentences, the best (head, direction) chosen on one half of them and
    # scored on the other (cross-fitted): within a few points of the change of the best on all of them
    evidence = DependencyView.change_evidence({"result": syntax})["syntax_change_all"]
    assert (evidence["n"], evidence["unit"], evidence["direction"]) == (150, "treebank sentences", "falls")
    assert evidence["protocol"].startswith("cross-fitted") and evidence["interval"][1] < -10
    assert evidence["value"] == pytest.approx(evidence["levels"][1] - evidence["levels"][0])
    assert abs(evidence["value"] - changes["all"]["change"]) < 5
    assert syntax["per_checkpoint"][PRETRAINED]["offsets"] == [-3, -2, -1, 1, 2]
    # Clark's protocol counts every word: the roots (never predicted) and punctuation pull it down
    clark = syntax["per_checkpoint"][PRETRAINED][ALL_CLARK]
    assert clark["count"] == sum(map(len, dev)) > pre["all"]["count"]
    assert pre["all"]["best"]["accuracy"] > clark["best"]["accuracy"] > clark["baseline"]["accuracy"] + 5
    assert syntax["per_pair"]["pretrained->finetuned"][ALL_CLARK]["change"] < -10

    features = run_on(LinguisticFeatures, models, tokenizer, sentence_batches(tokenizer, dev, 32, 128), **settings)
    stored = features["per_checkpoint"][PRETRAINED]
    with_nouns = sum(bool(feature_positions(s, len(s))["nouns"]) for s in dev)
    assert stored["sentences_with_feature"]["nouns"] == with_nouns
    assert stored["sentences_with_feature"]["[CLS]"] == 150
    assert len(stored["per_head"]["negation"]) == 6
    # MiniLM's early layers look at [CLS] (Clark et al. saw it in BERT): some head puts a third there
    assert max(max(row) for row in stored["per_head"]["[CLS]"]) > 0.3

    items = [(TRAIN, s) for s in train] + [(DEV, s) for s in dev]
    probes = run_on(Probes, models, tokenizer, sentence_batches(tokenizer, train + dev, 32, 128, items), **settings)
    uas = {c: probes["per_checkpoint"][c]["uas"] for c in models}
    assert uas[PRETRAINED]["attn"] > uas[FINETUNED]["attn"] + 10
    evidence = ProbesView.change_evidence({"result": probes})["probes_uas_change_attn"]
    assert (evidence["n"], evidence["unit"], evidence["direction"]) == (150, "dev sentences", "falls")
    assert uas[PRETRAINED]["attn"] > uas[PRETRAINED]["right_branching"]
