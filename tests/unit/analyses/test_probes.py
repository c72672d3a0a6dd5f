import math
import random
from collections.abc import Callable
from dataclasses import replace

import pytest
import torch

from harness.analyses.probes import Probes, distance_features, pair_vectors, right_branching
from harness.config import QUICK, AnalysisConfig
from harness.inputs.sources import SourceContext
from harness.inputs.sources.treebank import DEV, TRAIN, ProbeSource
from harness.results.checkpoints import FINETUNED, PRETRAINED
from harness.results.store import FileHashes
from harness.views.metrics import values
from harness.views.probes import ProbesView
from tasks.errors import InputError
from tests.fixtures import finish
from tests.unit.syntax_helpers import context, hand_made_batch, pointing_maps, sentence

WORDS = "the cat sat on a mat dog ran he she it is not happy".split()


def random_tree(rng: random.Random) -> list[int]:
    """Heads (1-based, 0 = root) of a random projective-or-not tree: each word attaches to an
    earlier word, except a random root."""
    n = rng.randint(3, 8)
    order = list(range(1, n + 1))
    rng.shuffle(order)
    heads = [0] * n
    for k, word in enumerate(order[1:], start=1):
        heads[word - 1] = rng.choice(order[:k])
    return heads


def batches(
    split: str, count: int, seed: int, pointing: Callable[[int], tuple[bool, bool]] = lambda _: (True, False)
) -> list:
    """``count`` one-sentence batches of random trees; ``pointing(index)`` says, per checkpoint
    (pre-trained, fine-tuned), whether head 1 points at the gold heads of sentence ``index``
    (else every head attends uniformly)."""
    rng = random.Random(seed)
    out = []
    for index in range(count):
        heads = random_tree(rng)
        s = sentence(" ".join(rng.choice(WORDS) for _ in heads), heads)
        maps = {
            checkpoint: [pointing_maps(heads if points else [0] * len(heads))]
            for checkpoint, points in zip((PRETRAINED, FINETUNED), pointing(index))
        }
        out.append(hand_made_batch([s], maps, items=[(split, s)]))
    return out


# Glorot starts the pointing head's weight at a random value (here below the other head's), so
# the probe needs more sentences to read it than from equal weights.
@pytest.mark.parametrize(("init", "train_sentences", "attn_floor"), [("zeros", 300, 95.0), ("glorot", 1000, 80.0)])
@pytest.mark.slow
def test_probe_reads_a_head_that_points_at_gold_heads_and_not_uniform_attention(init, train_sentences, attn_floor):
    analysis = Probes(context(analysis_seed=0, probe_init=init))
    for batch in batches(TRAIN, train_sentences, seed=1) + batches(DEV, 40, seed=2):
        analysis.update(batch)
    result = finish(analysis)
    pre, fine = result["per_checkpoint"][PRETRAINED], result["per_checkpoint"][FINETUNED]
    assert pre["train_sentences"] == train_sentences and pre["dev_sentences"] == 40 and pre["probe_init"] == init
    assert pre["uas"]["attn"] >= attn_floor
    assert pre["uas"]["attn_glove"] >= 80.0
    assert fine["uas"]["attn"] <= 40.0  # uniform maps carry no syntax
    change = result["per_pair"]["pretrained->finetuned"]["uas_change"]["attn"]
    assert change == fine["uas"]["attn"] - pre["uas"]["attn"]
    evidence = ProbesView.change_evidence({"result": result})["probes_uas_change_attn"]
    assert evidence["value"] == pytest.approx(change, abs=1e-9)
    assert (evidence["n"], evidence["unit"]) == (40, "dev sentences")
    assert evidence["interval"][1] < 0 and evidence["direction"] == "falls"
    assert pre["uas"]["distances_glove"] == fine["uas"]["distances_glove"]  # the baselines see no attention
    weights = torch.tensor(pre["attn_head_weights"]["dependent->head"])
    assert weights.shape == (1, 2) and weights[0, 0] > weights[0, 1]  # it learned to read head 1


def test_probes_right_on_other_dev_sentences_after_are_no_clear_change():
    """Both probes learn to read head 1; on dev it points at the gold heads in the even sentences
    of the pre-trained checkpoint and in the odd ones of the fine-tuned: what differs is which
    sentences each is scored well on, not how well."""
    analysis = Probes(context(analysis_seed=0))
    for batch in batches(TRAIN, 150, seed=1, pointing=lambda _: (True, True)) + batches(
        DEV, 40, seed=2, pointing=lambda index: (index % 2 == 0, index % 2 == 1)
    ):
        analysis.update(batch)
    result = finish(analysis)
    evidence = ProbesView.change_evidence({"result": result})["probes_uas_change_attn"]
    low, high = evidence["interval"]
    assert low < 0 < high and evidence["direction"] == "no clear change"
    table = ProbesView.tables({"result": result, "pairs": [[PRETRAINED, FINETUNED]]}, {"model": "tiny"})
    assert f"{evidence['value']:+.1f} [{low:+.1f}, {high:+.1f}] points, no clear change." in table["probes_table3"]


def test_right_branching_baseline_scores_right_branching_trees_fully():
    analysis = Probes(context(analysis_seed=0))
    right = sentence("a b c d", [2, 3, 4, 0])
    uniform = pointing_maps([0] * 4)
    analysis.update(hand_made_batch([right], {PRETRAINED: [uniform], FINETUNED: [uniform]}, items=[(DEV, right)]))
    result = finish(analysis)
    assert result["per_checkpoint"][FINETUNED]["uas"]["right_branching"] == 100.0
    metrics = values(ProbesView.metrics({"result": result}))
    assert metrics["probes_uas_right_branching"] == 100.0 and "probes_uas_finetuned_attn_glove" in metrics
    assert right_branching(4).tolist() == [2, 3, 4, 0]


def test_training_sentences_after_dev_sentences_are_refused():
    analysis = Probes(context(analysis_seed=0))
    dev, train = batches(DEV, 1, seed=3) + batches(TRAIN, 1, seed=4)
    analysis.update(dev)
    with pytest.raises(InputError, match="syntax-probe"):
        analysis.update(train)


def test_pair_and_distance_features_have_root_in_column_zero():
    vectors = torch.arange(6.0).reshape(3, 2)
    pairs = pair_vectors(vectors)
    assert pairs.shape == (3, 4, 4) and pairs[:, 0].abs().sum() == 0
    assert pairs[0, 3].tolist() == [0.0, 1.0, 4.0, 5.0]  # word 0 with candidate word 2
    features = distance_features(3, torch.device("cpu"))
    assert features.shape == (3, 4, 8)
    assert features[:, 0, -1].tolist() == [1.0, 1.0, 1.0] and features[:, 1:, -1].sum() == 0
    assert features[0, 2, 3] == 1.0  # candidate word 1 is one to the right of word 0
    assert abs(features[0, 3, 0] - 2 / 3) < 1e-6  # two ahead, relative to the length


def test_probe_source_streams_the_train_sample_before_every_dev_sentence(tiny_tokenizer, tmp_path):
    def write(name, count):
        rows = ["1\tthe\t_\tDET\tDT\t_\t2\tdet\t_\t_\n2\tcat\t_\tNOUN\tNN\t_\t0\troot\t_\t_\n" for _ in range(count)]
        (tmp_path / name).write_text("\n".join(rows))

    write("tb-dev.conllu", 5)
    write("tb-train.conllu", 30)
    settings = AnalysisConfig(syntax_data=tmp_path / "tb-dev.conllu", eval_batch_size=4, probe_train_sentences=12)
    stream = ProbeSource(SourceContext(tiny_tokenizer, settings)).stream()
    splits = [aligned.item[0] for batch in stream.batches for aligned in batch.items]
    assert splits == [TRAIN] * 12 + [DEV] * 5 and stream.num_items == 17
    assert stream.notes["train_sentences"] == 12 and stream.notes["sentences"] == 5
    assert stream.notes["train_treebank"].endswith("tb-train.conllu")
    whole = ProbeSource(SourceContext(tiny_tokenizer, replace(settings, probe_train_sentences=0))).stream()
    assert whole.notes["train_sentences"] == 30  # 0: the whole training treebank, as Clark et al.
    quick = AnalysisConfig(syntax_data=tmp_path / "tb-dev.conllu", probe_train_sentences=0, quick=True)
    assert quick.probe_train_sentences == QUICK["probe_train_sentences"]  # --quick bounds "all" too


def test_missing_training_treebank_is_a_clear_error(tiny_tokenizer, tmp_path):
    (tmp_path / "only-dev.conllu").write_text("1\thi\t_\tX\tUH\t_\t0\troot\t_\t_\n")
    source = ProbeSource(SourceContext(tiny_tokenizer, AnalysisConfig(syntax_data=tmp_path / "only-dev.conllu")))
    with pytest.raises(InputError, match="only-train.conllu"):
        source.identity()


@pytest.mark.parametrize("init", ["zeros", "glorot"])
def test_both_checkpoints_start_from_the_same_probe(init):
    analysis = Probes(context(analysis_seed=3, probe_init=init))
    for kind in ("attn", "attn_glove"):
        first, second = (analysis.probes[(c, kind)].module.state_dict() for c in (PRETRAINED, FINETUNED))
        assert all(torch.equal(first[name], second[name]) for name in first)


def test_glorot_init_draws_clarks_ranges_and_zeros_starts_every_head_equal():
    glorot = Probes(context(analysis_seed=0, probe_init="glorot"))  # 1 layer x 2 heads: 4 maps; GloVe 50-d
    attn = glorot.probes[(PRETRAINED, "attn")].module
    # TensorFlow's fans: a scalar 1 and 1 (+-sqrt 3), a vector of 4 entries 4 and 4
    for scalar in (attn.root_start.detach(), attn.root_end.detach()):
        assert scalar.dim() == 0 and 0 < abs(float(scalar)) <= math.sqrt(3) and float(scalar) != 1.0
    assert attn.weights.abs().max() <= math.sqrt(6 / 8) and attn.weights.abs().min() > 0
    pair = glorot.probes[(PRETRAINED, "attn_glove")].module.pair_weights
    limit = math.sqrt(6 / (100 + 4))
    assert pair.weight.abs().max() <= limit and pair.weight.abs().max() > 0.9 * limit  # 400 draws reach the edge
    assert pair.bias.abs().sum() == 0
    hidden, _, out = glorot.distance.module.mlp
    assert hidden.weight.abs().max() <= math.sqrt(6 / (108 + 256))  # 8 distance features + the 100-d GloVe pair
    assert hidden.bias.abs().sum() == out.bias.abs().sum() == 0
    zeros = Probes(context(analysis_seed=0)).probes[(PRETRAINED, "attn")].module
    assert zeros.weights.abs().sum() == 0 and zeros.root_start.item() == zeros.root_end.item() == 1.0


def test_probe_init_is_validated_and_keys_the_stored_result():
    with pytest.raises(InputError, match="--probe-init xavier: must be one of zeros, glorot"):
        AnalysisConfig(probe_init="xavier")
    inits = ("zeros", "glorot")
    identities = [Probes.settings_identity(AnalysisConfig(probe_init=init), FileHashes()) for init in inits]
    assert [identity["probe_init"] for identity in identities] == list(inits)
