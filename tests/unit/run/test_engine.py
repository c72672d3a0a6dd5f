"""The engine over N named checkpoints: every analysis, stored results, and a source added from outside."""

from __future__ import annotations

from typing import Any

import pytest

from harness.analyses import ANALYSES
from harness.analyses.base import Analysis, register_analysis
from harness.config import AnalysisConfig
from harness.inputs.batches import AttentionBatch
from harness.inputs.encoding import batched
from harness.inputs.sources import SOURCES, Source, SourceStream, register_source
from harness.present.redraw import redraw
from harness.results.store import ResultStore
from harness.run.engine import analyse
from harness.views.base import per_checkpoint_results
from tasks.errors import InputError
from tasks.loading import load_examples
from tasks.registry import get_task
from tests.fixtures import as_checkpoints, snapshot, tiny_bert, tiny_dev_sources

NAMES = ("a", "b", "c")
PAIRS = [("a", "b"), ("b", "c")]


@pytest.fixture(scope="module")
def sources(tiny_tokenizer, tiny_data):
    rte = get_task("rte")
    settings = AnalysisConfig(
        eval_batch_size=4,
        syntax_data=tiny_data / "tiny-dev.conllu",
        probe_train_sentences=5,
        syntax_min_count=1,
        coref_data=tiny_data / "coref",
        clustering_tokens_per_example=2,
    )
    examples = load_examples(rte, "dev", tiny_data / "glue")
    return tiny_dev_sources(tiny_tokenizer, rte, examples, settings)


@pytest.fixture(scope="module")
def three(sources, tmp_path_factory):
    """Three different tiny BERTs (long enough for the padded cosine) through every registered analysis, once."""
    checkpoints = as_checkpoints({name: tiny_bert(seed, positions=256) for seed, name in enumerate(NAMES)})
    store = ResultStore(tmp_path_factory.mktemp("store"))
    entries = analyse(list(ANALYSES.values()), checkpoints, PAIRS, sources, store)
    return checkpoints, store, entries


@pytest.mark.slow
def test_every_analysis_measures_three_checkpoints_and_compares_each_declared_pair(three):
    _, _, entries = three
    assert set(entries) == set(ANALYSES)
    for name, entry in entries.items():
        assert entry["checkpoints"] == list(NAMES) and entry["pair_names"] == ["a->b", "b->c"], name
        if entry["joint"]:
            assert set(entry["result"]["per_pair"]) == {"a->b", "b->c"}, name
        else:
            results = per_checkpoint_results(entry)
            assert set(results) == set(NAMES) and set(entry["result"]["per_pair"]) == {"a->b", "b->c"}, name
            assert results["a"] != results["b"], f"{name}: two different models gave the same result"


@pytest.mark.slow  # every analysis's figures: about 40 s
@pytest.mark.slow
def test_every_analysis_draws_three_checkpoints(three, tmp_path):
    _, _, entries = three
    run = {"model": "tiny", "task": "rte", "seed": 42, "num_layers": 2, "num_heads": 4}
    written = redraw({"analyses": entries, "run": run}, tmp_path, formats=("png",))
    drawn = {path.name.split("_")[0] for path in written}
    assert {
        "cosine",
        "surface",
        "gradients",
        "clustering",
        "pattern",
        "syntax",
        "features",
        "probes",
        "coreference",
    } <= drawn
    assert all(path.stat().st_size > 0 for path in written)


@pytest.mark.slow
def test_analysing_again_reuses_every_stored_result(three, sources):
    checkpoints, store, entries = three
    before = snapshot(store.root)
    again = analyse(list(ANALYSES.values()), checkpoints, PAIRS, sources, store)
    assert again == entries and snapshot(store.root) == before


@pytest.mark.slow
def test_a_fourth_checkpoint_computes_only_its_own_per_checkpoint_results(three, sources):
    checkpoints, store, _ = three
    extra = as_checkpoints({"d": tiny_bert(7)})
    before = set(snapshot(store.root))
    analyse([ANALYSES["surface"]], checkpoints + extra, PAIRS + [("c", "d")], sources, store)
    assert len(set(snapshot(store.root)) - before) == 1  # surface of "d" only


class Shouting(Source):
    """A source added from outside the package: the task sample, upper-cased."""

    name = "shouting"

    def identity(self) -> dict[str, Any]:
        return {"source": self.name, "examples": len(self.context.task_examples)}

    def stream(self) -> SourceStream:
        context = self.context
        loud = [type(e)(e.guid, e.text_a.upper(), (e.text_b or "").upper(), e.label) for e in context.task_examples]
        return SourceStream(batched(context.tokenizer, loud, 4, 64, pair=True), len(loud), {"loud": len(loud)})


class FirstTokenCount(Analysis):
    """How many rows of the source started with [CLS]."""

    name = "first-token-count"
    source = "shouting"

    def __init__(self, context) -> None:
        super().__init__(context)
        self.count = 0

    def update(self, batch: AttentionBatch) -> None:
        self.count += int((batch.input_ids[:, 0] == self.context.tokenizer.cls_token_id).sum())

    def result(self) -> dict[str, Any]:
        return {name: {"rows": self.count} for name in self.context.checkpoints}


def test_a_source_added_as_the_readme_says_is_streamed(sources, tmp_path):
    register_source(Shouting)
    register_analysis(FirstTokenCount)
    try:
        checkpoints = as_checkpoints({"a": tiny_bert(0)})
        entries = analyse([FirstTokenCount], checkpoints, [], sources, ResultStore(tmp_path))
    finally:
        SOURCES.pop("shouting")
        ANALYSES.pop("first-token-count")
    entry = entries["first-token-count"]
    assert per_checkpoint_results(entry)["a"]["rows"] == len(sources.task_examples) > 0
    assert entry["source"]["notes"] == {"loud": len(sources.task_examples)}


def test_an_analysis_reading_an_unknown_source_is_a_clear_error(sources, tmp_path):
    class Nowhere(FirstTokenCount):
        name = "nowhere"
        source = "no-such-source"

    with pytest.raises(InputError, match="reads unknown source 'no-such-source'; registered sources: "):
        analyse([Nowhere], as_checkpoints({"a": tiny_bert(0)}), [], sources, ResultStore(tmp_path))


def test_without_a_corpus_the_task_and_corpus_analyses_share_one_stream(sources, tmp_path):
    checkpoints = as_checkpoints({name: tiny_bert(seed) for seed, name in enumerate(NAMES[:2])})
    streamed: list[str] = []
    entries = analyse(
        [ANALYSES["cosine"], ANALYSES["surface"]],
        checkpoints,
        PAIRS[:1],
        sources,
        ResultStore(tmp_path),
        on_source_done=lambda source, _: streamed.append(source),
    )
    assert streamed == ["task"]
    assert entries["surface"]["source"]["identity"] == entries["cosine"]["source"]["identity"]
