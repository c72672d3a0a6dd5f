"""How a study turns each seed's evidence into findings: a seed counts only where its change or
claim is clear of its sampling error, the papers' verdicts count clear seeds, and every table,
page and data frame shows each seed's evidence. The entries are hand-made from per-unit sums
(`harness.views.evidence`), so each case is clear or noise by construction."""

from __future__ import annotations

import numpy as np

from harness.analyses.evaluation import paired_difference
from harness.present.frames import FINDING_COLUMNS, load_findings
from harness.present.study_figures import findings_table
from harness.results.checkpoints import MAIN_PAIR
from harness.results.store import write_json
from harness.results.summary import seal
from harness.study.aggregate import beside_paper, change_findings, claim_findings, findings, judged_tasks, learning
from harness.views import VIEWS
from harness.views.base import Claim, PaperPoint, View
from harness.views.evaluation import EvaluationView
from harness.views.evidence import UnitSums, interval_of, paired_change, resample_weights, resampled_verdict
from tasks.registry import get_task

UNITS = 400


def shares(rate: float, seed: int) -> UnitSums:
    """Per example, how many of 10 heads show a pattern, each with probability ``rate``."""
    counts = np.random.default_rng(seed).binomial(10, rate, UNITS)
    return UnitSums.of(counts, np.full(UNITS, 10.0), "dev examples")


class Shares(View):
    """A view with one signed change (a share) and one claim (the share is above a fifth), both
    judged from the per-unit sums its entries hold."""

    name = "shares"
    signed_changes = {"share_change": "the share"}
    claims = {
        "above_a_fifth": Claim(
            "the fine-tuned share is above a fifth",
            lambda entry: resampled_verdict(
                lambda w: UnitSums.read(entry["after"]).ratios(w)[:, 0] > 0.2, UNITS, "dev examples", "share above 0.2"
            ),
        )
    }
    papers = {
        "share_change": PaperPoint("P 2020", "rises on rte, falls on cola", {"rte": "rises", "cola": "falls"}),
        "above_a_fifth": PaperPoint("Q 2019", "above a fifth", "holds"),
    }

    @classmethod
    def change_evidence(cls, entry):
        return {"share_change": paired_change(UnitSums.read(entry["before"]), UnitSums.read(entry["after"]))}


def entry(before: float, after: float, seed: int) -> dict:
    return {"version": 1, "before": shares(before, seed).stored(), "after": shares(after, seed + 1).stored()}


def learned(above: bool) -> dict:
    interval = [0.05, 0.2] if above else [-0.05, 0.1]
    return {
        "version": EvaluationView.version,
        "pairs": [["pretrained", "finetuned"]],
        "result": {
            "per_checkpoint": {"finetuned": {"examples": {"dev": UNITS}}},
            "per_pair": {
                MAIN_PAIR: {
                    "main_metric": "dev/accuracy",
                    "learned": above,
                    "against_majority": {"difference": 0.1, "interval": interval},
                }
            },
        },
    }


def summaries(rates: dict[int, tuple[float, float]], above: bool = True) -> dict:
    return {
        seed: {"analyses": {"evaluation": learned(above), "shares": entry(*rate, seed)}} for seed, rate in rates.items()
    }


class TwoSided(Shares):
    """The same share with no paper beside it: its change is a two-sided finding."""

    papers = {}


def test_a_change_counts_in_the_papers_direction_on_a_seed_only_when_its_interval_excludes_zero():
    by_task = {
        "rte": summaries({42: (0.3, 0.4), 43: (0.3, 0.4), 44: (0.3, 0.302)}),
        "cola": summaries({42: (0.3, 0.2), 43: (0.3, 0.3)}),
    }
    (finding,) = change_findings(Shares, by_task).values()
    assert finding["claim"] == "the share moves with fine-tuning as P 2020 found (rte rises, cola falls)"
    rte = finding["per_task"]["rte"]
    assert (rte["holds"], rte["seeds"], rte["states"]) == (2, 3, {"as the paper": 2, "no clear change": 1})
    noise = rte["per_seed"][2]
    assert noise["state"] == "no clear change" and noise["interval"][0] < 0 < noise["interval"][1]
    assert noise["unit"] == "dev examples" and noise["n"] == UNITS
    assert finding["per_task"]["cola"]["states"] == {"as the paper": 1, "no clear change": 1}
    assert finding["tasks_every_seed"] == 0 and "rte 2 of 3 (1 no clear change)" in finding["text"]
    paper = finding["paper"]  # rte clearly rises twice (the paper's way); cola falls once (the paper's way)
    assert paper["verdict"] == "partly"
    assert paper["detail"] == (
        "clearly the paper's way on 3 of 5 seeds, every seed of 0 of 2 tasks; clearly the other way on 0; unclear on 2"
    )


def test_the_direction_is_the_papers_not_the_one_the_data_went():
    """Three clear rises where the paper found a fall: the finding does not turn into "rises" (the
    way most seeds went, as it once did); the seeds count against the paper."""
    by_task = {"cola": summaries({42: (0.3, 0.4), 43: (0.3, 0.4), 44: (0.3, 0.4)})}
    (finding,) = change_findings(Shares, by_task).values()
    cola = finding["per_task"]["cola"]
    assert cola["holds"] == 0 and cola["states"] == {"against the paper": 3} and cola["directions"] == {"rises": 3}
    assert finding["paper"]["verdict"] == "disagrees"


def test_a_change_no_paper_measured_is_two_sided_and_reports_the_way_it_went():
    by_task = {"rte": summaries({42: (0.3, 0.4), 43: (0.3, 0.2), 44: (0.3, 0.302)})}
    (finding,) = change_findings(TwoSided, by_task).values()
    assert finding["claim"].startswith("the share changes with fine-tuning (two-sided")
    rte = finding["per_task"]["rte"]
    # a clear fall counts as a clear change as much as a clear rise does: a one-sided "rises" test would count 1
    assert (rte["holds"], rte["directions"]) == (2, {"rises": 1, "falls": 1})
    assert [record["state"] for record in rte["per_seed"]] == ["changes", "changes", "no clear change"]
    assert "paper" not in finding


def test_a_claim_holds_fails_or_is_unclear_on_each_seed_by_its_resamples():
    """Seed 42 is clearly above a fifth, 43 clearly below, 44 exactly at it: each state once."""
    exactly = {
        "version": 1,
        "before": shares(0.1, 9).stored(),
        "after": UnitSums.of(
            np.r_[np.full(UNITS // 2, 1.0), np.full(UNITS // 2, 3.0)], np.full(UNITS, 10.0), "dev examples"
        ).stored(),
    }
    by_task = {
        "rte": {
            **summaries({42: (0.1, 0.3), 43: (0.1, 0.1)}),
            44: {"analyses": {"evaluation": learned(True), "shares": exactly}},
        }
    }
    (finding,) = claim_findings(Shares, by_task).values()
    records = finding["per_task"]["rte"]["per_seed"]
    assert [record["state"] for record in records] == ["holds", "fails", "unclear"]
    assert records[0]["support"] >= 0.975 and records[1]["support"] <= 0.025 and 0.2 < records[2]["support"] < 0.8
    # one seed the paper's way, one the other: as many clear seeds each way is no agreement, not "partly"
    assert finding["paper"]["verdict"] == "unclear"


def test_the_papers_verdict_counts_clear_seeds_only():
    paper = PaperPoint("Someone 2019, Fig. 1", "it holds", "holds")
    assert beside_paper(paper, {"rte": ["paper", "paper"], "mrpc": ["paper"]})["verdict"] == "agrees"
    assert beside_paper(paper, {"rte": ["paper", "paper"], "mrpc": ["paper", "unclear"]})["verdict"] == "partly"
    assert beside_paper(paper, {"rte": ["other", "other"], "mrpc": ["paper", "unclear"]})["verdict"] == "disagrees"
    assert beside_paper(paper, {"rte": ["unclear", "unclear"]})["verdict"] == "unclear"  # noise is no disagreement
    # partly only where more clear seeds agree than contradict (it was said with fewer than half contradicting)
    assert beside_paper(paper, {"rte": ["other", "unclear", "unclear"], "mrpc": ["paper"]})["verdict"] == "unclear"
    assert (
        beside_paper(paper, {"rte": ["other", "unclear", "unclear", "unclear"], "mrpc": ["paper", "paper"]})["verdict"]
        == "partly"
    )
    assert (
        beside_paper(paper, {"rte": ["other", "other", "unclear", "unclear", "unclear"], "mrpc": ["paper"]})["verdict"]
        == "disagrees"
    )
    assert beside_paper(paper, {})["verdict"] == "not compared"


def shifted(z: float, seed: int = 0) -> tuple[UnitSums, UnitSums]:
    """Per example a large level shared by both checkpoints plus a paired change whose mean is
    ``z`` standard errors: the paired interval sees the change, an unpaired one drowns it."""
    generator = np.random.default_rng(seed)
    level = generator.normal(0.5, 0.2, UNITS)
    noise = generator.standard_normal(UNITS)
    change = 0.01 * (z / np.sqrt(UNITS) + (noise - noise.mean()) / noise.std(ddof=1))
    ones = np.ones(UNITS)
    return UnitSums.of(level, ones, "dev examples"), UnitSums.of(level + change, ones, "dev examples")


def test_a_change_is_paired_at_the_95_percent_level_and_two_sided():
    """Each case fails a statistic that differs: unpaired resampling, a level other than 95%, a
    one-sided test."""
    before, after = shifted(2.4)
    evidence = paired_change(before, after)
    assert evidence["direction"] == "rises"  # a 99.9% interval, or an unpaired one, would hold 0 here
    unpaired = after.ratios(resample_weights(UNITS, seed=1))[:, 0] - before.ratios(resample_weights(UNITS))[:, 0]
    assert np.percentile(unpaired, 2.5) < 0 < np.percentile(unpaired, 97.5)
    paired = after.ratios(resample_weights(UNITS))[:, 0] - before.ratios(resample_weights(UNITS))[:, 0]
    assert interval_of(paired) == evidence["interval"]  # the same resamples for both checkpoints
    assert paired_change(*shifted(1.8))["direction"] == "no clear change"  # a 90% interval would call it a rise
    assert paired_change(*reversed(shifted(2.4)))["direction"] == "falls"  # two-sided: a fall is found as a rise is


def test_the_learning_gate_reads_the_interval_against_the_majority_class():
    by_task = {
        "mrpc": summaries({42: (0.3, 0.4), 43: (0.3, 0.4)}),
        "rte": {**summaries({42: (0.3, 0.4)}), **summaries({43: (0.3, 0.4)}, above=False)},
    }
    checked = learning(by_task)
    assert checked["rte"] == {"seeds": {"42": True, "43": False}, "learned": 1, "of": 2, "every_seed": False}
    judged, kept_out = judged_tasks(checked, "learned")
    assert judged == ["mrpc"] and set(kept_out) == {"rte"}
    verdict = EvaluationView.claims["beats_majority"].judge(by_task["rte"][43]["analyses"]["evaluation"])
    assert verdict["verdict"] == "unclear" and verdict["value"] == 0.1


def test_the_learning_gate_on_real_predictions_against_the_majority_class():
    """The interval a run stores (`paired_difference` over its dev predictions) decides the gate:
    80% right against a 60% majority is learned; 62% is not clear of it, its 40 departures from
    the majority class going 24 right and 16 wrong."""
    labels = np.r_[np.zeros(240, dtype=int), np.ones(160, dtype=int)]  # majority class 0: 60%
    majority = np.zeros(UNITS, dtype=int)
    for right_ones, wrong_ones, verdict in ((80, 0, "holds"), (24, 16, "unclear")):
        predictions = majority.copy()
        predictions[240 : 240 + right_ones] = 1
        predictions[:wrong_ones] = 1
        against = paired_difference(get_task("rte"), "accuracy", predictions, majority, labels)
        entry = learned(True)
        entry["result"]["per_pair"][MAIN_PAIR]["against_majority"] = against
        assert EvaluationView.claims["beats_majority"].judge(entry)["verdict"] == verdict


def test_each_seeds_evidence_is_in_the_table_the_page_and_the_frames(tmp_path, monkeypatch):
    monkeypatch.setitem(VIEWS, "shares", Shares)
    by_task = {"rte": summaries({42: (0.3, 0.4), 43: (0.3, 0.302)})}
    study = {
        "name": "s",
        "key": "k",
        "model": "minilm",
        "tasks": {"rte": {}},
        "runs": [],
        "findings": findings(by_task, ["rte"]),
        "kept_out_of_findings": {},
    }
    table = findings_table(study)
    row = next(line for line in table.splitlines() if line.startswith("| the share moves"))
    assert "rte 1 of 2 (1 no clear change; 1 rises); effect +0.05" in row and ": +0.1" in row
    folder = tmp_path / "studies" / "s"
    write_json(folder / "study.json", study)
    seal(folder, study)
    frame = load_findings("s", tmp_path)
    assert {column: str(kind) for column, kind in frame.dtypes.items()} == FINDING_COLUMNS
    rows = frame[frame.finding == "share_change"]
    assert list(rows.seed) == [42, 43] and list(rows.state) == ["as the paper", "no clear change"]
    assert list(rows.clear) == [True, False] and (rows.low < rows.value).all() and (rows.value < rows.high).all()
