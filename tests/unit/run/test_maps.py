"""``harness maps``: a typed text or pair through a run's two checkpoints. The maps are those
transformers' own eager attention gives for the same input (an independent recomputation), stored
in the run's folder (typing an input again replaces it), read back as arrays with the run's seeded
dev examples, and shown on a page of their own; bad input is one line."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from harness.cli import main, run_config_of
from harness.present.maps import MAPS_FOLDER, PAGE, run_inputs
from harness.results.checkpoints import FINETUNED, PRETRAINED
from harness.run.maps import attention_maps
from tests.fixtures import tiny_run_arguments

pytestmark = pytest.mark.slow  # a tiny run, then the maps of its checkpoints

TEXT, PAIR = "the cat sat on the mat .", "a dog sat"


@pytest.fixture(scope="module")
def run_folder(tiny_model_dir, tiny_data, tmp_path_factory):
    root = tmp_path_factory.mktemp("maps")
    argv = tiny_run_arguments(tiny_model_dir, tiny_data, root, "--analyses", "examples", "--no-figures")
    assert main(argv) == 0
    (folder,) = (root / "out").glob("rte-*")
    return folder


def eager_maps(folder, text: str, pair: str | None) -> np.ndarray:
    """transformers' own attention probabilities (``output_attentions``) of a model folder: (layers, heads, n, n)."""
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSequenceClassification.from_pretrained(folder, attn_implementation="eager").eval()
    with torch.no_grad():
        output = model(**tokenizer(text, pair, return_tensors="pt"), output_attentions=True)
    return torch.stack(output.attentions)[:, 0].numpy()


def test_typed_maps_are_transformers_own_attention_stored_and_read_back(run_folder, capsys):
    config = run_config_of(run_folder)
    typed = attention_maps(config, TEXT, PAIR)
    assert typed.tokens[0] == "[CLS]" and typed.tokens.count("[SEP]") == 2 and not typed.truncated
    (checkpoint,) = config.environment.cache_dir.glob("rte-*/final")
    assert np.allclose(typed.maps[FINETUNED], eager_maps(checkpoint, TEXT, PAIR), atol=1e-5)
    assert np.allclose(typed.maps[PRETRAINED], eager_maps(config.task.model, TEXT, PAIR), atol=1e-5)
    assert np.allclose(typed.maps[FINETUNED].sum(axis=-1), 1, atol=1e-5)
    assert np.array_equal(typed.change(), typed.maps[FINETUNED] - typed.maps[PRETRAINED])
    # the command: the same input again replaces its file, another adds one; the arrays come back to 3 decimals
    assert main(["maps", str(run_folder), "--text", TEXT, "--pair", PAIR]) == 0
    printed = capsys.readouterr().out
    assert f"maps of {len(typed.tokens)} tokens: {run_folder / MAPS_FOLDER / PAGE}" in printed
    assert "cosine per layer (pretrained->finetuned), mean over heads: " in printed
    assert main(["maps", str(run_folder), "--text", "he ran"]) == 0
    assert len(list((run_folder / MAPS_FOLDER).glob("*.json"))) == 2
    *examples, first, second = run_inputs(run_folder)
    assert len(examples) == 4 and (first.text_a, first.text_b, second.text_b) == (TEXT, PAIR, None)
    assert np.abs(first.maps[FINETUNED] - typed.maps[FINETUNED]).max() <= 0.0005 + 1e-6
    assert examples[0].maps[PRETRAINED].shape[:2] == (2, 4)
    page = (run_folder / MAPS_FOLDER / PAGE).read_text()
    data = json.loads(page.split('id="example-data">')[1].split("</script>")[0].replace("\\u003c", "<"))
    (shown,) = data["runs"]
    assert [example["text_a"] for example in shown["examples"]] == [TEXT, "he ran"]
    assert 'id="tasks"' not in page  # the page of typed inputs alone


def test_bad_maps_input_is_one_line(run_folder, tmp_path, capsys):
    cases = [
        (["maps", str(tmp_path), "--text", TEXT], "no config.json in it; give a run's folder"),
        (["maps", str(run_folder), "--text", " "], "is empty; type a sentence"),
    ]
    moved = tmp_path / "moved-cache"
    cache = run_config_of(run_folder).environment.cache_dir
    shutil.copytree(run_folder, tmp_path / "run")
    cases.append(
        (["maps", str(tmp_path / "run"), "--text", TEXT, "--cache-dir", str(moved)], "no fine-tuned checkpoint")
    )
    for argv, message in cases:
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, err
    assert cache.is_dir()


def test_the_readmes_python_block_gives_the_arrays(run_folder):
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    (block,) = [block for block in re.findall(r"```python\n(.*?)```", readme, re.S) if "attention_maps" in block]
    scope: dict = {}
    exec(compile(block.replace("outputs/rte-minilm-seed42-<key>", str(run_folder)), "README.md", "exec"), scope)
    layers, heads = scope["typed"].maps[FINETUNED].shape[:2]
    assert (layers, heads) == (2, 4) and scope["typed"].head_cosines().shape == (2, 4)
    assert scope["stored"][-1].text_a == scope["typed"].text_a


def test_each_checkpoints_prediction_of_a_typed_input_is_said_and_shown(run_folder, capsys):
    """The class each checkpoint's head gives the typed pair, with its probability, as transformers'
    own classifier computes it (the pre-trained one's head is the run's seeded, untrained one),
    printed by `harness maps` and shown beside the input on its page."""
    config = run_config_of(run_folder)
    (checkpoint,) = config.environment.cache_dir.glob("rte-*/final")
    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    model = AutoModelForSequenceClassification.from_pretrained(checkpoint).eval()
    with torch.no_grad():
        probabilities = model(**tokenizer(TEXT, PAIR, return_tensors="pt")).logits[0].softmax(-1)
    best = int(probabilities.argmax())
    expected = f"{('entailment', 'not_entailment')[best]} ({float(probabilities[best]):.2f})"
    assert main(["maps", str(run_folder), "--text", TEXT, "--pair", PAIR]) == 0
    printed = capsys.readouterr().out
    assert "predicted: pre-trained (untrained head) " in printed and f"; fine-tuned {expected}" in printed
    page = (run_folder / MAPS_FOLDER / PAGE).read_text()
    data = json.loads(page.split('id="example-data">')[1].split("</script>")[0].replace("\\u003c", "<"))
    shown = next(example for example in data["runs"][0]["examples"] if example["text_b"] == PAIR)
    assert shown["predictions"]["fine-tuned"] == expected and set(shown["predictions"]) == {
        "pre-trained (untrained head)",
        "fine-tuned",
    }
