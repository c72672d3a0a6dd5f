"""How a study turns each seed's evidence into findings: a seed counts only where its change or
claim is clear of its sampling error, the papers' verdicts count clear seeds, and every table,
page and data frame shows each seed's evidence. The entries are hand-made from per-unit sums
(`harness.views.evidence`), so each case is clear or noise by construction."""

from __future__ import annotations

import numpy as np

from harness.present.frames import FINDING_COLUMNS, load_findings
from harness.present.study_figures import findings_table
from harness.results.checkpoints import MAIN_PAIR
from harness.results.store import write_json
from harness.results.summary import seal
from harness.study.aggregate import beside_paper, change_findings, claim_findings, findings, judged_tasks, learning
from harness.views import VIEWS
from harness.views.base import Claim, PaperPoint, View
from harness.views.evaluation import EvaluationView
from harness.views.evidence import UnitSums, interval_verdict, paired_change, resampled_verdict

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


def test_a_change_counts_on_a_seed_only_when_its_interval_excludes_zero():
    by_task = {
        "rte": summaries({42: (0.3, 0.4), 43: (0.3, 0.4), 44: (0.3, 0.302)}),
        "cola": summaries({42: (0.3, 0.2), 43: (0.3, 0.3)}),
    }
    (finding,) = change_findings(Shares, by_task).values()
    assert finding["claim"] == "the share rises with fine-tuning"  # two clear rises against one clear fall
    rte = finding["per_task"]["rte"]
    assert (rte["holds"], rte["seeds"], rte["states"]) == (2, 3, {"rises": 2, "no clear change": 1})
    noise = rte["per_seed"][2]
    assert noise["state"] == "no clear change" and noise["interval"][0] < 0 < noise["interval"][1]
    assert noise["unit"] == "dev examples" and noise["n"] == UNITS
    assert finding["per_task"]["cola"]["states"] == {"falls": 1, "no clear change": 1}
    assert finding["tasks_every_seed"] == 0 and "rte 2 of 3 (1 no clear change)" in finding["text"]
    paper = finding["paper"]  # rte clearly rises twice (the paper's way); cola falls once (the paper's way)
    assert paper["verdict"] == "partly"
    assert paper["detail"] == (
        "clearly the paper's way on 3 of 5 seeds, every seed of 0 of 2 tasks; clearly the other way on 0; unclear on 2"
    )


def test_a_claim_holds_fails_or_is_unclear_on_each_seed_by_its_resamples():
    by_task = {"rte": summaries({42: (0.1, 0.3), 43: (0.1, 0.1), 44: (0.1, 0.2)})}
    (finding,) = claim_findings(Shares, by_task).values()
    states = [record["state"] for record in finding["per_task"]["rte"]["per_seed"]]
    assert states[:2] == ["holds", "fails"] and states[2] in ("unclear", "holds", "fails")
    assert 0 < finding["per_task"]["rte"]["per_seed"][0]["support"] <= 1
    assert finding["paper"]["verdict"] in ("partly", "disagrees")


def test_the_papers_verdict_counts_clear_seeds_only():
    paper = PaperPoint("Someone 2019, Fig. 1", "it holds", "holds")
    assert beside_paper(paper, {"rte": ["paper", "paper"], "mrpc": ["paper"]})["verdict"] == "agrees"
    assert beside_paper(paper, {"rte": ["paper", "paper"], "mrpc": ["paper", "unclear"]})["verdict"] == "partly"
    assert beside_paper(paper, {"rte": ["other", "other"], "mrpc": ["paper", "unclear"]})["verdict"] == "disagrees"
    assert beside_paper(paper, {"rte": ["unclear", "unclear"]})["verdict"] == "unclear"  # noise is no disagreement
    assert beside_paper(paper, {})["verdict"] == "not compared"


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
    assert (
        verdict
        == interval_verdict([-0.05, 0.1], "dev examples", UNITS, "fine-tuned minus majority class on dev/accuracy")
        and verdict["verdict"] == "unclear"
    )


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
    row = next(line for line in table.splitlines() if line.startswith("| the share rises"))
    assert "rte 1 of 2 (1 no clear change): +0.1" in row and "[" in row
    folder = tmp_path / "studies" / "s"
    write_json(folder / "study.json", study)
    seal(folder, study)
    frame = load_findings("s", tmp_path)
    assert {column: str(kind) for column, kind in frame.dtypes.items()} == FINDING_COLUMNS
    rows = frame[frame.finding == "share_change"]
    assert list(rows.seed) == [42, 43] and list(rows.state) == ["rises", "no clear change"]
    assert list(rows.clear) == [True, False] and (rows.low < rows.value).all() and (rows.value < rows.high).all()
