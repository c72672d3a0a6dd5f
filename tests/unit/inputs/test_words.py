import pytest
import torch

from harness.inputs.words import encode_words, word_attention, word_attention_with_special, word_maps
from tasks.errors import InputError
from tests.fixtures import stream


def test_split_word_gets_all_its_subtokens(tiny_tokenizer):
    batch, cut = encode_words(tiny_tokenizer, [["the", "cats", "sat"]], 32, ["s1"])
    aligned = batch.items[0]
    assert tiny_tokenizer.convert_ids_to_tokens(batch.input_ids[0]) == ["[CLS]", "the", "cat", "##s", "sat", "[SEP]"]
    assert aligned.word_ids == [None, 0, 1, 1, 2, None]
    assert (aligned.item, aligned.num_words, aligned.words_cut, cut) == ("s1", 3, 0, [0])


def test_truncation_cuts_whole_words_and_counts_them(tiny_tokenizer):
    # budget 5 tokens = [CLS] + 3 word pieces + [SEP]: "the" fits, "cats" (2 pieces) fits, "sat" does not
    words = [["the", "cats", "sat", "on"], ["a", "dog"]]
    batch, cut = encode_words(tiny_tokenizer, words, 5, [0, 1])
    assert cut == [2, 0]
    assert [item.num_words for item in batch.items] == [2, 2]
    assert batch.items[0].word_ids == [None, 0, 1, 1, None]
    assert batch.items[1].word_ids == [None, 0, 1, None]  # padding not included
    assert batch.attention_mask.tolist() == [[1, 1, 1, 1, 1], [1, 1, 1, 1, 0]]


def test_word_the_tokenizer_drops_keeps_a_position(tiny_tokenizer):
    batch, _ = encode_words(tiny_tokenizer, [["the", "\u200b", "cat"]], 32, [None])
    assert batch.items[0].word_ids == [None, 0, 1, 2, None]
    assert tiny_tokenizer.convert_ids_to_tokens(batch.input_ids[0])[2] == "[UNK]"


def test_too_small_max_tokens_is_a_clear_error(tiny_tokenizer):
    with pytest.raises(InputError, match="max-tokens"):
        encode_words(tiny_tokenizer, [["the"]], 2, [None])


def test_to_sums_subtokens_and_from_averages_them():
    # tokens: [CLS] w0 w1a w1b [SEP]
    word_ids = [None, 0, 1, 1, None]
    maps = torch.tensor(
        [
            [0.2, 0.2, 0.2, 0.2, 0.2],
            [0.1, 0.1, 0.3, 0.4, 0.1],  # w0
            [0.0, 0.5, 0.0, 0.5, 0.0],  # w1a
            [0.0, 0.1, 0.2, 0.3, 0.4],  # w1b
            [1.0, 0.0, 0.0, 0.0, 0.0],
        ]
    )[None, None]
    mean = word_attention(maps, word_ids, 2, "mean")[0, 0]
    first = word_attention(maps, word_ids, 2, "first")[0, 0]
    assert torch.allclose(mean, torch.tensor([[0.1, 0.7], [0.3, 0.5]]))
    assert torch.allclose(first, torch.tensor([[0.1, 0.7], [0.5, 0.5]]))


def test_real_maps_keep_all_mass_except_special_tokens(tiny_pair, tiny_tokenizer):
    batch, _ = encode_words(tiny_tokenizer, [["the", "cats", "sat", "on", "a", "mat"], ["he", "ran"]], 32, [0, 1])
    attention_batch = next(stream(tiny_pair, [batch]))
    for aligned, maps in word_maps(attention_batch, "finetuned"):
        tokens = attention_batch.maps("finetuned", aligned.item)
        n = tokens.shape[-1]
        assert maps.shape == (2, 4, aligned.num_words, aligned.num_words)
        non_special = 1 - tokens[..., 0] - tokens[..., n - 1]  # (layers, heads, n): mass left per token row
        for word in range(aligned.num_words):
            rows = [t for t, w in enumerate(aligned.word_ids) if w == word]
            assert torch.allclose(maps[..., word, :].sum(dim=-1), non_special[..., rows].mean(dim=-1), atol=1e-6)
    # no split words: word maps are the token maps without [CLS]/[SEP]
    _, unsplit = list(word_maps(attention_batch, "finetuned"))[1]
    assert torch.equal(unsplit, attention_batch.maps("finetuned", 1)[..., 1:3, 1:3])


def test_unknown_from_mode_is_rejected():
    with pytest.raises(InputError, match="word-attention-from"):
        word_attention(torch.zeros(1, 1, 2, 2), [0, 1], 2, "last")


def test_with_special_keeps_cls_and_sep_and_rows_sum_to_one(tiny_pair, tiny_tokenizer):
    batch, _ = encode_words(tiny_tokenizer, [["the", "cats", "sat"]], 32, [0])
    aligned = batch.items[0]
    tokens = next(stream(tiny_pair, [batch])).maps("pretrained", 0)
    full = word_attention_with_special(tokens, aligned.word_ids, aligned.num_words)
    assert full.shape == (2, 4, 5, 5)
    assert torch.allclose(full.sum(dim=-1), torch.ones(2, 4, 5), atol=1e-5)
    assert torch.allclose(full[..., 1:-1, 1:-1], word_attention(tokens, aligned.word_ids, 3))
    assert torch.equal(full[..., 0, 0], tokens[..., 0, 0]) and torch.equal(full[..., -1, -1], tokens[..., -1, -1])
