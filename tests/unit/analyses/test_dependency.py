import pytest
import torch

from harness.analyses.dependency import OFFSETS, ROOT_GOLD, DependencyHeads, head_predictions, offset_predictions
from harness.config import AnalysisConfig
from harness.inputs.sources import SourceContext
from harness.inputs.sources.treebank import SyntaxSource
from harness.results.checkpoints import FINETUNED, PRETRAINED
from harness.views.dependency import ALL_CLARK, DependencyView
from harness.views.metrics import values
from tests.fixtures import finish, stream
from tests.unit.syntax_helpers import context, hand_made_batch, pointing_maps, sentence

# the cat sat on the mat .   (det, nsubj, root, case, det, obl, punct)
CAT = sentence(
    "the cat sat on the mat .", [2, 3, 0, 6, 6, 3, 3], ["det", "nsubj", "root", "case", "det", "obl", "punct"]
)


def run(sentences, maps, **settings):
    analysis = DependencyHeads(context(tuple(maps), **{"syntax_min_count": 1, **settings}))
    analysis.update(hand_made_batch(sentences, maps))
    return finish(analysis)


def rows_by_relation(result, checkpoint):
    return {row["relation"]: row for row in result["per_checkpoint"][checkpoint]["relations"]}


def test_head_pointing_every_dependent_at_its_head_scores_100():
    pointing = pointing_maps(CAT.heads)
    uniform = pointing_maps([0] * len(CAT))
    result = run([CAT], {PRETRAINED: [pointing], FINETUNED: [uniform]})
    pre, fine = rows_by_relation(result, PRETRAINED), rows_by_relation(result, FINETUNED)
    assert set(pre) == {"all", "det", "nsubj", "case", "obl"}  # punct and root are not scored
    changes = {row["relation"]: row for row in result["per_pair"]["pretrained->finetuned"]["relations"]}
    for relation, row in pre.items():
        assert row["best"] == {"layer": 1, "head": 1, "direction": "dependent->head", "accuracy": 100.0}
        assert fine[relation]["best"]["accuracy"] < 100.0
        assert changes[relation]["change"] == fine[relation]["best"]["accuracy"] - 100.0
        assert changes[relation]["after_at_before_head"] == fine[relation]["per_head"][0][0][0]
    assert pre["all"]["count"] == 5 and result["per_checkpoint"][PRETRAINED]["num_scored"] == 5
    assert pre["all"]["per_head"][0][0][0] == 100.0  # direction 1, layer 1, head 1


def test_head_attending_to_its_dependent_is_found_in_the_other_direction():
    chain = sentence("a b c d", [2, 3, 4, 0])  # every head has exactly one dependent
    maps = pointing_maps(chain.heads, transpose=True)
    row = rows_by_relation(run([chain], {PRETRAINED: [maps]}), PRETRAINED)["all"]
    assert row["best"]["direction"] == "head->dependent" and row["best"]["accuracy"] == 100.0
    assert row["by_direction"]["head->dependent"]["accuracy"] == 100.0
    assert row["by_direction"]["dependent->head"]["direction"] == "dependent->head"
    assert row["by_direction"]["dependent->head"]["accuracy"] < 100.0


def test_offset_baseline_on_a_right_branching_sentence_is_stored_with_every_checkpoint():
    right = sentence("a b c d e f", [2, 3, 4, 5, 6, 0])
    uniform = pointing_maps([0] * 6)
    result = run([right], {"a": [uniform], "b": [uniform], "c": [uniform]})
    for checkpoint in "abc":
        assert rows_by_relation(result, checkpoint)["all"]["baseline"] == {"offset": 1, "accuracy": 100.0}
    left = sentence("a b c d e f", [0, 1, 2, 3, 4, 5])
    row = rows_by_relation(run([left], {PRETRAINED: [uniform]}), PRETRAINED)["all"]
    assert row["baseline"] == {"offset": -1, "accuracy": 100.0}


def test_possessor_is_read_at_the_following_apostrophe_s():
    # "John 's dog barked": John -nmod:poss-> dog; 's -case-> John
    poss = sentence("John 's dog barked", [3, 1, 4, 0], ["nmod:poss", "case", "nsubj", "root"])
    maps = torch.full((1, 2, 6, 6), 1 / 6)
    maps[:, 0, 2] = 0.0
    maps[:, 0, 2, 3] = 1.0  # "'s" attends to "dog": credited to the possessor "John"
    assert rows_by_relation(run([poss], {PRETRAINED: [maps]}), PRETRAINED)["nmod:poss"]["best"]["accuracy"] == 100.0
    assert DependencyHeads.reference["ud_to_sd"]["nmod:poss"] == "poss"


def test_a_word_never_predicts_itself():
    maps = torch.eye(3)[None, None] + 0.1 * torch.tensor([[0, 1.0, 0], [0, 0, 1.0], [1.0, 0, 0]])[None, None]
    assert head_predictions(maps)[0, 0, 0].tolist() == [1, 2, 0]


def test_relations_below_min_count_are_dropped_and_cut_words_counted(tiny_pair, tiny_tokenizer, tmp_path):
    lines = []
    for _ in range(3):
        lines += [
            "1\tthe\t_\tDET\tDT\t_\t2\tdet\t_\t_",
            "2\tcats\t_\tNOUN\tNNS\t_\t3\tnsubj\t_\t_",
            "3\tsat\t_\tVERB\tVBD\t_\t0\troot\t_\t_",
            "4\t.\t_\tPUNCT\t.\t_\t3\tpunct\t_\t_",
            "",
        ]
    path = tmp_path / "tiny.conllu"
    path.write_text("\n".join(lines))
    settings = AnalysisConfig(syntax_data=path, max_tokens=5, eval_batch_size=2, syntax_min_count=3)
    source = SyntaxSource(SourceContext(tiny_tokenizer, settings)).stream()
    analysis = DependencyHeads(context(tuple(tiny_pair), 2, 4, syntax_data=path, max_tokens=5, syntax_min_count=3))
    for batch in stream(tiny_pair, source.batches):
        analysis.update(batch)
    result = finish(analysis)["per_checkpoint"][FINETUNED]
    # 5 tokens = [CLS] the cat ##s [SEP]: "sat" and "." are cut, so only "det" can be scored
    assert [row["relation"] for row in result["relations"]] == ["all", "det"]
    assert result["words_cut"] == 6 and result["arcs_cut"] == 3 and source.notes["words_cut"] == 6
    grid = torch.tensor(result["relations"][0]["per_head"])
    assert grid.shape == (2, 2, 4) and ((grid >= 0) & (grid <= 100)).all()


def test_metrics_name_checkpoint_and_relation():
    pointing = pointing_maps(CAT.heads)
    result = run([CAT], {PRETRAINED: [pointing], FINETUNED: [pointing_maps([0] * len(CAT))]})
    metrics = values(DependencyView.metrics({"result": result}))
    assert metrics["syntax_pretrained_all"] == 100.0 and metrics["syntax_finetuned_all"] < 100.0
    assert "syntax_baseline_nsubj" in metrics


# Punctuation and roots: "." points at the wrong word; "go" and "barks" are roots (never predicted).
PROTOCOL_SENTENCES = [
    sentence(
        "the cat sat on the mat .", [2, 3, 0, 6, 6, 3, 3], ["det", "nsubj", "root", "case", "det", "obl", "punct"]
    ),
    sentence("go home .", [0, 1, 1], ["root", "obl", "punct"]),
    sentence("a big dog barks", [3, 3, 4, 0], ["det", "amod", "nsubj", "root"]),
]
POINTED_HEADS = [[2, 3, 0, 6, 6, 3, 6], [0, 1, 1], [3, 3, 4, 0]]


def test_ours_leaves_punctuation_and_roots_out_and_clarks_counts_every_word():
    pointing = [pointing_maps(heads) for heads in POINTED_HEADS]
    uniform = [pointing_maps([0] * len(heads)) for heads in POINTED_HEADS]
    result = run(PROTOCOL_SENTENCES, {PRETRAINED: pointing, FINETUNED: uniform})
    stats = result["per_checkpoint"][PRETRAINED]
    ours, clark = stats["relations"][0], stats[ALL_CLARK]
    assert {row["relation"] for row in stats["relations"]} == {"all", "det", "nsubj", "case", "obl", "amod"}
    # ours: the 9 non-punctuation dependents, all pointed at; Clark: 14 words, of which the
    # 3 roots and the misdirected "." are wrong
    assert (ours["count"], clark["count"], stats["num_scored"]) == (9, 14, 9)
    assert ours["best"]["accuracy"] == 100.0
    assert clark["best"] == {
        "layer": 1,
        "head": 1,
        "direction": "dependent->head",
        "accuracy": pytest.approx(100 * 10 / 14),
    }
    # offset +1: ours 5 of 9; Clark 5 of 14 (past the end is the last word: no credit here)
    assert ours["baseline"] == {"offset": 1, "accuracy": pytest.approx(100 * 5 / 9)}
    assert clark["baseline"] == {"offset": 1, "accuracy": pytest.approx(100 * 5 / 14)}
    change = result["per_pair"]["pretrained->finetuned"][ALL_CLARK]
    # the uniform head: "the" -> "cat", "home" -> "go", "." -> "go" (the first other word wins ties)
    assert change["after_at_before_head"] == pytest.approx(100 * 3 / 14)
    assert change["change"] == pytest.approx(100 * 3 / 14 - 100 * 10 / 14)
    metrics = values(DependencyView.metrics({"result": result}))
    assert metrics["syntax_pretrained_all_clark"] == clark["best"]["accuracy"]
    assert metrics["syntax_baseline_all_clark"] == clark["baseline"]["accuracy"]


def test_clark_offsets_clip_to_root_and_last_word_and_ours_do_not():
    predicted = offset_predictions(torch.tensor([0, 2]), 3)  # words 0 and 2 of a 3-word sentence
    assert predicted.shape == (2, 5, 2)
    assert predicted[0, :, 0].tolist() == [-3, -2, -1, 1, 2]  # ours: -1 is no word, never the root
    assert predicted[1, :, 0].tolist() == [ROOT_GOLD] * 3 + [1, 2]
    assert predicted[1, :, 1].tolist() == [ROOT_GOLD, 0, 1, 2, 2]
    go_home = sentence("go home", [0, 1], ["root", "obl"])
    row = run([go_home], {PRETRAINED: [pointing_maps([0, 0])]})["per_checkpoint"][PRETRAINED][ALL_CLARK]
    # offset -1: "go" -> ROOT (clipped, so right) and "home" -> "go"; -2 and -3 miss "home"
    assert row["baseline"] == {"offset": -1, "accuracy": 100.0}


def test_the_papers_all_is_shown_beside_the_clark_protocol_only(tmp_path):
    pointing = [pointing_maps(heads) for heads in POINTED_HEADS]
    result = run(PROTOCOL_SENTENCES, {PRETRAINED: pointing, FINETUNED: pointing})
    assert DependencyHeads.reference["clark_table1"][ALL_CLARK]["accuracy"] == 34.5
    assert "all" not in DependencyHeads.reference["clark_table1"]
    entry = {"result": result, "pairs": [[PRETRAINED, FINETUNED]]}
    run_of = {"model": "tiny", "task": "test"}
    paths = DependencyView.draw(entry, run_of, tmp_path)
    assert {path.name for path in paths} == {"syntax_relations.png", "syntax_all_relations.png"}
    rows: dict[str, str] = {}  # the first table's rows (a second table lists the best head per direction)
    for line in DependencyView.tables(entry, run_of)["syntax_table1"].splitlines():
        rows.setdefault(line.split(" | ")[0].lstrip("| "), line)
    assert rows["all"].endswith("| 55.6 (+1) |  |  |  |  |")  # ours: no paper number
    assert rows[ALL_CLARK].endswith("| 35.7 (+1) | all | 7-6 | 34.5 | 26.3 (+1) |")


def test_the_offset_baseline_tries_clarks_offsets_minus_3_to_plus_2():
    assert OFFSETS == (-3, -2, -1, 1, 2)  # their code's range(-3, 3); its 0, the word itself, is never right
    # every dependent's head three words on: only +3 would find them, and it is not tried
    ahead = sentence("a b c d e f", [4, 5, 6, 0, 0, 0])
    stats = run([ahead], {PRETRAINED: [pointing_maps([0] * 6)]})["per_checkpoint"][PRETRAINED]
    assert stats["offsets"] == [-3, -2, -1, 1, 2]
    assert rows_by_relation({"per_checkpoint": {PRETRAINED: stats}}, PRETRAINED)["all"]["baseline"]["accuracy"] == 0.0


# Ten copies of CAT: a head that finds every head word, or uniform attention, per sentence.
POINTING, UNIFORM = pointing_maps(CAT.heads), pointing_maps([0] * len(CAT))


def test_the_best_head_lost_in_most_sentences_is_a_clear_fall_over_resampled_sentences():
    result = run([CAT] * 10, {PRETRAINED: [POINTING] * 9 + [UNIFORM], FINETUNED: [POINTING] + [UNIFORM] * 9})
    units = result["per_checkpoint"][PRETRAINED]["units"]
    assert units["unit"] == "treebank sentences" and units["numerators"]["shape"] == [10, 4]  # 2 directions x 2 heads
    evidence = DependencyView.change_evidence({"result": result})["syntax_change_all"]
    after, before = (rows_by_relation(result, c)["all"]["best"]["accuracy"] for c in (FINETUNED, PRETRAINED))
    assert evidence["value"] == pytest.approx(after - before) and evidence["n"] == 10
    assert evidence["interval"][1] < 0 and evidence["direction"] == "falls"


def test_the_best_head_found_in_other_sentences_after_is_no_clear_change():
    result = run([CAT] * 10, {PRETRAINED: [POINTING] * 5 + [UNIFORM] * 5, FINETUNED: [UNIFORM] * 5 + [POINTING] * 5})
    evidence = DependencyView.change_evidence({"result": result})["syntax_change_all"]
    low, high = evidence["interval"]
    assert evidence["value"] == pytest.approx(0.0) and low < 0 < high and evidence["direction"] == "no clear change"
    table = DependencyView.tables({"result": result, "pairs": [[PRETRAINED, FINETUNED]]}, {"model": "tiny"})
    assert f"[{low:+.1f}, {high:+.1f}] points, no clear change." in table["syntax_table1"]
