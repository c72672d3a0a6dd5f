"""Kovaleva et al.'s padded-map cosine beside the cropped one: known values on hand-built
maps, the same cropped numbers as the ``cosine`` analysis, and a clear error for a model too
short for the padding."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from transformers import BertConfig

from harness.analyses.cosine import CosineSimilarity
from harness.analyses.cosine_padded import PaddedCosineSimilarity
from harness.cli import main
from harness.config import AnalysisConfig, RunConfig, TaskConfig
from harness.inputs.batches import AttentionBatch, EncodedBatch
from harness.inputs.sources.task import KOVALEVA_PADDED_LENGTH
from harness.results.checkpoints import FINETUNED, PRETRAINED
from harness.results.store import ResultStore
from harness.run.engine import analyse
from harness.run.plan import select_analyses, unsupported
from harness.views.cosine_padded import PaddedCosineView
from tasks.errors import InputError
from tasks.loading import load_examples
from tasks.registry import get_task
from tests.fixtures import analysis_context, as_checkpoints, tiny_bert, tiny_dev_sources, tiny_run_arguments

PAIR = f"{PRETRAINED}->{FINETUNED}"


def test_padding_rows_count_in_the_padded_protocol_and_not_in_the_cropped_one(tiny_tokenizer):
    """A 2-token input padded to 4, one layer, two heads. Head 1: the real rows swap
    (cropped cosine 0) and both padding rows are [.5, .5, 0, 0] in both maps, so the padded
    cosine is (2 x .5) / (2 + 2 x .5) = 1/3. Head 2: identical maps, 1 under both."""
    first, second = torch.zeros(1, 1, 2, 4, 4), torch.zeros(1, 1, 2, 4, 4)
    first[0, 0, 0, :2, :2] = torch.eye(2)
    second[0, 0, 0, :2, :2] = torch.eye(2).flip(0)
    for maps in (first, second):
        maps[0, 0, 0, 2:, :2] = 0.5
        maps[0, 0, 1, :, 0] = 1.0
    encoded = EncodedBatch(torch.ones(1, 4, dtype=torch.long), torch.tensor([[1, 1, 0, 0]]), None, [None])
    models = {PRETRAINED: tiny_bert(0), FINETUNED: tiny_bert(1)}
    analysis = PaddedCosineSimilarity(analysis_context(models, 1, 2, tiny_tokenizer, ((PRETRAINED, FINETUNED),)))
    analysis.update(AttentionBatch(encoded, {PRETRAINED: first, FINETUNED: second}))
    result = analysis.result()["per_pair"][PAIR]
    assert result["padded"]["per_head"][0] == pytest.approx([1 / 3, 1.0])
    assert result["cropped"]["per_head"][0] == pytest.approx([0.0, 1.0])
    assert result["most_changed"]["padded"] == {"layer": 1, "head": 1, "value": pytest.approx(1 / 3)}
    assert result["same_most_changed"] and result["ranking_spearman"] == pytest.approx(1.0)
    entry = {"pairs": [[PRETRAINED, FINETUNED]], "result": analysis.result()}
    table = PaddedCosineView.tables(entry, {"model": "tiny", "task": "rte"})["cosine_padded_table"]
    assert "| padded to 200 (Kovaleva's code) | 0.6667 | 1-1 (0.333) |" in table  # layer mean of 1/3 and 1
    assert "| cropped to the real tokens (ours) | 0.5000 | 1-1 (0.000) |" in table


def test_the_cropped_part_of_a_padded_pass_is_the_cosine_analysis_and_the_padded_part_differs(
    tiny_tokenizer, tiny_data, tmp_path
):
    task = get_task("rte")
    dev = load_examples(task, "dev", tiny_data / "glue")
    context = tiny_dev_sources(tiny_tokenizer, task, dev, AnalysisConfig(eval_batch_size=3))
    models = {PRETRAINED: tiny_bert(0, positions=256), FINETUNED: tiny_bert(1, positions=256)}
    entries = analyse(
        [CosineSimilarity, PaddedCosineSimilarity],
        as_checkpoints(models),
        [(PRETRAINED, FINETUNED)],
        context,
        ResultStore(tmp_path),
    )
    cropped = entries["cosine"]["result"]["per_pair"][PAIR]["per_head"]
    both = entries["cosine_padded"]["result"]["per_pair"][PAIR]
    assert torch.allclose(torch.tensor(both["cropped"]["per_head"]), torch.tensor(cropped), atol=1e-5)
    assert not torch.allclose(torch.tensor(both["padded"]["per_head"]), torch.tensor(cropped), atol=1e-3)
    assert entries["cosine_padded"]["source"]["identity"]["padded_to"] == KOVALEVA_PADDED_LENGTH


def test_the_padded_protocol_runs_only_when_named_and_needs_the_position_embeddings(
    tiny_model_dir, tiny_data, tmp_path, capsys
):
    assert PaddedCosineSimilarity not in select_analyses(None)
    assert PaddedCosineSimilarity in select_analyses(["cosine_padded"])
    assert main(tiny_run_arguments(tiny_model_dir, tiny_data, tmp_path, "--analyses", "cosine_padded")) == 2
    assert "pads inputs to 200 tokens" in capsys.readouterr().err  # the tiny model has 128 positions


def test_an_analysis_the_model_cannot_run_is_left_out_of_a_default_run_and_an_error_when_named():
    short, long = BertConfig(max_position_embeddings=128), BertConfig(max_position_embeddings=512)
    chosen = [CosineSimilarity, PaddedCosineSimilarity]
    default = RunConfig(TaskConfig(task="rte", model="tiny"))
    assert unsupported(default, long, chosen) == {}
    assert unsupported(default, short, chosen) == {
        "cosine_padded": "tiny: pads inputs to 200 tokens as Kovaleva et al.'s code, but the model has 128 position "
        "embeddings"
    }
    named = replace(default, analysis=AnalysisConfig(analyses=["cosine", "cosine_padded"]))
    with pytest.raises(
        InputError, match="^--analyses cosine_padded: tiny: pads inputs to 200 tokens .*; leave it out$"
    ):
        unsupported(named, short, chosen)
