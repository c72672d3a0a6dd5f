import pytest
import torch
from transformers import BertConfig, BertForSequenceClassification

from harness.attention import attention_of, stream_attention
from harness.encoding import batched, encode_examples
from harness.errors import HarnessError
from tasks.examples import Example

PAIRS = [Example("1", "the cat sat", "the dog ran .", 0), Example("2", "he is not happy", "it sat", 1)]


def test_attention_shape_and_rows_sum_to_one(tiny_pair, tiny_tokenizer):
    encoded = encode_examples(tiny_tokenizer, PAIRS, max_length=32)
    attention = attention_of(tiny_pair["pretrained"], encoded)
    batch, seq = encoded.input_ids.shape
    assert attention.shape == (batch, 2, 4, seq, seq) and attention.dtype == torch.float32
    assert torch.allclose(attention.sum(-1), torch.ones(batch, 2, 4, seq), atol=1e-5)
    shorter = int(encoded.lengths.min())
    row = int(encoded.lengths.argmin())
    assert attention[row, :, :, :, shorter:].abs().max() < 1e-6  # no attention to padding


def test_both_checkpoints_see_the_same_batch(tiny_pair, tiny_tokenizer):
    batches = list(stream_attention(tiny_pair, batched(tiny_tokenizer, PAIRS, 1, 32)))
    assert len(batches) == 2
    for batch in batches:
        assert set(batch.attentions) == {"pretrained", "finetuned"}
        assert batch.attentions["pretrained"].shape == batch.attentions["finetuned"].shape
        n = int(batch.lengths[0])
        assert batch.maps("finetuned", 0).shape == (2, 4, n, n)


def test_truncation_to_max_length(tiny_tokenizer):
    long = Example("1", " ".join(["cat"] * 50), "dog", 0)
    assert encode_examples(tiny_tokenizer, [long], max_length=16).input_ids.shape == (1, 16)


def test_model_without_attention_weights_is_a_clear_error(tiny_tokenizer):
    config = BertConfig(vocab_size=30, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=16, attn_implementation="sdpa")
    model = BertForSequenceClassification(config).eval()
    with pytest.raises(HarnessError, match="returned no attention weights; load it with attn_implementation='eager'"):
        attention_of(model, encode_examples(tiny_tokenizer, PAIRS, max_length=32))
