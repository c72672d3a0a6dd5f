"""Dev metrics from the analysis pass: the same numbers as evaluating the model directly, the
majority class beside them, one stream when the run compares the whole dev split."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from harness.analyses.evaluation import Evaluation, majority_scores, paired_difference
from harness.config import AnalysisConfig
from harness.inputs.encoding import encode_examples
from harness.inputs.sources import SOURCES, SourceContext
from harness.results.store import ResultStore
from harness.run.engine import analyse
from harness.run.plan import select_analyses
from harness.views.evaluation import dev_metrics, dev_table, learning_warning, table_metric
from tasks.loading import load_examples
from tasks.metrics import compute_metrics
from tasks.registry import get_task
from tests.fixtures import as_checkpoints, tiny_bert

RTE = get_task("rte")


@pytest.fixture(scope="module")
def dev(tiny_data):
    return load_examples(RTE, "dev", tiny_data / "glue")


def context(tokenizer, dev, sample, splits=None, task=RTE) -> SourceContext:
    return SourceContext(
        tokenizer,
        AnalysisConfig(eval_batch_size=3),
        tokenizer_name="tiny",
        max_length=64,
        task=task,
        task_examples=sample,
        task_identity={"examples": len(sample)},
        eval_examples=splits or {"dev": dev},
        eval_identity={"dev": "tiny dev"},
    )


def test_dev_metrics_are_what_the_model_scores_directly_beside_the_majority_class(tiny_tokenizer, dev, tmp_path):
    models = {"pretrained": tiny_bert(0), "finetuned": tiny_bert(1)}
    entry = analyse(
        [Evaluation],
        as_checkpoints(models),
        [("pretrained", "finetuned")],
        context(tiny_tokenizer, dev, dev),
        ResultStore(tmp_path),
    )["evaluation"]
    labels = np.array([example.label for example in dev])
    encoded = encode_examples(tiny_tokenizer, dev, 64, pair=True)
    scores = dev_metrics(entry)
    for name, model in models.items():
        with torch.no_grad():
            logits = model(**encoded.model_inputs("cpu")).logits.numpy()
        assert scores[name]["dev/accuracy"] == pytest.approx(compute_metrics(RTE, logits, labels)["accuracy"])
        loss = torch.nn.functional.cross_entropy(torch.from_numpy(logits), torch.from_numpy(labels))
        assert scores[name]["dev/loss"] == pytest.approx(float(loss), rel=1e-5)
    assert scores["majority"]["dev/accuracy"] == max(np.mean(labels == 0), np.mean(labels == 1))
    comparison = entry["result"]["per_pair"]["pretrained->finetuned"]
    change = scores["finetuned"]["dev/accuracy"] - scores["pretrained"]["dev/accuracy"]
    assert comparison["change"]["dev/accuracy"] == pytest.approx(change)
    assert comparison["against_before"]["difference"] == pytest.approx(change)
    low, high = comparison["against_before"]["interval"]
    assert low <= change <= high


def stored(predictions: list[int], labels: list[int]) -> dict:
    """A per-checkpoint evaluation result as the store keeps it (what compare and the view's metrics read)."""
    accuracy = float(np.mean(np.array(predictions) == np.array(labels)))
    return {
        "task": "rte",
        "metrics": {"dev/accuracy": accuracy, "dev/loss": 1.0 - accuracy},  # the loss every stored result has
        "examples": {"dev": len(labels)},
        "predictions": {"dev": predictions},
        "labels": {"dev": labels},
    }


def entry_of(comparison: dict) -> dict:
    """A summary entry holding one compared pair (only what learning_warning reads)."""
    return {"pairs": [["pretrained", "finetuned"]], "result": {"per_pair": {"pretrained->finetuned": comparison}}}


def test_a_model_that_learned_is_clearly_above_the_majority_class_and_one_that_did_not_is_flagged():
    labels = [0] * 60 + [1] * 40
    per_checkpoint = {"pretrained": stored([0] * 100, labels), "finetuned": stored(labels, labels)}
    comparison = Evaluation.compare(per_checkpoint, [("pretrained", "finetuned")])["pretrained->finetuned"]
    assert comparison["against_majority"]["difference"] == pytest.approx(0.4)
    low, high = comparison["against_majority"]["interval"]
    assert 0.25 < low < 0.4 < high <= 0.55 and comparison["learned"]
    assert learning_warning(entry_of(comparison)) is None
    lucky = [0] * 57 + [1] * 3 + [1] * 3 + [0] * 37  # trades 3 right answers for 3 others: the majority's score
    per_checkpoint["finetuned"] = stored(lucky, labels)
    comparison = Evaluation.compare(per_checkpoint, [("pretrained", "finetuned")])["pretrained->finetuned"]
    assert comparison["against_majority"]["interval"][0] < 0 and not comparison["learned"]
    warning = learning_warning(entry_of(comparison))
    assert warning.startswith("warning: finetuned is not clearly above the majority class on dev/accuracy")


def test_the_accuracy_shortcut_gives_the_interval_of_the_general_path():
    generator = np.random.default_rng(3)
    labels = generator.integers(0, 2, 80)
    predictions, reference = np.where(generator.random(80) < 0.8, labels, 1 - labels), np.zeros(80, dtype=int)
    fast = paired_difference(RTE, "accuracy", predictions, reference, labels)
    mrpc = get_task("mrpc")  # accuracy is its first metric too; f1 takes the general path
    general = paired_difference(mrpc, "f1", predictions, predictions, labels)
    assert general["interval"] == [0.0, 0.0]
    by_hand = [
        np.mean(predictions[c] == labels[c]) - np.mean(reference[c] == labels[c])
        for c in np.random.default_rng(0).integers(0, 80, (1000, 80))
    ]
    assert fast["interval"] == pytest.approx(list(np.percentile(by_hand, [2.5, 97.5])))


def test_paired_intervals_of_identical_predictions_are_zero():
    labels = np.array([0, 1, 1, 0, 1])
    result = paired_difference(RTE, "accuracy", labels, labels, labels)
    assert result == {"metric": "accuracy", "difference": 0.0, "interval": [0.0, 0.0]}


def test_the_dev_source_is_the_task_stream_only_when_the_sample_is_the_whole_single_split(tiny_tokenizer, dev):
    assert SOURCES["dev"](context(tiny_tokenizer, dev, dev)).streams_as() == "task"
    assert SOURCES["dev"](context(tiny_tokenizer, dev, dev[:3])).streams_as() == "dev"
    two = {"dev_matched": dev, "dev_mismatched": dev}
    assert SOURCES["dev"](context(tiny_tokenizer, dev, dev, two)).streams_as() == "dev"


def test_each_evaluation_split_is_scored_on_its_own_examples(tiny_tokenizer, dev, tmp_path):
    mnli = get_task("mnli")
    matched = [replace(example, split="dev_matched") for example in dev]
    mismatched = [replace(example, split="dev_mismatched", label=2) for example in dev[:4]]
    splits = {"dev_matched": matched, "dev_mismatched": mismatched}
    entry = analyse(
        [Evaluation],
        as_checkpoints({"a": tiny_bert(0, num_labels=3)}),
        [],
        context(tiny_tokenizer, dev, matched[:3], splits, mnli),
        ResultStore(tmp_path),
    )["evaluation"]
    (result,) = entry["result"]["per_checkpoint"].values()
    assert result["examples"] == {"dev_matched": len(dev), "dev_mismatched": 4}
    assert result["majority"]["dev_mismatched/accuracy"] == 1.0  # every mismatched label is 2
    assert entry["source"]["identity"]["source"] == "dev"


def test_the_study_dev_table_names_a_main_score_by_its_split_and_metric():
    """As it did when it took GLUE's dev prefix off the score's stem (``dev_matched_accuracy``)."""
    assert table_metric("dev", "accuracy") == "accuracy"
    assert table_metric("dev_matched", "accuracy") == "matched_accuracy"
    assert table_metric("validation", "pearson") == "validation_pearson"


def test_a_study_aggregated_before_main_scores_were_kept_is_told_to_aggregate_again():
    study = {"model": "minilm", "findings": {}, "tasks": {"rte": {"main_metric": "dev_accuracy", "metrics": {}}}}
    with pytest.raises(ValueError, match="run its `harness study` command again"):
        dev_table(study)


def test_majority_scores_of_regression_and_classification():
    assert majority_scores(RTE, np.array([1, 1, 0]))["accuracy"] == pytest.approx(2 / 3)
    assert majority_scores(get_task("stsb"), np.array([1.0, 2.0, 4.0])) == {"pearson": 0.0, "spearman": 0.0}


def test_every_run_evaluates_whatever_analyses_are_chosen():
    assert [analysis.name for analysis in select_analyses(["cosine"])] == ["evaluation", "cosine"]
