"""Vig's head behaviours: hand-built maps whose shares are known exactly, the words and pieces
found through the real tokenizers of every architecture, and the view from a stored entry of a
pair task and of a single-sentence task."""

from __future__ import annotations

import copy
import logging
import re

import pytest
import torch

from harness.analyses.vig import (
    BEHAVIOURS,
    VigBehaviours,
    behaviour_labels,
    behaviour_targets,
    token_roles,
)
from harness.inputs.batches import AttentionBatch, real_tokens
from harness.inputs.encoding import batched, encode_examples
from harness.model.loading import load_tokenizer
from harness.results.checkpoints import FINETUNED, PRETRAINED
from harness.views.metrics import changes, values
from harness.views.saving import figure_formats, plt
from harness.views.seeds import spread
from harness.views.vig import NOT_DEFINED, STATISTICS, VigView
from tasks.examples import Example
from tests.fixtures import analysis_context, finish, run_analysis, stream, tiny_bert

# [CLS] the cat ##s sat on the mat [SEP] the cat sat . [SEP], then two padding positions
PAIR = Example("1", "The cats sat on the mat", "the cat sat .", 0)
N, PADDED = 14, 16
CLS, SEP_A, SEP_B = 0, 8, 13
# Each head: row -> the columns it spreads its attention over uniformly (rows left out attend to themselves).
IDENTICAL_OTHER = {1: [9], 4: [11], 6: [9], 9: [1, 6], 11: [4]}  # the -> the, sat -> sat across the sentences
HEADS = {
    "next": {row: [min(row + 1, N - 1)] for row in range(N)},
    "uniform": {row: list(range(N)) for row in range(N)},
    "cls": {row: [CLS] for row in range(N)},
    "identical": IDENTICAL_OTHER,
    # the -> the within the first sentence, cat <-> ##s, every other row the previous token
    "mixed": {row: [max(row - 1, 0)] for row in range(N)} | {1: [6], 6: [1], 2: [3], 3: [2]},
}
CHANCE = {
    "same_segment_identical": 1 / N,
    "other_segment_identical": (6 / N) / 5,
    "same_word_pieces": 1 / N,
    "next": 1 / N,
    "previous": 1 / N,
    "delimiters": 3 / N,
}
EXPECTED = {  # per statistic, the share of each head of HEADS
    # rows with such a target: the 2 "the" of the first sentence; the, sat, the | the, sat; cat, ##s
    "same_segment_identical": [0, CHANCE["same_segment_identical"], 0, 0, 1],
    "other_segment_identical": [0, CHANCE["other_segment_identical"], 0, 1, 0],
    "same_word_pieces": [0.5, CHANCE["same_word_pieces"], 0, 0, 1],  # "cat" attends to "##s", "##s" to "sat"
    "next": [1, 1 / N, 0, 0, 1 / 13],  # mixed: only "cat" -> "##s" is a next token
    "previous": [0, 1 / N, 1 / 13, 0, 10 / 13],  # cls: only row 1; mixed: rows 4, 5, 7-13 and "##s" -> "cat"
    "delimiters": [3 / N, 3 / N, 1, 3 / N, 2 / N],  # next: rows 7, 12, 13; identical: the delimiters themselves;
}  # mixed: [CLS] itself and the [SEP] before "the"


def hand_built_maps() -> torch.Tensor:
    """(1, 1, heads, PADDED, PADDED): the heads of `HEADS`, garbage in padding rows and columns."""
    maps = torch.zeros(1, 1, len(HEADS), PADDED, PADDED)
    for head, rows in enumerate(HEADS.values()):
        for row in range(N):
            columns = rows.get(row, [row])
            maps[0, 0, head, row, columns] = 1.0 / len(columns)
    maps[..., N:, :] = 7.0
    maps[..., :, N:] = 7.0
    return maps


def measure(tokenizer, batches: list[tuple[list[Example], bool, torch.Tensor | None]]) -> dict:
    """The analysis's per-checkpoint results over ``batches`` of (examples, pair, maps or None for uniform maps)."""
    analysis = VigBehaviours(analysis_context([PRETRAINED], layers=1, heads=len(HEADS), tokenizer=tokenizer))
    for examples, pair, maps in batches:
        encoded = encode_examples(tokenizer, examples, 32, pair, pad_to=PADDED)
        if maps is None:  # every row uniform over the real tokens
            rows = real_tokens(encoded.lengths, PADDED) / encoded.lengths[:, None]
            maps = rows[:, None, None, None, :].expand(-1, 1, len(HEADS), PADDED, -1)
        analysis.update(AttentionBatch(encoded, {PRETRAINED: maps}))
    return analysis.result()[PRETRAINED]


def test_the_hand_built_example_is_tokenized_as_the_maps_assume(tiny_tokenizer):
    encoded = encode_examples(tiny_tokenizer, [PAIR], 32, True, pad_to=PADDED)
    assert tiny_tokenizer.convert_ids_to_tokens(encoded.input_ids[0, :N]) == [
        "[CLS]",
        "the",
        "cat",
        "##s",
        "sat",
        "on",
        "the",
        "mat",
        "[SEP]",
        "the",
        "cat",
        "sat",
        ".",
        "[SEP]",
    ]


def test_hand_built_heads_give_exact_shares_and_chance_levels(tiny_tokenizer):
    result = measure(tiny_tokenizer, [([PAIR], True, hand_built_maps())])
    for statistic, expected in EXPECTED.items():
        assert result["per_head"][statistic][0] == pytest.approx(expected, abs=1e-6), statistic
        assert result["chance"][statistic] == pytest.approx(CHANCE[statistic]), statistic
        assert result["examples"][statistic] == 1
    assert result["num_items"] == 1


def test_targets_of_the_hand_built_example(tiny_tokenizer):
    encoded = encode_examples(tiny_tokenizer, [PAIR], 32, True, pad_to=PADDED)
    targets = behaviour_targets(token_roles(tiny_tokenizer, encoded, 32))[0]
    found = {name: {tuple(cell) for cell in targets[index].nonzero().tolist()} for index, name in enumerate(STATISTICS)}
    assert found["same_segment_identical"] == {(1, 6), (6, 1)}  # "The" is "the"
    assert found["other_segment_identical"] == {
        (row, column) for row, columns in IDENTICAL_OTHER.items() for column in columns
    }  # "cats" is not "cat"
    assert found["same_word_pieces"] == {(2, 3), (3, 2)}
    assert found["next"] == {(row, row + 1) for row in range(N - 1)}
    assert found["previous"] == {(row, row - 1) for row in range(1, N)}
    assert found["delimiters"] == {(row, column) for row in range(N) for column in (CLS, SEP_A, SEP_B)}


def test_examples_are_averaged_one_by_one_and_single_sentences_have_no_other_sentence(tiny_tokenizer):
    """Uniform heads over a pair (n = 14) and a single sentence (n = 6): every share is its chance
    level, each example weighs the same whatever its length, and the single sentence has no
    rows for identical words in another sentence."""
    single = Example("2", "he is not happy", None, 1)
    result = measure(tiny_tokenizer, [([PAIR], True, None), ([single], False, None)])
    assert result["examples"] == {
        "same_segment_identical": 1,
        "other_segment_identical": 1,
        "same_word_pieces": 1,
        "next": 2,
        "previous": 2,
        "delimiters": 2,
    }
    assert result["chance"]["next"] == pytest.approx((1 / N + 1 / 6) / 2)  # not 18 rows pooled
    assert result["chance"]["delimiters"] == pytest.approx((3 / N + 2 / 6) / 2)
    assert result["chance"]["other_segment_identical"] == pytest.approx(CHANCE["other_segment_identical"])
    for statistic in STATISTICS:
        assert result["per_head"][statistic][0] == pytest.approx([result["chance"][statistic]] * len(HEADS))


def test_labels_need_the_share_above_the_floor_and_above_its_times_chance():
    per_head = {name: [[0.0, 0.0, 0.0]] for name in STATISTICS}
    per_head["next"] = [[0.5, 0.51, 0.0]]  # Clark: above 0.5
    per_head["delimiters"] = [[0.61, 0.6, 0.0]]
    per_head["other_segment_identical"] = [[0.31, 0.45, 0.3]]
    chance = {name: 0.01 for name in STATISTICS} | {"other_segment_identical": 0.08}  # 5 x chance = 0.4
    labels = behaviour_labels(per_head, chance)
    assert labels == [[["delimiters"], ["other_segment_identical", "next"], []]]
    assert list(BEHAVIOURS) == list(STATISTICS)  # a label per statistic, in its order


def expected_targets(tokenizer, example: Example) -> torch.Tensor:
    """(3, n, n): the word-matching targets in `STATISTICS` order, from the words of the texts and
    the tokenizer's own `char_to_token` (not its offsets, which the analysis reads)."""
    encoding = tokenizer(example.text_a, example.text_b)
    words = [
        (
            segment,
            match.group().lower(),
            sorted(
                {encoding.char_to_token(0, char, sequence_index=segment) for char in range(match.start(), match.end())}
            ),
        )
        for segment, text in enumerate((example.text_a, example.text_b))
        for match in re.finditer(r"\w+", text)
    ]
    n = len(encoding["input_ids"])
    targets = torch.zeros(3, n, n, dtype=torch.bool)
    for first, (segment_a, word_a, tokens_a) in enumerate(words):
        for second, (segment_b, word_b, tokens_b) in enumerate(words):
            kind = 2 if first == second else int(segment_a != segment_b) if word_a == word_b else None
            for row in tokens_a if kind is not None else ():
                targets[kind, row, [column for column in tokens_b if column != row]] = True
    return targets


# "catdogs" is a word in several pieces for byte-level BPE and SentencePiece (cat + dogs pieces)
# and an [UNK] for WordPiece; "cats" is cat + ##s for WordPiece.
REAL = Example("1", "the catdogs sat on the mat.", "the cats sat, the catdogs ran.", 0)


def test_words_pieces_and_identical_words_through_every_tokenizer(architecture_dir):
    tokenizer = load_tokenizer(str(architecture_dir))
    encoded = encode_examples(tokenizer, [REAL], 64, True)
    roles = token_roles(tokenizer, encoded, 64)
    targets = behaviour_targets(roles)[0]
    assert torch.equal(targets[:3], expected_targets(tokenizer, REAL))
    assert targets[2].any() and targets[1].any()  # the example has pieces and words in both sentences
    template = torch.isin(encoded.input_ids[0], torch.tensor([tokenizer.cls_token_id, tokenizer.sep_token_id]))
    assert torch.equal(roles.delimiter[0], template)
    uniform = torch.full((1, 1, len(HEADS), len(template), len(template)), 1.0 / len(template))
    analysis = VigBehaviours(analysis_context([PRETRAINED], layers=1, heads=len(HEADS), tokenizer=tokenizer))
    analysis.update(AttentionBatch(encoded, {PRETRAINED: uniform}))
    result = analysis.result()[PRETRAINED]
    for statistic in STATISTICS:  # a uniform head is at chance
        assert result["per_head"][statistic][0] == pytest.approx([result["chance"][statistic]] * len(HEADS))


@pytest.mark.parametrize("architecture", ["roberta"])
def test_a_case_sensitive_tokenizer_matches_words_lower_cased(architecture_dir):
    tokenizer = load_tokenizer(str(architecture_dir))
    example = Example("1", "The cat sat.", "the dog sat.", 0)
    encoded = encode_examples(tokenizer, [example], 64, True)
    tokens = tokenizer.convert_ids_to_tokens(encoded.input_ids[0])
    other = list(STATISTICS).index("other_segment_identical")
    targets = behaviour_targets(token_roles(tokenizer, encoded, 64))[0, other]
    matched = {(tokens[row], tokens[column]) for row, column in targets.nonzero().tolist()}
    assert tokens[1:3] == ["T", "he"] and matched >= {("T", "the"), ("he", "the"), ("the", "T"), ("the", "he")}


EXAMPLES = [
    Example("1", "the cat sat on the mat .", "the dog ran , the cat sat .", 0),
    Example("2", "he is not happy", "it sat", 1),
    Example("3", "a dog sat", "she sat and the dogs ran", 1),
]


def run_vig(models, tokenizer, batch_size, pairs=((PRETRAINED, FINETUNED),)):
    return run_analysis(VigBehaviours, models, tokenizer, EXAMPLES, batch_size, pairs)


def test_tiny_bert_statistics_do_not_depend_on_padding(tiny_pair, tiny_tokenizer):
    alone = run_vig(tiny_pair, tiny_tokenizer, batch_size=1)["per_checkpoint"]
    padded = run_vig(tiny_pair, tiny_tokenizer, batch_size=3)["per_checkpoint"]
    for checkpoint in tiny_pair:
        assert alone[checkpoint]["chance"] == pytest.approx(padded[checkpoint]["chance"])
        for statistic in STATISTICS:
            assert torch.allclose(
                torch.tensor(alone[checkpoint]["per_head"][statistic]),
                torch.tensor(padded[checkpoint]["per_head"][statistic]),
                atol=1e-5,
            ), statistic


@pytest.fixture(scope="module")
def entry(tiny_tokenizer):
    result = run_vig({PRETRAINED: tiny_bert(0), FINETUNED: tiny_bert(1)}, tiny_tokenizer, batch_size=2)
    return {"pairs": [[PRETRAINED, FINETUNED]], "result": result, "reference": VigBehaviours.reference}


def test_result_pairs_labels_and_strongest_heads(entry):
    result = entry["result"]
    pretrained, finetuned = (result["per_checkpoint"][c] for c in (PRETRAINED, FINETUNED))
    assert pretrained["num_items"] == 3
    assert pretrained["examples"]["other_segment_identical"] == 2  # "he is not happy" shares no word with "it sat"
    grid = torch.tensor(pretrained["per_head"]["delimiters"])
    assert grid.shape == (2, 4) and torch.allclose(torch.tensor(pretrained["per_layer"]["delimiters"]), grid.mean(1))
    strongest = pretrained["strongest"]["delimiters"]
    assert strongest["value"] == pytest.approx(float(grid.max()))
    assert grid[strongest["layer"] - 1, strongest["head"] - 1] == grid.max()
    comparison = result["per_pair"][f"{PRETRAINED}->{FINETUNED}"]
    assert torch.allclose(
        torch.tensor(comparison["per_head"]["next"]),
        torch.tensor(finetuned["per_head"]["next"]) - torch.tensor(pretrained["per_head"]["next"]),
    )
    assert [(c["layer"], c["head"]) for c in comparison["label_changes"]] == [
        (layer + 1, head + 1)
        for layer in range(2)
        for head in range(4)
        if pretrained["labels"][layer][head] != finetuned["labels"][layer][head]
    ]
    assert sum(pretrained["label_counts"].values()) == sum(map(len, sum(pretrained["labels"], [])))


def test_view_metrics_headline_printed_and_overview(entry):
    metrics = VigView.metrics(entry)
    assert len(metrics) == 2 * 6 * 3 + 6
    named = values(metrics + changes(metrics))
    pretrained = entry["result"]["per_checkpoint"][PRETRAINED]
    assert named["vig_pretrained_next_heads"] == pretrained["label_counts"]["next"]
    assert named["vig_chance_delimiters"] == pretrained["chance"]["delimiters"]
    assert set(VigView.signed_changes) <= named.keys()
    headline = [metric.name for metric in VigView.headline(entry, metrics + changes(metrics))]
    assert headline == [
        f"vig_{checkpoint}_other_segment_identical_{what}"
        for what in ("max", "heads")
        for checkpoint in (PRETRAINED, FINETUNED, "change")
    ]
    printed = VigView.printed(entry)
    assert len(printed) == 3 and printed[-1].startswith(f"vig ({PRETRAINED}->{FINETUNED}): ")
    counts, strongest = VigView.overview_rows({"vig": entry}, {"model": "tiny", "task": "test"})
    assert counts[1] == " / ".join(str(pretrained["label_counts"][label]) for label in STATISTICS)
    best = pretrained["strongest"]["other_segment_identical"]
    assert strongest[1].startswith(f"{best['layer']}-{best['head']}: {best['value']:.3f} (chance ")


def test_a_behaviour_no_example_has_rows_for_has_no_shares_only_its_head_count(entry):
    unseen = copy.deepcopy(entry)  # pairs whose sentences share no word: no row has a target in the other sentence
    for stats in unseen["result"]["per_checkpoint"].values():
        stats["examples"]["other_segment_identical"] = 0
    names = values(VigView.metrics(unseen))
    assert not [name for name in names if "other_segment_identical" in name and not name.endswith("_heads")]
    assert f"vig_{FINETUNED}_other_segment_identical_heads" in names and f"vig_{FINETUNED}_next_max" in names


SINGLE = [
    Example("1", "the cat sat on the mat .", None, 0),
    Example("2", "he is not happy", None, 1),
    Example("3", "a dog sat and the dogs ran", None, 1),
]
CROSS = "other_segment_identical"


@pytest.fixture(scope="module")
def single_entry(tiny_tokenizer):
    """The entry a single-sentence task (SST-2, CoLA) stores: one text per example."""
    models = {PRETRAINED: tiny_bert(0), FINETUNED: tiny_bert(1)}
    analysis = VigBehaviours(analysis_context(models, tokenizer=tiny_tokenizer))
    for batch in stream(models, batched(tiny_tokenizer, SINGLE, 2, 32, pair=False)):
        analysis.update(batch)
    return {"pairs": [[PRETRAINED, FINETUNED]], "result": finish(analysis), "reference": VigBehaviours.reference}


def drawn_panels(entry, tmp_path, monkeypatch) -> tuple[list[str], dict[str, list[str]]]:
    """The files `VigView.draw` writes for ``entry``, and the panel titles of each figure."""
    closed = []
    monkeypatch.setattr(plt, "close", closed.append)  # keep the figures to read their panels
    files = VigView.draw(entry, {"model": "tiny", "task": "sst2"}, tmp_path)
    monkeypatch.undo()
    titles = {
        path.name: [" ".join(axes.get_title().split()) for axes in figure.axes if axes.get_title()]
        for path, figure in zip(files, closed)
    }
    for figure in closed:
        plt.close(figure)
    return [path.name for path in files], titles


@pytest.mark.slow
def test_a_single_sentence_task_says_nothing_of_the_other_sentence(single_entry, tmp_path, monkeypatch, caplog):
    pretrained = single_entry["result"]["per_checkpoint"][PRETRAINED]
    assert (pretrained["pair_items"], pretrained["num_items"], pretrained["examples"][CROSS]) == (0, 3, 0)
    metrics = values(VigView.metrics(single_entry))
    assert not [name for name in metrics if CROSS in name] and f"vig_{FINETUNED}_next_heads" in metrics
    printed = VigView.printed(single_entry)
    assert len(printed) == 3 and not [line for line in printed if "other" in line or "such rows" in line]
    assert printed[0] == f"vig ({PRETRAINED}): heads " + ", ".join(
        f"{label} {pretrained['label_counts'][label]}" for label in STATISTICS if label != CROSS
    )
    counts, strongest = VigView.overview_rows({"vig": single_entry}, {"model": "tiny", "task": "sst2"})
    assert counts[1].split(" / ")[1] == "not defined" and strongest[1:3] == (NOT_DEFINED, NOT_DEFINED)
    assert NOT_DEFINED == "not defined: one sentence per example"
    with caplog.at_level(logging.WARNING, logger="harness.views.saving"):
        files, titles = drawn_panels(single_entry, tmp_path, monkeypatch)
    assert caplog.records == []
    assert files == ["vig_by_layer.png", *(f"vig_heads_{name}.png" for name in STATISTICS if name != CROSS)]
    assert titles["vig_by_layer.png"] == [title for name, title in STATISTICS.items() if name != CROSS]
    tables = VigView.tables(single_entry, {"model": "tiny", "task": "sst2"})
    assert f"vig_heads_{CROSS}" not in tables and len(tables) == len(STATISTICS)
    assert "other sentence" not in "".join(tables.values())


@pytest.mark.slow
def test_a_pair_task_shows_the_other_sentence_once_per_checkpoint(entry, tmp_path, monkeypatch):
    assert entry["result"]["per_checkpoint"][PRETRAINED]["pair_items"] == 3
    for line, checkpoint in zip(VigView.printed(entry), (PRETRAINED, FINETUNED)):
        best = entry["result"]["per_checkpoint"][checkpoint]["strongest"][CROSS]
        assert line.count(STATISTICS[CROSS]) == 1
        assert line.endswith(
            f"; strongest on {STATISTICS[CROSS]} {best['layer']}-{best['head']}: {best['value']:.3f} "
            f"(chance {entry['result']['per_checkpoint'][checkpoint]['chance'][CROSS]:.3f})"
        )
    files, titles = drawn_panels(entry, tmp_path, monkeypatch)
    assert f"vig_heads_{CROSS}.png" in files and titles["vig_by_layer.png"] == list(STATISTICS.values())
    no_shared_word = copy.deepcopy(entry)  # pairs whose sentences share no word: the behaviour is defined, unseen
    for stats in no_shared_word["result"]["per_checkpoint"].values():
        stats["examples"][CROSS] = 0
    assert VigView.printed(no_shared_word)[0].endswith(f"; strongest on {STATISTICS[CROSS]} no example has such rows")
    stored_before = copy.deepcopy(no_shared_word)  # stored before the pairs were counted: read as single sentences
    for stats in stored_before["result"]["per_checkpoint"].values():
        del stats["pair_items"]
    assert STATISTICS[CROSS] not in VigView.printed(stored_before)[0]


@pytest.mark.slow
def test_view_figures_and_tables_from_a_stored_entry(entry, tmp_path):
    run = {"model": "tiny", "task": "test"}
    with figure_formats(("png", "pdf")):  # a PDF beside each PNG where asked for
        files = VigView.draw(entry, run, tmp_path)
    assert len(files) == 1 + len(STATISTICS) and all(path.stat().st_size > 0 for path in files)
    assert all(path.with_suffix(".pdf").is_file() for path in files)
    tables = VigView.tables(entry, run)
    assert set(tables) == {"vig_label_changes", *(f"vig_heads_{statistic}" for statistic in STATISTICS)}
    assert all(text.startswith("# ") for text in tables.values())
    table = tables["vig_heads_next"]
    assert "| head | pre-trained | fine-tuned | fine-tuned − pre-trained | chance | labelled in |" in table
    pretrained, finetuned = (entry["result"]["per_checkpoint"][c]["per_head"]["next"] for c in (PRETRAINED, FINETUNED))
    best = max(
        ((layer, head) for layer in range(2) for head in range(4)),
        key=lambda cell: max(pretrained[cell[0]][cell[1]], finetuned[cell[0]][cell[1]]),
    )
    layer, head = best
    before, after = pretrained[layer][head], finetuned[layer][head]
    assert table.splitlines()[4].startswith(
        f"| {layer + 1}-{head + 1} | {before:.3f} | {after:.3f} | {after - before:+.3f} |"
    )  # the strongest head first


def test_study_keeps_identical_words_per_layer_and_draws_them(entry, tmp_path):
    metrics = values(VigView.metrics(entry) + changes(VigView.metrics(entry)))
    task = {
        "seeds": [1, 2],
        "metrics": {name: spread([value, value]) for name, value in metrics.items()},
        **VigView.across_seeds([entry, entry]),
    }
    kept = task["vig_identical"][FINETUNED]["other_segment_identical"]
    assert kept["mean"] == pytest.approx(
        entry["result"]["per_checkpoint"][FINETUNED]["per_layer"]["other_segment_identical"]
    ) and kept["std"] == [0.0, 0.0]
    study = {"model": "tiny", "tasks": {"rte": task, "mrpc": task}}
    (figure,) = VigView.draw_study(study, tmp_path)
    assert figure.stat().st_size > 0
    table = VigView.study_tables(study)["vig_by_task"]
    assert "| vig_finetuned_next_heads |" in table and "| metric | rte | mrpc |" in table


def test_a_study_draws_no_other_sentence_line_for_a_single_sentence_task(
    entry, single_entry, tmp_path, monkeypatch, caplog
):
    single = VigView.across_seeds([single_entry, single_entry])["vig_identical"]
    assert set(single[FINETUNED]) == {"same_segment_identical"}
    tasks = {
        task: {"seeds": [1, 2], "metrics": {}, **VigView.across_seeds([stored, stored])}
        for task, stored in (("rte", entry), ("sst2", single_entry))
    }
    closed = []
    monkeypatch.setattr(plt, "close", closed.append)
    with caplog.at_level(logging.WARNING, logger="harness.views.saving"):
        VigView.draw_study({"model": "tiny", "tasks": tasks}, tmp_path)
    monkeypatch.undo()
    (figure,) = closed
    same, other = (axes for axes in figure.axes if axes.get_title())
    assert " ".join(other.get_title().split()) == STATISTICS[CROSS] and caplog.records == []
    drawn = {line.get_label() for line in other.get_lines() if not torch.tensor(line.get_ydata()).isnan().all()}
    assert drawn == {"rte, pre-trained", "rte, fine-tuned"}
    assert len([line for line in same.get_lines() if line.get_label().startswith("sst2")]) == 2
    plt.close(figure)


def compared_over_copies(tokenizer, built: list[tuple[bool, bool]]) -> dict:
    """The summary-shaped result of one copy of PAIR per entry of ``built``: each checkpoint's
    maps are the hand-built heads of `HEADS` where its flag is set, uniform rows otherwise."""
    encoded = encode_examples(tokenizer, [PAIR] * len(built), 32, True, pad_to=PADDED)
    uniform = (real_tokens(encoded.lengths, PADDED) / encoded.lengths[:, None])[:, None, None, None, :]
    uniform = uniform.expand(-1, 1, len(HEADS), PADDED, -1)
    maps = {
        checkpoint: torch.stack(
            [hand_built_maps()[0] if flags[index] else uniform[row] for row, flags in enumerate(built)]
        )
        for index, checkpoint in enumerate((PRETRAINED, FINETUNED))
    }
    analysis = VigBehaviours(analysis_context([PRETRAINED, FINETUNED], layers=1, heads=len(HEADS), tokenizer=tokenizer))
    analysis.update(AttentionBatch(encoded, maps))
    return finish(analysis)


def test_a_head_linking_the_sentences_lost_in_most_examples_is_a_clear_fall(tiny_tokenizer):
    result = compared_over_copies(tiny_tokenizer, [(True, False)] * 8 + [(True, True)] * 2)
    units = result["per_checkpoint"][PRETRAINED]["units"]
    assert units["unit"] == "dev examples" and units["numerators"]["shape"] == [10, len(HEADS)]
    evidence = VigView.change_evidence({"result": result})
    assert set(evidence) == set(VigView.signed_changes)
    strongest, mean = (evidence[f"vig_change_{CROSS}_{what}"] for what in ("max", "mean"))
    chance = CHANCE[CROSS]
    # before, the "identical" head gives 1; after, 1 in two examples and chance in eight: the best of many chosen
    # where it is scored (the metric) reads that; cross-fitted, a half without the two examples chooses a head
    # that is at chance on both halves, so the strongest head's level after is lower and its fall larger
    metrics = values(VigView.metrics({"result": result}) + changes(VigView.metrics({"result": result})))
    assert metrics[f"vig_change_{CROSS}_max"] == pytest.approx(0.2 + 0.8 * chance - 1, abs=1e-6)
    assert strongest["levels"][0] == pytest.approx(1.0) and strongest["value"] <= metrics[f"vig_change_{CROSS}_max"]
    assert mean["value"] == pytest.approx(metrics[f"vig_change_{CROSS}_mean"], abs=1e-6)
    for change in (strongest, mean):
        assert change["interval"][1] < 0 and change["direction"] == "falls" and change["n"] == 10


def test_the_head_linking_the_sentences_in_other_examples_after_is_no_clear_change(tiny_tokenizer):
    result = compared_over_copies(tiny_tokenizer, [(True, False)] * 5 + [(False, True)] * 5)
    for change in VigView.change_evidence({"result": result}).values():
        low, high = change["interval"]
        assert change["value"] == pytest.approx(0.0, abs=1e-6) and low < 0 < high
        assert change["direction"] == "no clear change"
    entry = {"result": result, "pairs": [[PRETRAINED, FINETUNED]]}
    table = VigView.tables(entry, {"model": "tiny", "task": "rte"})[f"vig_heads_{CROSS}"]
    assert table.count("no clear change.") == 2 and "over 1000 resamples of the 10 dev examples" in table


def test_a_single_sentence_task_has_no_evidence_of_a_change_in_the_other_sentence(single_entry):
    assert VigView.change_evidence(single_entry) == {}
