"""The samples a figure's footnote names come from the view of the analysis that drew them
(`harness.views.base.View.samples`): each view says what its analysis's source draws."""

from __future__ import annotations

from harness.analyses import ANALYSES
from harness.config import QUICK
from harness.present.redraw import sample_note
from harness.views import samples
from harness.views.samples import Sampler

# What each source draws: a source's analyses' views all say the same
BY_SOURCE: dict[str, Sampler] = {
    "task": samples.dev_sample,
    "task-padded": samples.dev_sample,
    "ablation": samples.intervention_sample,
    "dev": samples.evaluation_samples,
    "corpus": samples.running_text_sample,
    "running-text": samples.running_text_sample,
    "coreference": samples.documents_sample,
    "syntax": samples.treebank_samples,
    "syntax-probe": samples.treebank_samples,
}


def test_each_view_says_what_its_analysiss_source_draws():
    said = {name: analysis.view.samples for name, analysis in ANALYSES.items()}
    assert said == {name: BY_SOURCE[analysis.source] for name, analysis in ANALYSES.items()}


def test_a_quick_looks_sample_is_named_and_a_whole_treebank_is_not():
    view = ANALYSES["probes"].view
    identity = {"source": "syntax-probe", "max_dev_sentences": 100, "train_sentences": 0}
    notes = {"sentences": QUICK["max_corpus_items"], "train_sentences": 3000}
    entry = {"source": {"identity": identity, "notes": notes}}
    assert sample_note(view, entry) == f"quick look: {QUICK['max_corpus_items']} treebank sentences"
    assert sample_note(view, {"source": {"identity": {"source": "syntax-probe"}, "notes": notes}}) == ""
    ablation = {"source": {"identity": {"source": "ablation", "examples": 64, "split": "validation"}}}
    assert sample_note(ANALYSES["transplant"].view, ablation) == "quick look: 64 validation examples"
