"""A yardstick for every change: how much two fine-tunings of the same task differ from each other.

A cosine of 0.72 between the pre-trained and the fine-tuned maps of a layer says little alone:
two fine-tunings that differ only in their seed (head initialisation, batch order, dropout)
also end with different attention. For every pair of a task's finished seeds, the two
fine-tuned checkpoints are streamed over the same dev sample the runs compared (the cosine
analysis, one joint pass, stored and reused like any result), giving each example's cosine per
layer between the seeds. Set beside the first seed's own pre-trained to fine-tuned cosine on
the same examples, a paired bootstrap over the examples says, per layer, whether fine-tuning
moved the layer further from pre-training than the seeds are from each other
(`against_pretraining`: ``rises`` where the cosine between seeds is clearly the higher). The
same pass gives the linear CKA of the two seeds' hidden states (`harness.analyses.cka`), set
beside the first seed's pre-trained to fine-tuned CKA the same way, where its run has one.
"""

from __future__ import annotations

from itertools import combinations

from harness.analyses.cka import RepresentationChange
from harness.analyses.cosine import CosineSimilarity
from harness.model.finetune import FineTuneResult, stored_result
from harness.model.loading import load_tokenizer
from harness.results.checkpoints import MAIN_PAIR
from harness.results.entries import decoded
from harness.results.study_record import BetweenSeeds
from harness.results.summary import SUMMARY, stored_summary
from harness.run.engine import analyse
from harness.run.pipeline import results_store, source_context, trained_checkpoint
from harness.run.plan import RunPlan
from harness.views.base import pair_name, per_pair_results
from harness.views.cka import CkaEntry, CkaPair, cka_change
from harness.views.cosine import CosineEntry, CosinePair
from harness.views.evidence import UnitSums, paired_change
from harness.views.seeds import elementwise
from tasks.errors import InputError


def seed_name(plan: RunPlan) -> str:
    """A fine-tuned checkpoint named by its seed: ``finetuned-42``."""
    return f"finetuned-{plan.config.finetune.seed}"


def compared_between(first: RunPlan, second: RunPlan) -> tuple[CosinePair, CkaPair]:
    """The cosine and CKA comparisons of ``first``'s and ``second``'s fine-tuned checkpoints on
    ``first``'s dev sample (the same for every seed: it is drawn with the analysis seed), reused
    from the store."""
    tokenizer = load_tokenizer(first.config.task.model)
    checkpoints = [trained_checkpoint(plan.config, seed_name(plan), fine_tune_of(plan)) for plan in (first, second)]
    pair = (seed_name(first), seed_name(second))
    analyses = [CosineSimilarity, RepresentationChange]
    entries = analyse(analyses, checkpoints, [pair], source_context(first, tokenizer), results_store(first.config))
    cosine: CosineEntry = entries[CosineSimilarity.name]
    cka: CkaEntry = entries[RepresentationChange.name]
    return per_pair_results(cosine)[pair_name(pair)], per_pair_results(cka)[pair_name(pair)]


def fine_tune_of(plan: RunPlan) -> FineTuneResult:
    """The stored fine-tune of a finished run of the study."""
    result = stored_result(plan.config, plan.data)
    if result is None:
        raise InputError(f"{plan.run_dir}: its fine-tuned checkpoint is not stored; run the study again to train it")
    return result


def seed_pair(first: RunPlan, second: RunPlan) -> BetweenSeeds | None:
    """One pair of seeds: the cosine per layer between their fine-tuned models, and per layer the
    change from ``first``'s pre-trained to fine-tuned cosine to that cosine (its interval over
    the dev examples); the same of the tokens' CKA where ``first``'s run has one (``cka``); None
    when ``first``'s summary has no cosine units to set it beside."""
    summary = stored_summary(first.run_dir / SUMMARY)
    if summary is None:
        return None
    cosine_entry: CosineEntry = decoded(summary["analyses"][CosineSimilarity.name])
    own = per_pair_results(cosine_entry).get(MAIN_PAIR)
    if own is None or "units" not in own:
        return None
    cosine, cka = compared_between(first, second)
    found = {
        "seeds": [first.config.finetune.seed, second.config.finetune.seed],
        "per_layer": cosine["per_layer"],
        "against_pretraining": paired_change(UnitSums.read(own["units"]), UnitSums.read(cosine["units"]), reduce=None),
    }
    entry = summary["analyses"].get(RepresentationChange.name)
    current = entry is not None and entry.get("version") == RepresentationChange.version
    own_cka = per_pair_results(entry).get(MAIN_PAIR) if entry is not None and current else None
    if own_cka is not None:
        found[RepresentationChange.name] = {
            "per_layer": cka["tokens"]["per_layer"],
            "against_pretraining": cka_change(own_cka, cka),
        }
    return found


def between_seeds(runs: list[RunPlan]) -> dict[str, BetweenSeeds]:
    """Per task with two finished seeds or more, every pair of its seeds (`seed_pair`) and the
    per-layer cosine between seeds as mean and spread over the pairs."""
    by_task: dict[str, list[RunPlan]] = {}
    for plan in runs:
        if stored_result(plan.config, plan.data) is not None:
            by_task.setdefault(plan.config.task.name, []).append(plan)
    found = {}
    for task, plans in by_task.items():
        pairs = [compared for first, second in combinations(plans, 2) if (compared := seed_pair(first, second))]
        if pairs:
            found[task] = {"pairs": pairs, "per_layer": elementwise([pair["per_layer"] for pair in pairs])}
            representations = [
                pair[RepresentationChange.name]["per_layer"] for pair in pairs if RepresentationChange.name in pair
            ]
            if representations:
                found[task][RepresentationChange.name] = {"per_layer": elementwise(representations)}
    return found
