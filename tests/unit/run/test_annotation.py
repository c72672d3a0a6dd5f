"""Sampling real maps into a labelling pool: length bands, segments, and what the pool records."""

from __future__ import annotations

import numpy as np
import torch

from classifier.data import LENGTH_BANDS, band_name, length_band, read_maps, read_sources
from classifier.features import NO_SECOND_SEGMENT
from harness.cli import main
from harness.inputs.batches import EncodedBatch
from harness.inputs.encoding import encode_examples
from harness.model.loading import load_tokenizer
from harness.run.annotation import spread_over_lengths
from tasks.loading import load_examples
from tasks.registry import get_task


def test_inputs_are_drawn_evenly_from_every_length_band_the_task_has():
    lengths = [10] * 50 + [20] * 5 + [100] * 50  # no input of 33..64 tokens
    chosen = spread_over_lengths(lengths, 30, np.random.default_rng(0))
    bands = [length_band(lengths[index]) for index in chosen]
    assert len(set(chosen)) == 30 and bands.count(1) == 5  # the thin band gives all it has
    assert bands.count(0) in (12, 13) and bands.count(3) in (12, 13) and 2 not in bands
    assert spread_over_lengths(lengths, 30, np.random.default_rng(0)) == chosen
    assert len(spread_over_lengths(lengths[:3], 10, np.random.default_rng(0))) == 3
    assert [length_band(n) for n in (16, 17, 32, 64, 65)] == [0, 1, 1, 2, 3] and len(LENGTH_BANDS) == 3
    assert [band_name(band) for band in range(4)] == ["<=16", "17-32", "33-64", ">64"]


def test_the_second_segment_starts_after_the_first_separator():
    mask = torch.ones(3, 5, dtype=torch.long)
    types = torch.tensor([[0, 0, 0, 1, 1], [0, 0, 0, 0, 0], [0, 0, 1, 1, 0]])
    assert EncodedBatch(mask, mask, types, [None] * 3).second_segments.tolist() == [3, NO_SECOND_SEGMENT, 2]
    assert EncodedBatch(mask, mask, None, [None] * 3).second_segments.tolist() == [NO_SECOND_SEGMENT] * 3


def test_a_pool_records_each_maps_source_and_segments(tiny_model_dir, tiny_data, tmp_path):
    pool = tmp_path / "pool"
    assert (
        main(
            [
                "annotate",
                "--task",
                "rte",
                "--model",
                str(tiny_model_dir),
                "--data-dir",
                str(tiny_data / "glue"),
                "--out",
                str(pool),
                "--count",
                "6",
                "--prefix",
                "x-",
            ]
        )
        == 0
    )
    sources = read_sources(pool / "candidates.tsv")
    maps = read_maps(pool / "candidates.npz")
    examples = load_examples(get_task("rte"), "dev", tiny_data / "glue")
    tokenizer = load_tokenizer(str(tiny_model_dir))
    assert len(sources) == 6 and (pool / "sheet_000.png").exists()
    for source in sources:
        encoded = encode_examples(tokenizer, [examples[source.example_index]], 128, pair=True)
        types = encoded.token_type_ids[0].numpy()
        assert maps[source.id].shape == (source.length, source.length) == (len(types), len(types))
        assert source.second_segment == int(np.argmax(types)) > 0 and types[source.second_segment - 1] == 0
        assert np.allclose(maps[source.id].sum(axis=1), 1.0, atol=1e-2)
