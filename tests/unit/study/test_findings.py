"""A study's findings of each analysis: the claims that judge the papers' points on hand-made
summary entries, and the study's tables (how seeds' evidence becomes findings:
test_verdicts.py)."""

from __future__ import annotations

import pytest

from harness.cli import main
from harness.config import StudyConfig
from harness.present.study_figures import time_table
from harness.results.checkpoints import FINETUNED, PRETRAINED
from harness.study.aggregate import claim_findings
from harness.study.runner import intervening_sources
from harness.views import VIEWS
from harness.views.ablation import AblationView
from harness.views.evidence import interval_verdict
from harness.views.patterns import pattern_shares_table


def test_the_study_flag_chooses_which_tasks_the_findings_are_judged_on(capsys):
    assert StudyConfig().findings_from == "learned"
    with pytest.raises(SystemExit) as stopped:
        main(["study", "--findings-from", "some"])
    assert stopped.value.code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "--findings-from" in line and "learned" in line


def ablation(head_p_holm: float, importance_minus_random: list[float]) -> dict:
    """A fine-tuned sweep of two heads on 200 examples: head 1-1 gains 2 points (Holm-adjusted p ``head_p_holm``),
    head 1-2 loses 1; the importance order's pruning area minus the random orders' with that interval."""
    family = {
        "delta": [[0.02, -0.01]],
        "low": [[0.005, -0.03]],
        "high": [[0.04, 0.01]],
        "low_simultaneous": [[0.001, -0.035]],
        "high_simultaneous": [[0.045, 0.015]],
        "simultaneous_level": 0.975,
        "gain_bound": [[0.04, 0.01]],
        "p": [[head_p_holm / 2, 1.0]],
        "p_holm": [[head_p_holm, 1.0]],
        "significant": int(head_p_holm < 0.05),
    }
    beats = {
        "value": sum(importance_minus_random) / 2,
        **interval_verdict(importance_minus_random, "dev examples", 200, "area, importance minus random"),
    }
    return {
        "version": AblationView.version,
        "result": {
            "per_checkpoint": {
                FINETUNED: {
                    "trained": True,
                    "examples": 200,
                    "heads": {"uniform": family, "zero": family},
                    "layers": {"uniform": family, "zero": family},
                    "pruning": {"importance_vs_random": beats},
                }
            }
        },
    }


def test_the_ablation_claims_read_the_fine_tuned_models_disabling_and_pruning():
    beats, tie = ablation(0.5, [0.01, 0.05]), ablation(0.5, [-0.01, 0.05])
    assert AblationView.claims["importance_beats_random"].judge(beats)["verdict"] == "holds"
    assert AblationView.claims["importance_beats_random"].judge(tie)["verdict"] == "unclear"  # a tie is no win
    assert AblationView.claims["importance_beats_oracle"].judge(beats) is None  # not measured on this run
    helps, noise = ablation(0.01, [0.01, 0.05]), ablation(0.5, [0.01, 0.05])
    evidence = AblationView.claims["disabling_a_head_helps"].judge(helps)
    assert (evidence["verdict"], evidence["where"], evidence["n"]) == ("holds", "1-1", 200)
    assert evidence["text"] == (
        "layer-head 1-1: +2.0 points [+0.1, +4.5] (simultaneous, 97.50% each), Holm-adjusted p 0.01; 200 dev examples"
    )
    evidence = AblationView.claims["disabling_a_head_helps"].judge(noise)
    assert evidence["verdict"] == "unclear"  # the largest of the changes is a gain, but not clear of Holm's correction
    assert evidence["text"].startswith("no head's gain is significant after Holm over 2 heads")
    found = claim_findings(AblationView, {"mrpc": {42: {"analyses": {"ablation": helps}}, 43: {"analyses": {}}}})
    cell = found["disabling_a_head_helps"]["per_task"]["mrpc"]
    assert (cell["holds"], cell["seeds"]) == (1, 1)  # the one seed it ran on


def test_pattern_shares_stand_beside_prasanna_et_al_per_task_with_the_corrected_intervals():
    def share(value: float) -> dict:
        return {"mean": value, "std": 0.0, "n": 3, "values": [value] * 3}

    classes = ("vertical", "diagonal", "vertical_diagonal", "block", "heterogeneous")
    metrics = {f"pattern_{c}_{name}": share(0.2) for c in (PRETRAINED, FINETUNED) for name in classes}
    corrected = {
        c: {
            name: {"mean": 0.25, "interval": [0.1, 0.3]}
            for name in ("vertical", "diagonal", "vertical+diagonal", "block", "heterogeneous")
        }
        for c in (PRETRAINED, FINETUNED)
    }
    table = pattern_shares_table(
        {"mrpc": {"metrics": metrics, "pattern_corrected": corrected}, "wnli": {"metrics": metrics}}
    )
    assert "| mrpc | pre-trained |" + " 20.0; 25.0 [10, 30] |" * 5 + " 25.6 |" in table
    assert "| 23.3 |" in table.splitlines()[3]  # fine-tuned MRPC: Prasanna et al.'s 23.3
    assert table.splitlines()[-1].startswith("| wnli | fine-tuned | 20.0 |")  # no intervals stored, no paper
    assert table.splitlines()[-1].endswith("| 20.0 | - |")


def test_the_time_table_gives_minutes_per_seed_and_the_totals():
    def seconds(values: list[float]) -> dict:
        return {"mean": sum(values) / len(values), "n": len(values), "values": values}

    table = time_table(
        {
            "rte": {
                "fine-tuning": seconds([300.0, 420.0]),
                "analyses": seconds([60.0, 60.0]),
                "ablation": seconds([600.0]),
            },
            "wnli": {"fine-tuning": seconds([30.0]), "analyses": seconds([30.0])},
        }
    )
    assert "| rte | 2 | 6.0 | 1.0 | 10.0 (1) | 24 |" in table and "| wnli | 1 | 0.5 | 0.5 | - | 1 |" in table
    assert table.splitlines()[-1] == "| all tasks |  |  |  |  | 25 |"


def test_the_time_tables_own_columns_are_the_sources_read_only_to_intervene():
    """The views that say which source their analysis reads only to intervene (`View.timed_apart`)
    name what the study times apart from the analyses (`intervening_sources`, from the analyses' needs)."""
    assert [view.timed_apart for view in VIEWS.values() if view.timed_apart] == intervening_sources()


def test_the_ablation_table_names_the_heads_and_layers_that_help_and_hurt_most_per_task():
    def spread(*values: float) -> dict:
        return {"mean": sum(values) / len(values), "n": len(values), "values": list(values)}

    metrics = {
        "ablation_intact_finetuned": spread(0.8, 0.8),
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
        **{
            f"ablation_significant_{scope}_{mode}_finetuned": spread(1, 2)
            for scope in ("heads", "layers")
            for mode in ("uniform", "zero")
        },
        **{
            f"ablation_significant_gains_{scope}_{mode}_finetuned": spread(0, 0)
            for scope in ("heads", "layers")
            for mode in ("uniform", "zero")
        },
        "ablation_pruned_within_one_point_importance_finetuned": spread(22, 22),
        "ablation_importance_minus_random_area_finetuned": spread(0.02, 0.04),
        "ablation_importance_minus_random_area_low_finetuned": spread(0.01, -0.01),
        "ablation_importance_minus_random_area_high_finetuned": spread(0.03, 0.09),
    }
    study = {"tasks": {"mrpc": {"metrics": metrics}, "rte": {"metrics": {}}}}
    table = AblationView.study_tables(study)["ablation_by_task"]
    assert (
        "| mrpc | 2 | 80.0 | 1-3: +3.0 | -15.0 | 5: +0.0 | 2: -30.0 | 0 of 2 / 0 of 2 / 0 of 2 / 0 of 2 | 22 / - | "
        "+3.0 (above 0 on 1, below on 0 of 2 seeds) | - |"
    ) in table
    assert "importance minus random orders (ours)" in table.splitlines()[0]
    assert "| rte |" not in table  # the ablation did not run there
    assert AblationView.study_tables({"tasks": {"rte": {"metrics": {}}}}) == {}
