"""The samples a source drew, read from the identity and notes it stored with an analysis's entry:
each one's size, the setting ``--quick`` caps it with, and what it counts. A view says which of
these its analysis's source draws (`harness.views.base.View.samples`), so that a figure drawn from
a quick look's sample says so (`harness.present.redraw.sample_note`) without torch or the sources.
Data read whole (no cap recorded) is no sample.
"""

from __future__ import annotations

from collections.abc import Callable

from harness.results.store import SourceIdentity, SourceNotes

Sample = tuple[int | None, str, str]  # its size, the setting --quick caps it with, what it counts
Sampler = Callable[[SourceIdentity, SourceNotes], list[Sample]]  # (identity, notes) -> the samples drawn


def examples_of(identity: SourceIdentity) -> str:
    return f"{identity.get('split', 'dev')} examples"


def dev_sample(identity: SourceIdentity, notes: SourceNotes) -> list[Sample]:
    """A task's dev split: always a seeded sample of it (``--max-eval-examples``)."""
    return [(identity.get("examples"), "max_eval_examples", examples_of(identity))]


def intervention_sample(identity: SourceIdentity, notes: SourceNotes) -> list[Sample]:
    """The main dev split scored under each intervention (``--ablation-examples``)."""
    return [(identity.get("examples"), "ablation_examples", examples_of(identity))]


def evaluation_samples(identity: SourceIdentity, notes: SourceNotes) -> list[Sample]:
    """Each evaluation split: whole unless ``--max-dev-examples`` asked for a sample."""
    if "sample" not in identity:
        return []
    return [(count, "max_dev_examples", f"{split} examples") for split, count in notes.get("examples", {}).items()]


def running_text_sample(identity: SourceIdentity, notes: SourceNotes) -> list[Sample]:
    """Segments of running text (``--max-eval-examples``)."""
    return [(notes.get("segments"), "max_eval_examples", "segments of running text")]


def documents_sample(identity: SourceIdentity, notes: SourceNotes) -> list[Sample]:
    """Coreference documents, where ``--max-corpus-items`` capped them."""
    return [(notes.get("documents"), "max_corpus_items", "documents")] if identity.get("max_documents") else []


def treebank_samples(identity: SourceIdentity, notes: SourceNotes) -> list[Sample]:
    """Treebank sentences where ``--max-corpus-items`` capped them, and the probes' training
    sentences where ``--probe-train-sentences`` did (0: the whole training treebank)."""
    capped = identity.get("max_sentences") or identity.get("max_dev_sentences")
    trained = identity.get("train_sentences")
    return ([(notes.get("sentences"), "max_corpus_items", "treebank sentences")] if capped else []) + (
        [(notes.get("train_sentences"), "probe_train_sentences", "probe training sentences")] if trained else []
    )
