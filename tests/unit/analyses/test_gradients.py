import torch
from transformers import BertConfig, BertForMaskedLM, BertForSequenceClassification

from harness.analyses.gradients import GradientImportance, category_means
from harness.analyses.surface import SpecialIds, token_masks
from harness.inputs.batches import EncodedBatch
from harness.model.forward import MASKED_LM_LOSS, TASK_LOSS, UNTRAINED_TASK_LOSS
from harness.run.engine import GradientTargets
from harness.views.gradients import GradientsView
from tasks.examples import Example
from tests.fixtures import run_analysis, tiny_bert

EXAMPLES = [
    Example("1", "the cat sat on the mat .", "the dog ran , he sat .", 0),
    Example("2", "he is not happy", "it sat", 1),
    Example("3", "a dog", "she sat .", 1),
]


def test_category_means_of_hand_built_gradients(tiny_tokenizer):
    input_ids = torch.tensor([tiny_tokenizer.convert_tokens_to_ids(["[CLS]", "cat", ".", "[SEP]", "[PAD]"])])
    grads = torch.zeros(1, 1, 1, 5, 5)
    grads[0, 0, 0, :4, 3] = 2.0  # every real row's gradient on the [SEP] column
    grads[0, 0, 0, :4, 1] = 1.0  # ... and on "cat"
    grads[0, 0, 0, 4, :] = 50.0  # padding row: ignored
    grads[0, 0, 0, :, 4] = 50.0  # padding column: ignored
    masks = token_masks(input_ids, torch.tensor([4]), SpecialIds.of(tiny_tokenizer))
    means = {name: (values.item(), bool(valid)) for name, (values, valid) in category_means(grads, masks).items()}
    assert means == {"sep": (2.0, True), "punct": (0.0, True), "cls": (0.0, True), "other": (1.0, True)}


def test_masking_touches_only_ordinary_tokens_and_at_least_one(tiny_tokenizer):
    ids = torch.tensor([[2, 9, 10, 11, 3, 0], [2, 9, 3, 0, 0, 0]])
    encoded = EncodedBatch(ids, (ids != 0).long(), None, [None, None])
    special = (ids == 2) | (ids == 3) | (ids == 0)
    for seed in range(20):
        masked_batch, targets = GradientTargets(tiny_tokenizer, seed).masked(encoded)
        masked = targets != -100
        assert not (masked & special).any() and masked.any(dim=1).all()
        assert torch.equal(masked_batch.input_ids[masked], torch.full((int(masked.sum()),), 4))
        assert torch.equal(masked_batch.input_ids[~masked], ids[~masked]) and torch.equal(targets[masked], ids[masked])


def run_gradients(models, tokenizer, batch_size, examples=EXAMPLES):
    return run_analysis(GradientImportance, models, tokenizer, examples, batch_size)["per_checkpoint"]


def test_task_loss_gradients_do_not_depend_on_batching(tiny_pair, tiny_tokenizer):
    alone = run_gradients(tiny_pair, tiny_tokenizer, batch_size=1)
    together = run_gradients(tiny_pair, tiny_tokenizer, batch_size=3)
    assert alone["pretrained"]["loss"] == UNTRAINED_TASK_LOSS
    assert alone["finetuned"]["loss"] == TASK_LOSS
    for checkpoint in tiny_pair:
        for category in ("sep", "other"):
            first = torch.tensor(alone[checkpoint]["per_head"][category])
            second = torch.tensor(together[checkpoint]["per_head"][category])
            assert first.shape == (2, 4) and (first > 0).all()
            assert torch.allclose(first, second, rtol=1e-4, atol=1e-9)
    assert alone["pretrained"]["per_head"]["sep"] != alone["finetuned"]["per_head"]["sep"]


def test_masked_lm_head_is_used_when_the_checkpoint_stores_one(tiny_tokenizer, tmp_path):
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=tiny_tokenizer.vocab_size,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=32,
        max_position_embeddings=64,
        initializer_range=0.5,
    )
    BertForMaskedLM(config).save_pretrained(tmp_path)
    pretrained = BertForSequenceClassification.from_pretrained(tmp_path, attn_implementation="eager").eval()
    result = run_gradients({"pretrained": pretrained, "finetuned": tiny_bert(1)}, tiny_tokenizer, batch_size=2)
    assert result["pretrained"]["loss"] == MASKED_LM_LOSS
    assert result["finetuned"]["loss"] == TASK_LOSS
    assert (torch.tensor(result["pretrained"]["per_layer"]["other"]) > 0).all()
    assert result["pretrained"]["num_items"] == 3


def test_unlabelled_inputs_without_mlm_head_are_skipped_and_said(tiny_pair, tiny_tokenizer, tmp_path):
    unlabelled = [Example("1", "the cat sat .", "a dog", None)]
    result = run_gradients(tiny_pair, tiny_tokenizer, batch_size=1, examples=unlabelled)
    assert result["finetuned"]["loss"] is None
    assert "no task labels" in result["finetuned"]["skipped_because"]
    entry = {"pairs": [["pretrained", "finetuned"]], "result": {"per_checkpoint": result}}
    assert GradientsView.draw(entry, {"model": "tiny", "task": "test"}, tmp_path) == []


def test_gradient_figure_is_drawn(tiny_pair, tiny_tokenizer, tmp_path):
    result = run_gradients(tiny_pair, tiny_tokenizer, batch_size=3)
    entry = {"pairs": [["pretrained", "finetuned"]], "result": {"per_checkpoint": result}}
    files = GradientsView.draw(entry, {"model": "tiny", "task": "test"}, tmp_path)
    assert len(files) == 1 and files[0].stat().st_size > 0


def test_regression_tasks_use_the_squared_error(tiny_tokenizer):
    scored = [Example("1", "the cat sat .", "a dog sat .", 3.5), Example("2", "he ran", "it sat", 0.5)]
    models = {"pretrained": tiny_bert(0, num_labels=1), "finetuned": tiny_bert(1, num_labels=1)}
    result = run_gradients(models, tiny_tokenizer, batch_size=2, examples=scored)
    assert result["finetuned"]["loss"] == TASK_LOSS
    assert (torch.tensor(result["finetuned"]["per_head"]["other"]) > 0).all()
