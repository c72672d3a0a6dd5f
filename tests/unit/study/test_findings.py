"""A study's findings: judged only on the tasks its models learned, beside what the papers found,
with the claims that judge the papers' points on hand-made summary entries."""

from __future__ import annotations

import pytest

from harness.cli import main
from harness.config import StudyConfig
from harness.present.study_figures import findings_table, time_table
from harness.results.checkpoints import FINETUNED, MAIN_PAIR, PRETRAINED
from harness.study.aggregate import beside_paper, claim_findings, change_findings, findings, judged_tasks, learning
from harness.views.ablation import AblationView, importance_beats_random
from harness.views.base import PaperPoint
from harness.views.cosine import CosineView
from harness.views.patterns import pattern_shares_table
from harness.views.surface import cls_peaks_before_sep, sep_takes_half_a_layer


def evaluation(learned: bool) -> dict:
    return {"version": 2, "pairs": [list(MAIN_PAIR)], "result": {"per_pair": {"pretrained->finetuned": {
        "learned": learned}}}}


def cosine(per_layer: list[float]) -> dict:
    return {"version": CosineView.version, "result": {"per_pair": {"pretrained->finetuned": {"per_layer": per_layer}}}}


def summary(learned: bool, per_layer: list[float]) -> dict:
    return {"analyses": {"evaluation": evaluation(learned), "cosine": cosine(per_layer)}}


LAST_CHANGE_MOST, FIRST_CHANGES_MOST = [0.9, 0.8, 0.5, 0.4], [0.4, 0.8, 0.9, 0.95]


def test_tasks_not_learned_on_every_seed_are_named_and_left_out_of_the_findings():
    by_task = {"mrpc": {42: summary(True, LAST_CHANGE_MOST), 43: summary(True, LAST_CHANGE_MOST)},
               "rte": {42: summary(True, FIRST_CHANGES_MOST), 43: summary(False, FIRST_CHANGES_MOST)}}
    checked = learning(by_task)
    assert checked["rte"] == {"seeds": {"42": True, "43": False}, "learned": 1, "of": 2, "every_seed": False}
    judged, kept_out = judged_tasks(checked, "learned")
    assert judged == ["mrpc"]
    assert kept_out["rte"].startswith("its fine-tuned model is clearly above the majority class on 1 of 2 seeds")
    found = findings(by_task, {}, judged)
    assert found["beats_majority"]["per_task"] == {"mrpc": {"holds": 2, "seeds": 2}, "rte": {"holds": 1, "seeds": 2}}
    assert found["last_layers_change_most"]["per_task"] == {"mrpc": {"holds": 2, "seeds": 2}}  # rte not judged
    assert found["last_layers_change_most"]["paper"]["verdict"] == "agrees"
    everything = findings(by_task, {}, judged_tasks(checked, "all")[0])
    assert everything["last_layers_change_most"]["per_task"]["rte"] == {"holds": 0, "seeds": 2}
    assert everything["last_layers_change_most"]["paper"]["verdict"] == "partly"


def test_the_study_flag_chooses_which_tasks_the_findings_are_judged_on(capsys):
    assert StudyConfig().findings_from == "learned"
    with pytest.raises(SystemExit) as stopped:
        main(["study", "--findings-from", "some"])
    assert stopped.value.code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "--findings-from" in line and "learned" in line


def test_a_finding_stands_beside_its_paper_as_agrees_partly_disagrees_or_not_compared():
    paper = PaperPoint("Someone 2019, Fig. 1", "it holds", "holds")
    assert beside_paper(paper, {"rte": [True, True], "mrpc": [True]})["verdict"] == "agrees"
    partly = beside_paper(paper, {"rte": [True, True], "mrpc": [True, False]})
    assert (partly["verdict"], partly["detail"]) == ("partly", "the paper's way on every seed of 1 of 2 tasks")
    assert beside_paper(paper, {"rte": [False, False], "mrpc": [True, False]})["verdict"] == "disagrees"
    assert beside_paper(paper, {})["verdict"] == "not compared"


def test_a_paper_compares_only_the_tasks_it_ran_and_the_direction_it_found_per_task():
    class Shares(CosineView):
        name = "cosine"
        claims = {}
        signed_changes = {"share_change": "the share"}
        papers = {"share_change": PaperPoint("P 2020", "falls on rte, rises on cola", {"rte": "falls", "cola": "rises"})}

    by_task = {task: {42: {"analyses": {"cosine": cosine([0.5])}}} for task in ("rte", "cola", "wnli")}
    tasks = {"rte": {"metrics": {"share_change": {"values": [-0.1]}}},
             "cola": {"metrics": {"share_change": {"values": [-0.2]}}},
             "wnli": {"metrics": {"share_change": {"values": [-0.3]}}}}
    (finding,) = change_findings(Shares, by_task, tasks).values()
    assert finding["claim"] == "the share falls with fine-tuning"
    assert (finding["paper"]["verdict"], finding["paper"]["detail"]) == (
        "partly", "the paper's way on every seed of 1 of 2 tasks")  # rte falls as the paper's; cola does not; wnli: none

    del tasks["cola"]["metrics"]["share_change"]  # undefined there (a single-sentence task's cross-sentence share)
    (finding,) = change_findings(Shares, by_task, tasks).values()
    assert set(finding["per_task"]) == {"rte", "wnli"}

    claims = claim_findings(CosineView, {"wnli": {42: summary(True, LAST_CHANGE_MOST)}})
    assert claims["last_layers_change_most"]["paper"]["verdict"] == "not compared"  # Kovaleva et al. had no WNLI


def surface(cls_by_layer: dict[str, list[float]], sep_by_layer: dict[str, list[float]]) -> dict:
    return {"result": {"per_checkpoint": {c: {"per_layer": {"cls": cls_by_layer[c], "sep": sep_by_layer[c]}}
                                          for c in (PRETRAINED, FINETUNED)}}}


def test_cls_before_sep_and_sep_over_half_a_layer_are_judged_per_checkpoint():
    early_cls = {PRETRAINED: [0.6, 0.1, 0.1], FINETUNED: [0.5, 0.2, 0.1]}
    late_sep = {PRETRAINED: [0.1, 0.3, 0.55], FINETUNED: [0.1, 0.2, 0.4]}
    assert cls_peaks_before_sep(surface(early_cls, late_sep))
    assert sep_takes_half_a_layer(surface(early_cls, late_sep))
    late_cls = {**early_cls, FINETUNED: [0.1, 0.2, 0.5]}  # the fine-tuned model's [CLS] peak moved last
    assert not cls_peaks_before_sep(surface(late_cls, late_sep))
    assert not sep_takes_half_a_layer(surface(early_cls, {**late_sep, PRETRAINED: [0.1, 0.3, 0.5]}))


def ablation(importance: int, randoms: list[int], head_delta: float) -> dict:
    counts = [0, 7, 14, 21, 28]  # heads pruned at each step
    steps = {"importance": counts.index(importance), "oracle": 4,
             **{f"random_{i}": counts.index(count) for i, count in enumerate(randoms)}}
    family = {"delta": [[head_delta, -0.01]], "significant": 0}
    return {"version": AblationView.version, "result": {"per_checkpoint": {FINETUNED: {
        "trained": True, "heads": {"uniform": family, "zero": family}, "layers": {"uniform": family, "zero": family},
        "pruning": {"heads_pruned": counts, "steps_within_one_point": steps}}}}}


def test_the_ablation_claims_read_the_fine_tuned_models_disabling_and_pruning():
    assert importance_beats_random(ablation(14, [7, 14, 21, 0, 7], 0.01))
    assert not importance_beats_random(ablation(7, [14, 14, 21, 0, 7], 0.01))
    helps, hurts = ablation(14, [7] * 5, 0.02), ablation(14, [7] * 5, -0.001)
    assert AblationView.claims["disabling_a_head_helps"].judge(helps)
    assert not AblationView.claims["disabling_a_head_helps"].judge(hurts)
    found = claim_findings(AblationView, {"mrpc": {42: {"analyses": {"ablation": helps}}, 43: {"analyses": {}}}})
    assert found["disabling_a_head_helps"]["per_task"] == {"mrpc": {"holds": 1, "seeds": 1}}  # the one seed it ran on


def test_pattern_shares_stand_beside_prasanna_et_al_per_task_with_the_corrected_intervals():
    def share(value: float) -> dict:
        return {"mean": value, "std": 0.0, "n": 3, "values": [value] * 3}
    classes = ("vertical", "diagonal", "vertical_diagonal", "block", "heterogeneous")
    metrics = {f"pattern_{c}_{name}": share(0.2) for c in (PRETRAINED, FINETUNED) for name in classes}
    corrected = {c: {name: {"mean": 0.25, "interval": [0.1, 0.3]} for name in (
        "vertical", "diagonal", "vertical+diagonal", "block", "heterogeneous")} for c in (PRETRAINED, FINETUNED)}
    table = pattern_shares_table({"mrpc": {"metrics": metrics, "pattern_corrected": corrected},
                                  "wnli": {"metrics": metrics}})
    assert "| mrpc | pre-trained |" + " 20.0; 25.0 [10, 30] |" * 5 + " 25.6 |" in table
    assert "| 23.3 |" in table.splitlines()[3]  # fine-tuned MRPC: Prasanna et al.'s 23.3
    assert table.splitlines()[-1].startswith("| wnli | fine-tuned | 20.0 |")  # no intervals stored, no paper
    assert table.splitlines()[-1].endswith("| 20.0 | - |")


def test_the_time_table_gives_minutes_per_seed_and_the_totals():
    def seconds(values: list[float]) -> dict:
        return {"mean": sum(values) / len(values), "n": len(values), "values": values}
    table = time_table({"rte": {"fine-tuning": seconds([300.0, 420.0]), "analyses": seconds([60.0, 60.0]),
                                "ablation": seconds([600.0])},
                        "wnli": {"fine-tuning": seconds([30.0]), "analyses": seconds([30.0])}})
    assert "| rte | 2 | 6.0 | 1.0 | 10.0 (1) | 24 |" in table and "| wnli | 1 | 0.5 | 0.5 | - | 1 |" in table
    assert table.splitlines()[-1] == "| all tasks |  |  |  |  | 25 |"


def test_the_findings_table_says_each_papers_point_and_the_tasks_kept_out():
    by_task = {"mrpc": {42: summary(True, LAST_CHANGE_MOST)}, "wnli": {42: summary(False, LAST_CHANGE_MOST)}}
    judged, kept_out = judged_tasks(learning(by_task), "learned")
    table = findings_table({"findings": findings(by_task, {}, judged), "kept_out_of_findings": kept_out})
    assert ("| the last two layers change most (the two lowest per-layer cosines) | 1 of 1 | mrpc 1/1 | "
            "Kovaleva et al. 2019, Fig. 5: the last two layers of bert-base-uncased change most on every task but "
            "QQP (a study without QQP cannot check that exception) | agrees (the paper's way on every seed of 1 of "
            "1 tasks) |") in table
    assert "Not in the findings: wnli: its fine-tuned model is clearly above the majority class on 0 of 1" in table


def test_the_ablation_table_names_the_heads_and_layers_that_help_and_hurt_most_per_task():
    def spread(*values: float) -> dict:
        return {"mean": sum(values) / len(values), "n": len(values), "values": list(values)}
    metrics = {"ablation_intact_finetuned": spread(0.8, 0.8),
               "ablation_best_head_uniform_delta_finetuned": spread(0.02, 0.04),
               "ablation_best_head_uniform_layer_finetuned": spread(1, 1),
               "ablation_best_head_uniform_head_finetuned": spread(3, 3),
               "ablation_worst_head_uniform_delta_finetuned": spread(-0.1, -0.2),
               "ablation_worst_head_uniform_layer_finetuned": spread(2, 3),  # the seeds disagree: no position
               "ablation_worst_head_uniform_head_finetuned": spread(1, 1),
               "ablation_best_layer_uniform_delta_finetuned": spread(0.0, 0.0),
               "ablation_best_layer_uniform_layer_finetuned": spread(5, 5),
               "ablation_worst_layer_uniform_delta_finetuned": spread(-0.3, -0.3),
               "ablation_worst_layer_uniform_layer_finetuned": spread(2, 2),
               **{f"ablation_significant_{scope}_{mode}_finetuned": spread(1, 1)
                  for scope in ("heads", "layers") for mode in ("uniform", "zero")},
               "ablation_pruned_within_one_point_importance_finetuned": spread(22, 22)}
    study = {"tasks": {"mrpc": {"metrics": metrics}, "rte": {"metrics": {}}}}
    table = AblationView.study_tables(study)["ablation_by_task"]
    assert "| mrpc | 2 | 80.0 | 1-3: +3.0 | -15.0 | 5: +0.0 | 2: -30.0 | 1 / 1 / 1 / 1 | 22 / - |" in table
    assert "| rte |" not in table  # the ablation did not run there
    assert AblationView.study_tables({"tasks": {"rte": {"metrics": {}}}}) == {}
