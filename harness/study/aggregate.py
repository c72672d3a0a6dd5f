"""What a study says, from its runs' stored summaries only: every scalar metric as mean and
spread over the seeds of each task, the series each analysis's view keeps over seeds (cosine
per layer and head, [CLS]/[SEP] attention per layer), which tasks the fine-tuned models
learned, and the findings: each view's claims judged on every run of the tasks learned, and
each signed change it declares, with the seeds and tasks they hold for, their size, and what
the papers found on the same point beside them. A seed counts for a finding only where its
evidence is clear of its sampling error (`harness.views.evidence`: a change whose 95% interval
over the units the analysis sampled excludes 0, a claim that holds on 97.5% of the
resamples); every other seed says "no clear change" or "unclear", with its interval.
Directions are fixed before the data: a change a paper gives a direction for is tested in the
paper's direction on the tasks it measured (a seed counts when clearly the paper's way), any
other change two-sided (a seed counts when clearly either way, and the direction it went is
reported, not counted as a prediction). Each task's effect is the mean of its seeds' values
with an interval (`effect`). A finding that cannot be judged says why. An analysis that ran on
some seeds only (the ablation on a CPU: one seed per task) is aggregated and judged over
those seeds, and says how many. Nothing here imports torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import cast

import numpy as np
from scipy.stats import t as student_t

from harness.results.checkpoints import FINETUNED, PRETRAINED
from harness.results.entries import AnyEntry, decoded
from harness.results.run_record import RunSummary
from harness.results.study_record import (
    BetweenSeeds,
    Effect,
    Finding,
    Learning,
    PaperBeside,
    SeedRecord,
    StudyTrajectory,
    TaskAggregate,
    TaskCell,
    TaskCore,
)
from harness.views import VIEWS
from harness.views import trajectory as trajectory_view
from harness.views.base import Entry, Failures, PaperPoint, View, ViewClass, attempt, per_checkpoint_results
from harness.views.cosine import CosineView
from harness.views.evaluation import EvaluationView
from harness.views.evidence import (
    FAILS,
    FALLS,
    HOLDS,
    NO_CLEAR_CHANGE,
    RISES,
    UNCLEAR,
    Change,
    Changes,
    Single,
    Verdict,
    described,
    effect_text,
)
from harness.views.patterns import PatternsView, share
from harness.views.seeds import spread
from harness.views.summary import headline_names, summary_metrics
from tasks.metrics import metric_rows

Summaries = dict[str, dict[int, RunSummary]]  # {task: {seed: summary}}
LEARNED = "beats_majority"  # the evaluation's claim that decides whether a task's findings are judged
AS_PAPER, AGAINST_PAPER = "as the paper", "against the paper"  # a seed's change against the paper's direction
CHANGES = "changes"  # a seed's change clear either way, in a two-sided finding


def entries_of(view: ViewClass, summaries: list[RunSummary]) -> list[AnyEntry]:
    """The view's analysis entry (current version) of every summary that has one; the ablation,
    run on one seed of a CPU study, has fewer entries than seeds."""
    entries = [summary["analyses"].get(view.name) for summary in summaries]
    return [decoded(entry) for entry in entries if entry is not None and entry.get("version") == view.version]


def task_aggregate(summaries: dict[int, RunSummary], failures: Failures | None = None) -> TaskAggregate:
    """One task over its seeds (``{seed: summary}``): every metric's spread over the seeds that
    have it (its ``n``), the headline names, each view's series over the seeds it ran on
    (`View.across_seeds`; one that fails is recorded in ``failures`` and left out), the main dev
    metric."""
    failures = {} if failures is None else failures
    metrics = {seed: summary_metrics(summary) for seed, summary in summaries.items()}
    names = sorted(set().union(*metrics.values()))
    first = next(iter(summaries.values()))
    core: TaskCore = {
        "seeds": sorted(summaries),
        "run_keys": {str(seed): summary["run"]["key"] for seed, summary in summaries.items()},
        "metrics": {name: spread([values[name] for values in metrics.values() if name in values]) for name in names},
        "headline": headline_names(first),
        "main_metric": EvaluationView.main_metric(first["analyses"][EvaluationView.name]),
        "num_layers": first["run"]["num_layers"],
        "num_heads": first["run"]["num_heads"],
    }
    entry: TaskAggregate = {**core}
    for view in VIEWS.values():
        entries = entries_of(view, list(summaries.values()))
        if entries:
            task = first["run"]["task"]
            kept: Mapping[str, object] = attempt(  # of the view's declared type, read back by it (`view_part`)
                failures, f"{view.name} over the seeds of {task}", partial(view.across_seeds, entries), {}
            )
            entry.update(kept)
    trajectory: dict[str, StudyTrajectory] = attempt(
        failures,
        f"the trajectory over the seeds of {first['run']['task']}",
        partial(trajectory_aggregate, summaries),
        {},
    )
    entry.update(trajectory)
    return entry


def seed_entries(view: type[View], summaries: dict[int, RunSummary]) -> dict[int, Entry]:
    """``{seed: the view's entry}`` of the seeds whose summary has the analysis (current version)."""
    return {seed: entry for seed, summary in summaries.items() if (entry := current_entry(view, summary))}


def current_entry(view: type[View], summary: RunSummary) -> Entry | None:
    """The view's analysis entry of ``summary`` if it has one of the view's version."""
    found = entries_of(view, [summary])
    return found[0] if found else None


def learning(by_task: Summaries) -> dict[str, Learning]:
    """Per task, the harness's learning check on each seed: whether its fine-tuned model is
    clearly above the majority class on dev (a seed without a dev evaluation did not show it)."""
    judge = EvaluationView.claims[LEARNED].judge
    checked: dict[str, Learning] = {}
    for task, summaries in by_task.items():
        seeds = {}
        for seed, summary in summaries.items():
            entry = current_entry(EvaluationView, summary)
            seeds[str(seed)] = (
                entry is not None and (verdict := judge(entry)) is not None and verdict["verdict"] == HOLDS
            )
        checked[task] = {
            "seeds": seeds,
            "learned": sum(seeds.values()),
            "of": len(seeds),
            "every_seed": all(seeds.values()),
        }
    return checked


def judged_tasks(checked: dict[str, Learning], findings_from: str) -> tuple[list[str], dict[str, str]]:
    """The tasks the findings are judged on, and, in the study's words, why each other task is not."""
    if findings_from == "all":
        return list(checked), {}
    kept_out = {
        task: f"its fine-tuned model is clearly above the majority class on {c['learned']} of {c['of']} "
        "seeds: its attention changes are not what learning the task does, so no finding counts it"
        for task, c in checked.items()
        if not c["every_seed"]
    }
    return [task for task in checked if task not in kept_out], kept_out


def seed_record(seed: int, state: str, evidence: Single) -> SeedRecord:
    """One seed's part of a finding: its state (holds, fails, unclear; as the paper, against it;
    changes; or no clear change), the direction it went where it is a change, and the evidence it
    rests on (value and interval, or support over resamples)."""
    kept = ("value", "interval", "support", "statistic", "unit", "n", "direction")  # `SeedRecord`'s, where it has them
    given: Mapping[str, object] = evidence  # each kept key's type is `SeedRecord`'s (the cast below)
    record = {
        "seed": seed,
        "state": state,
        **{key: given[key] for key in kept if key in given},
        "evidence": described(evidence),
    }
    return cast(SeedRecord, record)


def effect(records: list[SeedRecord]) -> Effect | None:
    """A task's effect over its seeds: the mean of their values, with its interval: the seed's own
    95% interval where there is one seed, else a 95% t interval of the mean over the seeds (it
    takes in the sampling error of each seed and the difference between fine-tunings); None
    where the seeds give no value (a yes/no statement without a size)."""
    values = [record["value"] for record in records if isinstance(record.get("value"), int | float)]
    if not values or len(values) != len(records):
        return None
    if len(values) == 1:
        interval = records[0].get("interval")
        return {"value": values[0], "interval": interval, "seeds": 1, "how": "the seed's 95% interval"}
    mean, error = float(np.mean(values)), float(np.std(values, ddof=1) / np.sqrt(len(values)))
    half = float(student_t.ppf(0.975, len(values) - 1)) * error
    return {
        "value": mean,
        "interval": [mean - half, mean + half],
        "seeds": len(values),
        "how": f"95% t interval of the mean over {len(values)} seeds",
    }


def task_cell(records: list[SeedRecord], holds: str) -> TaskCell:
    """A task's part of a finding: on how many seeds it ``holds`` (its state counted), how many
    went each other way, each seed's record, the directions clear changes went, and the effect."""
    states = [record["state"] for record in records]
    directions = [record["direction"] for record in records if record.get("direction") in (RISES, FALLS)]
    return {
        "holds": states.count(holds),
        "holds_as": holds,
        "seeds": len(states),
        "states": {state: states.count(state) for state in dict.fromkeys(states)},
        "directions": {way: directions.count(way) for way in dict.fromkeys(directions)},
        "effect": effect(records),
        "per_seed": records,
    }


def counted(cell: TaskCell, holds: str) -> str:
    """``3 of 3`` or ``1 of 3 (2 no clear change)``: a task cell in words."""
    others = ", ".join(f"{count} {state}" for state, count in cell["states"].items() if state != holds)
    return f"{cell['holds']} of {cell['seeds']}" + (f" ({others})" if others else "")


def support(claim: str, per_task: dict[str, TaskCell], holds: str = HOLDS) -> Finding:
    """A finding with, per task, the seeds where it holds clear of its sampling error
    (``per_task``: `task_cell`s) and its effect."""
    everywhere = [task for task, cell in per_task.items() if cell["holds"] == cell["seeds"]]
    detail = "; ".join(f"{task} {counted(cell, cell.get('holds_as', holds))}" for task, cell in per_task.items())
    sizes = "; ".join(f"{task} {effect_text(cell.get('effect'))}" for task, cell in per_task.items())
    return {
        "claim": claim,
        "per_task": per_task,
        "tasks_every_seed": len(everywhere),
        "tasks": len(per_task),
        "holds_as": holds,
        "text": f"{claim}: clear of its sampling error on every seed of {len(everywhere)} of {len(per_task)} "
        f"tasks (seeds where it is: {detail}; effect: {sizes})",
    }


def not_judged(claim: str, why: str) -> Finding:
    """A finding that was asked for and could not be judged, and why."""
    return {
        "claim": claim,
        "per_task": {},
        "tasks_every_seed": 0,
        "tasks": 0,
        "not_judged": why,
        "text": f"{claim}: not judged: {why}",
    }


def beside_paper(paper: PaperPoint, states: dict[str, list[str]]) -> PaperBeside:
    """What the paper found, and whether the study agrees: ``states`` holds, per task the paper
    has an expectation for, each seed's state against it (``paper``: clearly the paper's way;
    ``other``: clearly the other way; ``unclear``). ``agrees`` when every seed of every such
    task is clearly the paper's way; ``partly`` when more seeds are clearly the paper's way than
    clearly the other; ``disagrees`` when more are clearly the other way; ``unclear`` when as
    many are clear each way (none, most often); ``not compared`` where the paper measured no such
    thing (or none of its tasks ran)."""
    verdict, detail = "not compared", ""
    seeds = [state for values in states.values() for state in values]
    if seeds:
        paper_way, other, unclear = (seeds.count(state) for state in ("paper", "other", "unclear"))
        verdict = (
            "agrees"
            if paper_way == len(seeds)
            else "partly"
            if paper_way > other
            else "disagrees"
            if other > paper_way
            else "unclear"
        )
        every = sum(all(state == "paper" for state in values) for values in states.values())
        detail = (
            f"clearly the paper's way on {paper_way} of {len(seeds)} seeds, every seed of {every} of "
            f"{len(states)} tasks; clearly the other way on {other}; unclear on {unclear}"
        )
    return {"source": paper.source, "says": paper.says, "verdict": verdict, "detail": detail}


def claim_findings(view: type[View], by_task: Summaries) -> dict[str, Finding]:
    """The view's claims, each judged on every run of every task that has the analysis: per seed
    ``holds`` or ``fails`` clear of its sampling error, or ``unclear``."""
    entries = {task: seeds for task, summaries in by_task.items() if (seeds := seed_entries(view, summaries))}
    found = {}
    for name, claim in view.claims.items():
        judged = {task: {seed: claim.judge(entry) for seed, entry in seeds.items()} for task, seeds in entries.items()}
        if not entries:
            continue  # the analysis did not run: the run's list of analyses says so
        missing = [f"{task} seed {seed}" for task, seeds in judged.items() for seed, e in seeds.items() if e is None]
        if missing:
            found[name] = not_judged(claim.text, f"its runs cannot give its evidence on {', '.join(missing)}")
            continue
        given = {task: {seed: e for seed, e in seeds.items() if e is not None} for task, seeds in judged.items()}
        per_task = {
            task: task_cell(
                [seed_record(seed, evidence["verdict"], evidence) for seed, evidence in seeds.items()], HOLDS
            )
            for task, seeds in given.items()
        }
        found[name] = support(claim.text, per_task)
        if name in view.papers:
            paper = view.papers[name]
            as_paper = {HOLDS: "paper", FAILS: "other", UNCLEAR: "unclear"}
            found[name]["paper"] = beside_paper(
                paper,
                {
                    task: [as_paper[evidence["verdict"]] for evidence in seeds.values()]
                    for task, seeds in given.items()
                    if paper.expectation(task) == "holds"
                },
            )
    return found


def undefined(claim: str, tasks: list[str]) -> Finding:
    """A finding none of ``tasks`` defines (a cross-sentence share on single-sentence tasks only)."""
    return {
        "claim": claim,
        "per_task": {},
        "tasks_every_seed": 0,
        "tasks": 0,
        "undefined_on": tasks,
        "text": f"{claim}: not defined on these tasks ({', '.join(tasks)})",
    }


def paper_directions(view: type[View], name: str, tasks: list[str]) -> dict[str, str]:
    """The direction the paper beside signed change ``name`` found, on each of ``tasks`` it measured."""
    paper = view.papers.get(name)
    expected = {task: paper.expectation(task) if paper else None for task in tasks}
    return {task: way for task, way in expected.items() if way in (RISES, FALLS)}


def change_claim(what: str, paper: PaperPoint | None, expected: dict[str, str], tasks: list[str]) -> str:
    """A signed change's claim, its direction stated before the data: the paper's on the tasks it
    measured, else two-sided."""
    two_sided = "changes with fine-tuning (two-sided: the direction each seed went is reported, not predicted)"
    if not expected or paper is None:
        return f"{what} {two_sided}"
    ways = ", ".join(f"{task} {way}" for task, way in expected.items())
    rest = [task for task in tasks if task not in expected]
    return f"{what} moves with fine-tuning as {paper.source} found ({ways})" + (
        f"; on {', '.join(rest)}, which it did not measure, {two_sided}" if rest else ""
    )


def seed_state(direction: str, expected: str | None) -> str:
    """A seed's change as a two-sided finding counts it, or against the paper's ``expected`` direction."""
    if direction == NO_CLEAR_CHANGE:
        return NO_CLEAR_CHANGE
    if expected is None:
        return CHANGES
    return AS_PAPER if direction == expected else AGAINST_PAPER


def change_findings(view: type[View], by_task: Summaries) -> dict[str, Finding]:
    """Each signed change the view declares, over every task whose runs have the analysis and give
    the change's evidence, its direction fixed before the data (`change_claim`): per seed ``as
    the paper``, ``against the paper`` or ``no clear change`` on a task the paper measured,
    ``changes`` (clear either way) or ``no clear change`` on any other, clear meaning its 95%
    interval over the sampled units excludes 0. A task where the change is undefined (a
    cross-sentence share of a single-sentence task) is not judged; where no task defines it the
    finding says so. That each declared name is one the view's metrics give is the views' tests'
    to check (tests/unit/run/test_pipeline.py, on a run of a pair task), not a study's to find
    out at its end."""
    entries = {task: seeds for task, summaries in by_task.items() if (seeds := seed_entries(view, summaries))}
    if not entries:
        return {}
    found = {}
    for name, what in view.signed_changes.items():
        stated = {
            task: {seed: view.change_evidence(entry).get(name) for seed, entry in seeds.items()}
            for task, seeds in entries.items()
        }
        evidence = {
            task: {seed: e for seed, e in seeds.items() if e is not None}
            for task, seeds in stated.items()
            if all(e is not None for e in seeds.values())
        }
        if not evidence:
            found[name] = undefined(f"{what} with fine-tuning", list(entries))
            continue
        expected = paper_directions(view, name, list(evidence))
        per_task = {
            task: task_cell(
                [seed_record(seed, seed_state(e["direction"], expected.get(task)), e) for seed, e in seeds.items()],
                AS_PAPER if task in expected else CHANGES,
            )
            for task, seeds in evidence.items()
        }
        claim = change_claim(what, view.papers.get(name), expected, list(evidence))
        found[name] = support(claim, per_task, AS_PAPER if expected else CHANGES)
        if name in view.papers:
            found[name]["paper"] = beside_paper(
                view.papers[name],
                {
                    task: [paper_state(e["direction"], expected[task]) for e in seeds.values()]
                    for task, seeds in evidence.items()
                    if task in expected
                },
            )
    return found


def paper_state(direction: str, expected: str) -> str:
    """A seed's change against the paper's direction: ``paper``, ``other`` or ``unclear``."""
    return "unclear" if direction == NO_CLEAR_CHANGE else "paper" if direction == expected else "other"


SEED_NOISE = (
    "the last layer changes more from pre-training than between two seeds' fine-tunings (cosine "
    "between the seeds' maps above the pre-trained to fine-tuned cosine)"
)


def last_layer(evidence: Changes) -> Change:
    """The last layer's part of a per-layer evidence (`paired_change` with ``reduce=None``)."""
    return {
        **evidence,
        "value": evidence["value"][-1],
        "interval": evidence["interval"][-1],
        "direction": evidence["direction"][-1],
    }


def seed_noise_finding(between: dict[str, BetweenSeeds], judged: list[str]) -> dict[str, Finding]:
    """Whether the last layer's change from pre-training stands clear of the difference between
    two fine-tunings of the same task (`harness.study.between_seeds`), per pair of seeds of each
    judged task: ``holds`` where the cosine between the seeds is clearly above the first seed's
    pre-trained to fine-tuned cosine, ``fails`` where clearly below, else ``unclear``; empty
    where no judged task has two seeds."""
    states = {RISES: HOLDS, FALLS: FAILS, NO_CLEAR_CHANGE: UNCLEAR}
    per_task = {}
    for task in judged:
        pairs = between.get(task, {}).get("pairs", [])
        records: list[SeedRecord] = []
        for pair in pairs:
            evidence = last_layer(pair["against_pretraining"])
            records.append(
                {**seed_record(pair["seeds"][0], states[evidence["direction"]], evidence), "seeds": pair["seeds"]}
            )
        if records:
            per_task[task] = task_cell(records, HOLDS)
    return {"last_layer_beyond_seed_noise": support(SEED_NOISE, per_task)} if per_task else {}


TIMING = {
    "cosine_before_dev": "the last layer's attention makes half its change before the dev score makes half its "
    "gain over the majority class",
    "heterogeneous_early": f"the share of heterogeneous maps makes half its change within the first "
    f"{trajectory_view.EARLY:.0%} of training",
}
TIMED_BY: dict[str, ViewClass] = {"cosine_before_dev": CosineView, "heterogeneous_early": PatternsView}


def trajectory_aggregate(summaries: dict[int, RunSummary]) -> dict[str, StudyTrajectory]:
    """A task's series along fine-tuning over the seeds that kept a trajectory: the last layer's
    cosine to the pre-trained maps, the dev score and the pattern shares at each fraction of
    training (`harness.views.trajectory.study_series`); empty without a trajectory."""
    kept = [summary for summary in summaries.values() if "trajectory" in summary]
    if not kept or EvaluationView.name not in kept[0]["analyses"]:
        return {}
    main = EvaluationView.main_score(kept[0]["analyses"][EvaluationView.name])
    layers = trajectory_view.layer_keys(summary_metrics(kept[0]))
    named = {
        "dev_score": trajectory_view.dev_score(main),
        **({"last_layer_cosine": layers[-1]} if layers else {}),
        **{f"pattern_{name}": share(name, FINETUNED) for name in trajectory_view.PATTERN_CLASSES},
    }
    return {"trajectory": trajectory_view.study_series(kept, named)}


def seed_timings(summary: RunSummary) -> dict[str, Verdict | None]:
    """The findings on when things change, judged on one run's trajectory (`harness.views.trajectory`)."""
    points, analyses = trajectory_view.points_of(summary), summary["analyses"]
    if not points or EvaluationView.name not in analyses:
        return {}
    evaluation = per_checkpoint_results(analyses[EvaluationView.name])[FINETUNED]
    split, metric = EvaluationView.main_score(analyses[EvaluationView.name])
    found: dict[str, Verdict | None] = dict.fromkeys(TIMED_BY)
    if CosineView.name in analyses:
        found["cosine_before_dev"] = trajectory_view.cosine_before_dev(
            points,
            {
                CosineView.name: CosineView.timed_units(analyses[CosineView.name]),
                "predictions": evaluation["predictions"][split],
                "labels": evaluation["labels"][split],
                "majority": evaluation["majority"][f"{split}/{metric}"],
            },
            split,
            metric,
            metric_rows,
        )
    if PatternsView.name in analyses:
        patterns = PatternsView.timed_units(analyses[PatternsView.name])
        early = sum(max(point["fractions"]) <= trajectory_view.EARLY for point in points)
        found["heterogeneous_early"] = trajectory_view.share_early(
            points, patterns[FINETUNED], patterns[PRETRAINED], "heterogeneous", early
        )
    return found


def timing_findings(by_task: Summaries, judged: list[str]) -> dict[str, Finding]:
    """Each finding on when things change, over the judged tasks' seeds that kept a trajectory;
    where the study asked for trajectories (some run kept one) and a finding has no seed to be
    judged on, why."""
    if not any(trajectory_view.points_of(summary) for summaries in by_task.values() for summary in summaries.values()):
        return {}
    judged_seeds = {task: {seed: seed_timings(summary) for seed, summary in by_task[task].items()} for task in judged}
    found = {}
    for name, claim in TIMING.items():
        per_task = {
            task: task_cell(
                [
                    seed_record(seed, evidence["verdict"], evidence)
                    for seed, timings in seeds.items()
                    if (evidence := timings.get(name))
                ],
                HOLDS,
            )
            for task, seeds in judged_seeds.items()
        }
        per_task = {task: cell for task, cell in per_task.items() if cell["seeds"]}
        found[name] = support(claim, per_task) if per_task else not_judged(claim, timing_missing(by_task, judged, name))
    return found


def timing_missing(by_task: Summaries, judged: list[str], name: str) -> str:
    """Why a finding on when things change has no seed to judge: no judged task, no trajectory
    kept, or the analyses it reads not run along it."""
    if not judged:
        return "no task's fine-tuned model is clearly above the majority class on every seed"
    kept = [summary for task in judged for summary in by_task[task].values() if trajectory_view.points_of(summary)]
    if not kept:
        return "no judged run kept a trajectory (--trajectory)"
    return f"its runs' trajectories lack the {TIMED_BY[name].name} analysis (--trajectory-analyses, --analyses)"


def findings(
    by_task: Summaries,
    judged: list[str],
    failures: Failures | None = None,
    between: dict[str, BetweenSeeds] | None = None,
) -> dict[str, Finding]:
    """The learning check over every task, then every view's claims and signed changes over
    the ``judged`` tasks, with their support over seeds and tasks and the papers beside them,
    from the runs' summaries, and the last layer's change against the difference between seeds
    (``between``: `harness.study.between_seeds`). A view whose findings fail is recorded in
    ``failures`` and the others go on."""
    failures = {} if failures is None else failures
    found = {name: finding for name, finding in claim_findings(EvaluationView, by_task).items() if name == LEARNED}
    kept = {task: by_task[task] for task in judged}
    for view in VIEWS.values():
        claims: dict[str, Finding] = attempt(failures, f"{view.name} claims", partial(claim_findings, view, kept), {})
        found.update({name: finding for name, finding in claims.items() if name != LEARNED})
    for view in VIEWS.values():
        changes: dict[str, Finding] = attempt(
            failures, f"{view.name} changes", partial(change_findings, view, kept), {}
        )
        found.update(changes)
    noise: dict[str, Finding] = attempt(
        failures, "between seeds", partial(seed_noise_finding, between or {}, judged), {}
    )
    timing: dict[str, Finding] = attempt(failures, "trajectory", partial(timing_findings, by_task, judged), {})
    found.update({**noise, **timing})
    left_out = [task for task in by_task if task not in judged]
    for name, finding in found.items():
        if name != LEARNED and left_out and "not_judged" not in finding:
            finding["text"] += (
                f"; not judged on {', '.join(left_out)} (not learned on every seed: see the learning check)"
            )
    return found
