"""The per-example maps the report shows: the same seeded examples for every checkpoint and
batching, the maps as the forward pass gave them (to three decimals), and small enough to store."""

import numpy as np
import torch

from harness.analyses import examples as module
from harness.analyses.examples import MAX_TOKENS, NUM_EXAMPLES, ExampleMaps, selection_rank
from harness.inputs.encoding import batched
from harness.model.forward import Capture, forward
from harness.results.checkpoints import FINETUNED, PRETRAINED
from harness.views.examples import decode_maps, encode_maps
from tasks.examples import Example
from tests.fixtures import SENTENCES, as_checkpoints, run_analysis

EXAMPLES = [Example(str(i), a, b, i % 2, "dev") for i, (a, b) in enumerate(zip(SENTENCES, reversed(SENTENCES)))]
EXAMPLES += [Example(f"{i}b", a, a, 1, "dev") for i, a in enumerate(SENTENCES[2:6])]  # short ones
PAIR = "pretrained->finetuned"


def run_examples(models, tokenizer, batch_size=3, examples=EXAMPLES):
    return run_analysis(ExampleMaps, models, tokenizer, examples, batch_size)


def length(tokenizer, example):
    return len(tokenizer(example.text_a, example.text_b)["input_ids"])


def test_the_seeded_short_examples_are_the_same_for_every_checkpoint_and_batching(
    tiny_pair, tiny_tokenizer, monkeypatch
):
    monkeypatch.setattr(module, "MAX_TOKENS", 15)  # the tiny examples are 10 to 16 tokens long
    short = [e for e in EXAMPLES if length(tiny_tokenizer, e) <= 15]
    assert NUM_EXAMPLES < len(short) < len(EXAMPLES)
    chosen = sorted(short, key=lambda e: selection_rank(42, e))[:NUM_EXAMPLES]
    result = run_examples(tiny_pair, tiny_tokenizer)
    for checkpoint in (PRETRAINED, FINETUNED):
        stored = result["per_checkpoint"][checkpoint]
        assert [e["guid"] for e in stored["examples"]] == [e.guid for e in chosen]
        assert stored["candidates"] == len(short)
    one_at_a_time = run_examples(tiny_pair, tiny_tokenizer, batch_size=1, examples=EXAMPLES[::-1])
    assert one_at_a_time["per_checkpoint"] == result["per_checkpoint"]


def test_the_stored_maps_are_the_forward_passs_to_three_decimals(tiny_pair, tiny_tokenizer):
    result = run_examples(tiny_pair, tiny_tokenizer)
    first = result["per_checkpoint"][FINETUNED]["examples"][0]
    example = next(e for e in EXAMPLES if e.guid == first["guid"])
    (encoded,) = batched(tiny_tokenizer, [example], 1, 128, pair=True)
    (checkpoint,) = as_checkpoints({FINETUNED: tiny_pair[FINETUNED]})
    attention = forward(checkpoint.model, encoded, capture=Capture(attention=True)).attentions[0]
    stored = decode_maps(first["maps"], 2, 4)
    assert stored.shape == attention.shape and np.abs(stored - attention.numpy()).max() <= 0.0005 + 1e-6
    assert first["tokens"] == tiny_tokenizer.convert_ids_to_tokens(encoded.input_ids[0].tolist())
    assert first["label"] == example.label  # no task here: the label as stored


def test_compare_names_each_examples_most_changed_head(tiny_pair, tiny_tokenizer):
    result = run_examples(tiny_pair, tiny_tokenizer)
    compared = result["per_pair"][PAIR]["examples"]
    assert len(compared) == NUM_EXAMPLES
    for entry in compared:
        cosine = np.array(entry["cosine_per_head"])
        layer, head = entry["most_changed"]["layer"], entry["most_changed"]["head"]
        assert cosine.shape == (2, 4) and cosine[layer - 1, head - 1] == cosine.min()
    same = run_examples({PRETRAINED: tiny_pair[PRETRAINED], FINETUNED: tiny_pair[PRETRAINED]}, tiny_tokenizer)
    assert all(np.allclose(e["cosine_per_head"], 1) for e in same["per_pair"][PAIR]["examples"])


def test_four_examples_of_a_12_by_12_head_model_stay_under_2_mb():
    maps = torch.softmax(torch.randn(12, 12, MAX_TOKENS, MAX_TOKENS) * 3, dim=-1)
    text = encode_maps(maps)
    assert NUM_EXAMPLES * len(text) < 2_000_000
    assert np.abs(decode_maps(text, 12, 12) - maps.numpy()).max() <= 0.0005 + 1e-6
