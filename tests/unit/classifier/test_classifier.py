"""The shipped pattern CNN, its resizing, the synthetic generator and the label file."""

import subprocess
import sys
import time
from dataclasses import replace

import numpy as np
import pytest
import torch
from mlflow.tracking import MlflowClient

from classifier import CLASSES
from classifier.__main__ import main as classifier_main
from classifier.annotate import parse_label_lines
from classifier.data import LABELS_FILE, MAPS_FILE, read_labels, read_maps
from classifier.features import NO_SECOND_SEGMENT, map_features
from classifier.guideline import LINES, Line, draw_examples, misplaced, relabel, settled
from classifier.model import load_classifier
from classifier.resize import CHANNELS, INPUT_SIZE, normalise_list, normalise_padded
from classifier.synthetic import synthetic_map, synthetic_set
from classifier.train import KINDS, TrainConfig, run, train


@pytest.fixture(scope="module")
def classifier():
    return load_classifier()


def clear_map(label: str, n: int, split: int | None = None) -> np.ndarray:
    """An unmistakable example of each class, written by hand (not by the generator); ``split``: the
    first segment's [SEP] (default the middle), for `vertical` and `block`."""
    attention = np.full((n, n), 0.02 / n)
    index = np.arange(n)
    split = n // 2 if split is None else split
    if label == "vertical":
        attention[:, 0] += 0.7
        attention[:, [split, n - 1]] += 0.14
    elif label == "diagonal":
        attention[index, np.maximum(index - 1, 0)] += 0.98
    elif label == "vertical+diagonal":
        attention[:, 0] += 0.5
        attention[index, np.minimum(index + 1, n - 1)] += 0.48
    elif label == "block":
        attention[: split + 1, 1 : split + 1] += 0.98 / split
        attention[split + 1 :, split + 1 :] += 0.98 / (n - split - 1)
    else:  # heterogeneous: every row attends to its own few random tokens
        rng = np.random.default_rng(n)
        for row in range(n):
            attention[row, rng.choice(n, size=3, replace=False)] += rng.dirichlet(np.ones(3)) * 0.98
    return attention / attention.sum(axis=1, keepdims=True)


def test_the_guidelines_measurements_of_unmistakable_maps():
    n, split = 20, 10
    diagonal = map_features(clear_map("diagonal", n))
    assert diagonal.band > 0.95 and diagonal.columns < 0.05 and diagonal.within_segments is None
    vertical = map_features(clear_map("vertical", n))
    assert vertical.columns > 0.85 and vertical.band < 0.2  # rows next to a column count it as band
    both = map_features(clear_map("vertical+diagonal", n))
    assert both.band > 0.45 and both.columns > 0.45
    block = map_features(clear_map("block", n), second_segment=split + 1)
    assert block.within_segments > 0.95 and block.rest > 0.5
    # uniform attention over two equal segments keeps a little under half of its spread mass inside the row's
    # segment (the band and columns taken out lie mostly inside it), closer to half the longer the input
    uniform = map_features(np.full((n, n), 1.0 / n), second_segment=split)
    longer = map_features(np.full((3 * n, 3 * n), 1.0 / (3 * n)), second_segment=3 * split)
    assert 0.4 < uniform.within_segments < longer.within_segments < 0.5
    # per token, not a share: a long premise and a short hypothesis (RTE) do not make uniform attention
    # a block (its plain share inside the row's own segment would be 0.8), and a pure block stays one
    premise = 3 * n - 6
    unequal = map_features(np.full((3 * n, 3 * n), 1.0 / (3 * n)), second_segment=premise)
    assert 0.45 < unequal.within_segments < 0.55 and line_to("block").side(unequal) == "heterogeneous"
    assert map_features(clear_map("block", 3 * n, split=premise - 1), second_segment=premise).within_segments > 0.95
    assert abs(uniform.band + uniform.columns + uniform.rest - 1.0) < 1e-9
    # the band against chance: 1 for uniform rows whatever the length, about n / 3 for a pure diagonal
    assert abs(uniform.band_lift - 1.0) < 1e-9 and abs(longer.band_lift - 1.0) < 1e-9
    assert diagonal.band_lift > 0.95 * n * n / (3 * n - 2)
    assert map_features(np.full((n, n), 1.0 / n), NO_SECOND_SEGMENT).within_segments is None


def line_to(above: str) -> Line:
    (line,) = [line for line in LINES if line.above == above]
    return line


def pointed(n: int, column_share: float, targets: np.ndarray) -> np.ndarray:
    """A [CLS] column of ``column_share`` and the rest of each row on one token (``targets[row]``)."""
    attention = np.zeros((n, n))
    attention[:, 0] = column_share
    attention[np.arange(n), targets] += 1 - column_share
    return attention


def fuzzy_band(n: int, width: float) -> np.ndarray:
    """Each row spread around its own token, a Gaussian of ``width`` tokens (standard deviation)."""
    offsets = np.arange(n)[None, :] - np.arange(n)[:, None]
    attention = np.exp(-0.5 * (offsets / width) ** 2)
    return attention / attention.sum(axis=1, keepdims=True)


def test_the_guidelines_lines_on_hand_built_maps():
    n, split = 20, 11
    diagonal_line, vertical_line, block_line = line_to("vertical+diagonal"), line_to("vertical"), line_to("block")
    band_line = line_to("diagonal")
    # the same wide, fuzzy band is a diagonal over 70 tokens and diffuse over 16, where it spans the map
    assert band_line.side(map_features(fuzzy_band(70, 6.0))) == "diagonal"
    assert band_line.side(map_features(fuzzy_band(16, 6.0))) == "heterogeneous"
    assert band_line.side(map_features(np.full((70, 70), 1 / 70))) == "heterogeneous"
    assert band_line.side(map_features(clear_map("vertical+diagonal", n))) == "heterogeneous"  # columns: not its border
    assert diagonal_line.side(map_features(clear_map("vertical+diagonal", n))) == "vertical+diagonal"
    assert diagonal_line.side(map_features(clear_map("diagonal", n))) == "diagonal"
    assert vertical_line.side(map_features(clear_map("vertical", n))) == "vertical"
    # a strong [CLS] column beside rows that each point at their twin in the other sentence: alignment
    twins = (np.arange(n) + n // 2) % n
    assert vertical_line.side(map_features(pointed(n, 0.5, twins))) == "heterogeneous"
    # the same column with the rest spread thin over the sentence is vertical
    spread = np.full((n, n), 0.5 / n)
    spread[:, 0] += 0.5
    assert map_features(spread).rest_peak < 0.05 and vertical_line.side(map_features(spread)) == "vertical"
    assert block_line.side(map_features(clear_map("block", n), second_segment=n // 2 + 1)) == "block"
    # inside each segment, but each row on one token: pointed, not a block
    rows = np.arange(n)
    inside = np.where(rows < split, (rows + 3) % split, split + (rows - split + 3) % (n - split))
    assert map_features(pointed(n, 0.2, inside), split).within_segments > 0.9
    assert block_line.side(map_features(pointed(n, 0.2, inside), split)) == "heterogeneous"
    assert block_line.side(map_features(clear_map("block", n))) == "heterogeneous"  # one segment: never block


@pytest.mark.slow
def test_every_labelled_map_is_on_its_side_of_the_guidelines_lines(tmp_path):
    rows, maps = read_labels(), read_maps()
    assert misplaced(rows, maps) == []
    moved, count = relabel(rows, maps)
    assert count == 0 and moved == rows
    index = next(i for i, row in enumerate(rows) if row.label == "vertical+diagonal")
    wrong = rows[:index] + [replace(rows[index], label="diagonal")] + rows[index + 1 :]
    assert relabel(wrong, maps) == (rows, 1)  # the line puts it back
    assert draw_examples(line_to("block"), rows, maps, tmp_path / "line.png").stat().st_size > 10_000


def test_shipped_model_loads_fast_and_predicts_class_names(classifier):
    started = time.perf_counter()
    load_classifier()
    assert time.perf_counter() - started < 1.0
    maps = [clear_map("vertical", n) for n in (2, 7, 128, 512)]
    labels = classifier.predict(maps)
    assert len(labels) == 4 and set(labels) <= set(CLASSES)
    probabilities = classifier.predict_proba(maps)
    assert probabilities.shape == (4, 5)
    assert np.allclose(probabilities.sum(axis=1), 1, atol=1e-5)


@pytest.mark.parametrize("n", [12, 40, 120, 300])
@pytest.mark.parametrize("label", CLASSES)
def test_clear_examples_of_each_class_are_recognised(classifier, label, n):
    """As the guideline's lines class them: a 12-token pair's 'block' (segments of 5 and 6
    tokens, each row spread over its segment) puts 18% on single tokens, which the block line
    (rest peak <= 0.15) calls heterogeneous; every other hand-built map keeps its class."""
    second_segment = n // 2 + 1 if label == "block" else NO_SECOND_SEGMENT  # `clear_map`'s split
    attention = clear_map(label, n)
    expected = settled(label, map_features(attention, second_segment))
    assert expected == label or (label, n) == ("block", 12)
    assert classifier.predict([attention], [second_segment]) == [expected]


def test_a_single_segment_input_never_gets_block(classifier):
    maps = [clear_map("block", n) for n in (40, 120, 300)]
    assert classifier.predict(maps, [n // 2 + 1 for n in (40, 120, 300)]) == ["block"] * 3
    assert "block" not in classifier.predict(maps)
    probabilities = classifier.predict_proba(maps)
    assert np.all(probabilities[:, CLASSES.index("block")] == 0) and np.allclose(probabilities.sum(axis=1), 1)


def test_predictions_do_not_change_with_padding(classifier):
    """A batch padded to its longest input (and beyond) classifies each map as it does alone."""
    rng = np.random.default_rng(3)
    lengths = [7, 20, 45]
    second_segments = torch.tensor([NO_SECOND_SEGMENT, 11, 23])
    padded = torch.zeros(3, 6, 4, 60, 60)
    alone = []
    for row, n in enumerate(lengths):
        maps = torch.softmax(torch.tensor(rng.normal(scale=3, size=(6, 4, n, n))), dim=-1).float()
        maps[0, 0] = torch.as_tensor(clear_map(CLASSES[row], n)).float()
        padded[row, :, :, :n, :n] = maps
        padded[row, :, :, n:, :] = 0.3  # what padding holds must not matter
        alone.append(classifier.predict(list(maps.reshape(-1, n, n).numpy()), [int(second_segments[row])] * 24))
    batched = classifier.predict_batch([padded], torch.tensor(lengths), second_segments)[0]
    assert [[CLASSES[index] for index in row.flatten().tolist()] for row in batched] == alone
    assert [row[0] for row in alone] == list(CLASSES[:3])


def test_resizing_keeps_a_single_column_and_a_thin_diagonal_at_512_tokens():
    n = 512
    column = np.zeros((n, n))
    column[:, 300] = 1.0
    diagonal = np.eye(n)
    images = normalise_list([column, diagonal]).images
    assert images.shape == (2, CHANNELS, INPUT_SIZE, INPUT_SIZE)
    peak = images[0, 0]
    assert torch.all(peak[:, 300 * INPUT_SIZE // n] == 1) and peak.sum() == INPUT_SIZE
    assert torch.equal(images[1, 0], torch.eye(INPUT_SIZE))


def test_padded_batch_resizing_matches_one_map_at_a_time():
    rng = np.random.default_rng(0)
    lengths = torch.tensor([5, 9, 5])
    attentions = torch.zeros(3, 2, 2, 9, 9)
    for row, n in enumerate(lengths.tolist()):
        attentions[row, :, :, :n, :n] = torch.softmax(torch.tensor(rng.normal(size=(2, 2, n, n))), dim=-1).float()
    attentions[0, :, :, 5:, :] = 7.0  # padding must be ignored
    second_segments = torch.tensor([3, 5, NO_SECOND_SEGMENT])
    batched = normalise_padded(attentions, lengths, second_segments)
    images = batched.images.view(3, 4, CHANNELS, INPUT_SIZE, INPUT_SIZE)
    measures = batched.measures.view(3, 4, -1)
    one_by_one = normalise_list(
        [attentions[1, 1, 0, :9, :9].numpy(), attentions[0, 0, 1, :5, :5].numpy(), attentions[2, 1, 1, :5, :5].numpy()],
        [5, 3, NO_SECOND_SEGMENT],
    )
    for (row, map_index), single in zip([(1, 2), (0, 1), (2, 3)], range(3)):
        assert torch.allclose(images[row, map_index], one_by_one.images[single])
        assert torch.allclose(measures[row, map_index], one_by_one.measures[single])


def test_row_entropies_handed_in_give_the_same_measurements():
    """The patterns analysis hands in the row entropies the surface statistics computed (on the
    unmasked maps, padding rows and all): the measurements are those computed from the maps."""
    rng = np.random.default_rng(1)
    lengths = torch.tensor([4, 7])
    attentions = torch.softmax(torch.tensor(rng.normal(size=(2, 3, 2, 7, 7)), dtype=torch.float32), dim=-1)
    attentions[0, :, :, 4:, :] = 0.3  # a padding row's values must not count
    attentions[0, :, :, :4, 4:] = 0.0
    second_segments = torch.tensor([2, NO_SECOND_SEGMENT])
    shared = torch.special.entr(attentions).sum(dim=-1)
    measured = normalise_padded(attentions, lengths, second_segments, images=False).measures
    handed_in = normalise_padded(attentions, lengths, second_segments, images=False, row_entropy=shared).measures
    assert torch.equal(measured, handed_in)


def test_synthetic_maps_are_row_stochastic_for_every_class():
    maps, second_segments, labels = synthetic_set(6, seed=1, min_length=3, max_length=60)
    assert sorted(set(labels)) == list(range(len(CLASSES)))
    for attention, second_segment, label in zip(maps, second_segments, labels):
        assert attention.shape[0] == attention.shape[1] and np.allclose(attention.sum(axis=1), 1, atol=1e-4)
        assert (attention >= 0).all()
        assert second_segment == NO_SECOND_SEGMENT or 1 < second_segment < len(attention)
        assert CLASSES[label] != "block" or second_segment != NO_SECOND_SEGMENT
    with pytest.raises(ValueError, match="unknown class"):
        synthetic_map("stripes", 10, np.random.default_rng(0))


def test_annotation_file_parses_and_every_label_is_a_class():
    rows = read_labels(LABELS_FILE)
    maps = read_maps(MAPS_FILE)
    assert len(rows) >= 400 and {row.label for row in rows} == set(CLASSES)
    assert len({row.id for row in rows}) == len(rows)
    for row in rows:
        assert maps[row.id].shape == (row.length, row.length)
        assert np.allclose(maps[row.id].sum(axis=1), 1, atol=0.02)  # float16 storage
    assert {row.checkpoint for row in rows} == {"pretrained", "finetuned"}
    assert len({row.task for row in rows}) >= 3


def test_label_lines_accept_names_and_short_codes_and_reject_others():
    labels = parse_label_lines(["a1 v", "a2 vertical+diagonal  # comment", "", "a3 ?", "a4 b"], "x.txt")
    assert labels == {"a1": "vertical", "a2": "vertical+diagonal", "a4": "block"}
    with pytest.raises(ValueError, match="x.txt:1"):
        parse_label_lines(["a1 stripes"], "x.txt")


@pytest.mark.slow
def test_predict_cli_prints_one_label_per_map(tmp_path):
    path = tmp_path / "maps.npz"
    np.savez(path, first=clear_map("diagonal", 30), second=clear_map("vertical", 50))
    output = subprocess.run(
        [sys.executable, "-m", "classifier", "predict", str(path)], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert output == ["first\tdiagonal", "second\tvertical"]


def test_predict_cli_rejects_a_non_square_map_in_one_line(tmp_path, capsys):
    """In this process (the command's own process is the test above): the exit's message is the one
    line the interpreter prints, and nothing else was printed."""
    path = tmp_path / "bad.npz"
    np.savez(path, wide=np.ones((3, 4)))
    with pytest.raises(SystemExit) as stop:
        classifier_main(["predict", str(path)])
    assert stop.value.code == (
        f"error: {path}: array 'wide' has shape (3, 4); each array must be one square attention map (n x n, n >= 2)"
    )
    assert capsys.readouterr() == ("", "")


def test_pool_sheets_and_recorded_labels_round_trip(tmp_path):
    from classifier.annotate import record, write_pool
    from classifier.data import MapSource

    maps = {f"t{i}": clear_map(label, 10 + i) for i, label in enumerate(CLASSES)}
    sources = [
        MapSource(f"t{i}", "tiny", "pretrained", "-", "rte", "dev", i, f"g{i}", 0, i, 10 + i, 5)
        for i in range(len(CLASSES))
    ]
    sheets = write_pool(tmp_path / "pool", sources, maps, {"t0": [5, 9]})
    assert [sheet.name for sheet in sheets] == ["sheet_000.png"] and sheets[0].stat().st_size > 10_000
    labels_file, maps_file = tmp_path / "labels.tsv", tmp_path / "maps.npz"
    assert record(tmp_path / "pool", {"t0": "vertical", "t3": "block"}, labels_file, maps_file) == 2
    record(tmp_path / "pool", {"t3": "diagonal"}, labels_file, maps_file)  # relabelling replaces
    rows = read_labels(labels_file)
    assert [(row.id, row.label, row.length, row.second_segment) for row in rows] == [
        ("t0", "vertical", 10, 5),
        ("t3", "diagonal", 13, 5),
    ]
    assert np.allclose(read_maps(maps_file)["t3"], maps["t3"], atol=1e-3)
    with pytest.raises(ValueError, match="ids not in"):
        record(tmp_path / "pool", {"nope": "block"}, labels_file, maps_file)


@pytest.mark.slow  # two trainings of each kind
@pytest.mark.parametrize("kind", KINDS)
def test_training_is_seeded_and_logged_with_its_held_out_scores(tmp_path, kind):
    """A short run of classifier/train.py: same seed, same weights; the MLflow run holds the scores."""
    small = dict(kind=kind, synthetic_per_class=40, real_repeats=1, epochs=2, batch_size=64, tree_rounds=20)
    first = run(TrainConfig(**small, out=tmp_path / "a.pt"), f"sqlite:///{tmp_path}/m.db")
    _, again, _ = train(TrainConfig(**small, out=tmp_path / "b.pt"))
    assert again == first
    a, b = (torch.load(tmp_path / name, weights_only=False) for name in ("a.pt", "b.pt"))
    assert all(torch.equal(a["state_dict"][k], b["state_dict"][k]) for k in a["state_dict"])
    assert sum(first.support) == sum(first.counts["test"].values()) > 0
    other, _, _ = train(TrainConfig(**small, seed=1, out=tmp_path / "c.pt"))
    assert not all(torch.equal(a["state_dict"][k], v) for k, v in other.network.state_dict().items())
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path}/m.db")
    runs = client.search_runs([client.get_experiment_by_name("pattern-classifier").experiment_id])
    assert len(runs) == 1 and runs[0].data.metrics["macro_f1"] == pytest.approx(first.macro_f1)
    assert load_classifier(tmp_path / "a.pt").kind == kind


@pytest.mark.slow
def test_training_from_the_labels_reproduces_the_shipped_weights_scores(tmp_path):
    """`python -m classifier train`'s recipe, from the stored labels and seed 0, gives the shipped
    weights' split and held-out scores (to 0.02: CPU kernels may differ in the last bits)."""
    shipped = load_classifier().info
    retrained, evaluation, _ = train(TrainConfig(out=tmp_path / "weights.pt"))
    assert retrained.info["test_ids"] == shipped["test_ids"]
    assert retrained.info["config"]["labels_file"] == shipped["config"]["labels_file"]  # same labels, by hash
    assert abs(evaluation.macro_f1 - shipped["evaluation"]["macro_f1"]) < 0.02
    assert abs(evaluation.accuracy - shipped["evaluation"]["accuracy"]) < 0.02
