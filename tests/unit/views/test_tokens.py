"""Figures and tables name the special tokens as the run's model names them."""

from __future__ import annotations

from harness.views.saving import plt, save
from harness.views.tokens import model_tokens, own_tokens


def test_figures_and_tables_name_the_models_own_special_tokens(tmp_path):
    figure, axes = plt.subplots()
    axes.set_title("attention to [CLS] and [SEP]")
    axes.set_xticks([0, 1], ["[CLS]", "[SEP]"])
    with model_tokens({"[CLS]": "<s>", "[SEP]": "</s>"}):
        assert own_tokens("| [SEP] | 0.5 |", markdown=True) == "| `</s>` | 0.5 |"
        save(figure, tmp_path / "tokens.png")
    assert axes.get_title() == "attention to <s> and </s>"
    assert [label.get_text() for label in axes.get_xticklabels()] == ["<s>", "</s>"]
    assert own_tokens("[CLS]") == "[CLS]"  # outside a run's drawing: the role names
    with model_tokens({"[CLS]": "[CLS]", "[SEP]": "[SEP]"}):
        assert own_tokens("| [SEP] |", markdown=True) == "| [SEP] |"  # BERT's own: unchanged
