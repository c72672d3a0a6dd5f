"""bert-base-uncased's shape through a whole default ``harness run`` at tiny sizes on the CPU.

The model has bert-base-uncased's configuration (12 layers x 12 heads, hidden 768, its
WordPiece vocabulary: the bundled MiniLM's tokenizer is bert-base-uncased's) with random
weights, so no download is needed: every default analysis and every figure must work for 12
layers and 144 heads (figures are checked for clipped or overlapping text as they are saved),
and nothing may assume MiniLM's six layers.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
import torch
from transformers import BertConfig, BertForSequenceClassification

from harness.analyses import ANALYSES
from harness.cli import main
from harness.model.loading import load_tokenizer
from harness.results.store import read_json
from harness.results.summary import SUMMARY
from tests.fixtures import GLUE_DIR, PNG_ONLY, harness_arguments

pytestmark = pytest.mark.slow  # a 110M-parameter model fine-tuned and analysed: about two minutes
LAYERS = HEADS = 12


class Collected(logging.Handler):
    """The messages logged while it is attached (the figure checks' warnings)."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def has_layer_axis(value: Any) -> bool:
    """Whether a stored statistic holds a list with one entry per layer, at any depth."""
    if isinstance(value, dict):
        return any(has_layer_axis(inner) for inner in value.values())
    return isinstance(value, list) and (len(value) == LAYERS or any(has_layer_axis(inner) for inner in value))


def bert_base_folder(folder: Path) -> Path:
    """A randomly initialised model of bert-base-uncased's configuration, saved with its tokenizer."""
    torch.manual_seed(0)
    config = BertConfig()  # the defaults are bert-base-uncased's: 12 x 12, hidden 768, vocabulary 30522
    assert (config.num_hidden_layers, config.num_attention_heads, config.hidden_size) == (LAYERS, HEADS, 768)
    BertForSequenceClassification(config).save_pretrained(folder)
    load_tokenizer("minilm").save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def bert_base_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], list[str]]:
    root = tmp_path_factory.mktemp("bert_base")
    model = bert_base_folder(root / "bert-base-random")
    argv = harness_arguments(
        "run",
        model,
        GLUE_DIR,
        root,
        *("--max-train-examples", "16", "--epochs", "1", "--quick", "--max-eval-examples", "8"),
        *("--max-dev-examples", "16", "--max-corpus-items", "6", "--probe-train-sentences", "16", "--max-length", "32"),
        *PNG_ONLY,
    )
    figure_checks, collected = logging.getLogger("harness.views.saving"), Collected()
    figure_checks.addHandler(collected)
    try:
        assert main(argv) == 0
    finally:
        figure_checks.removeHandler(collected)
    (summary_path,) = (root / "out").glob(f"*/{SUMMARY}")
    return summary_path.parent, read_json(summary_path), collected.messages


def test_every_default_analysis_runs_on_twelve_layers_of_twelve_heads(bert_base_run):
    _, summary, _ = bert_base_run
    defaults = {name for name, analysis in ANALYSES.items() if analysis.on_by_default}
    assert defaults <= summary["analyses"].keys()
    assert (summary["run"]["num_layers"], summary["run"]["num_heads"]) == (LAYERS, HEADS)
    cosine = summary["analyses"]["cosine"]["result"]["per_pair"]["pretrained->finetuned"]
    assert len(cosine["per_layer"]) == LAYERS and all(len(row) == HEADS for row in cosine["per_head"])
    for name in ("surface", "patterns", "syntax", "sinks", "vig", "coreference"):
        for checkpoint, statistics in summary["analyses"][name]["result"]["per_checkpoint"].items():
            assert has_layer_axis(statistics), (name, checkpoint)


def test_every_figure_of_144_heads_is_drawn_and_passes_the_layout_check(bert_base_run):
    folder, summary, warnings = bert_base_run
    drawn = read_json(folder / "figures" / ".drawn.json")["analyses"]
    assert {name for name, files in drawn.items() if files} >= {
        "cosine",
        "surface",
        "patterns",
        "syntax",
        "coreference",
        "probes",
        "sinks",
        "vig",
        "clustering",
    }
    assert all((folder / "figures" / file).is_file() for files in drawn.values() for file in files)
    assert warnings == []
