import torch

from harness.analyses.features import LinguisticFeatures, feature_attention, feature_positions
from harness.results.checkpoints import FINETUNED, PRETRAINED
from harness.views.features import FeaturesView
from harness.views.metrics import values
from tests.fixtures import finish
from tests.unit.syntax_helpers import context, hand_made_batch, sentence

# They did n't see the dogs .
NEG = sentence(
    "They did n't see the dogs .",
    [4, 4, 4, 0, 6, 4, 4],
    ["nsubj", "aux", "advmod", "root", "det", "obj", "punct"],
    ["PRP", "VBD", "RB", "VB", "DT", "NNS", "."],
)
# the cat sat   (no pronoun, no object, no negation)
CAT = sentence("the cat sat", [2, 3, 0], ["det", "nsubj", "root"], ["DT", "NN", "VBD"])


def all_rows_to(column: int, n_words: int) -> torch.Tensor:
    """(1, 2, n+2, n+2) token maps: in head 1 every row attends only to ``column``; head 2 uniform."""
    maps = torch.full((1, 2, n_words + 2, n_words + 2), 1.0 / (n_words + 2))
    maps[:, 0] = 0.0
    maps[:, 0, :, column] = 1.0
    return maps


def test_gold_annotations_give_the_features():
    positions = feature_positions(NEG, len(NEG))
    assert positions == {
        "nouns": [5],
        "verbs": [1, 3],
        "pronouns": [0],
        "subjects": [0],
        "objects": [5],
        "negation": [2],
    }
    assert feature_positions(NEG, 3)["nouns"] == []  # words cut by max_tokens are not counted


def test_attention_received_is_averaged_over_rows_and_maxed_over_words():
    maps = torch.zeros(1, 1, 5, 5)  # [CLS] a b c [SEP]
    maps[0, 0, :, 1] = torch.tensor([1.0, 1.0, 0.0, 0.0, 1.0])  # a receives 3/5 on average
    maps[0, 0, :, 3] = torch.tensor([0.0, 0.0, 1.0, 0.5, 0.0])  # c receives 1.5/5
    values = feature_attention(maps, {"nouns": [0, 2], "verbs": [2], "pronouns": []})
    assert torch.allclose(values["nouns"], torch.tensor([[0.6]]))
    assert torch.allclose(values["verbs"], torch.tensor([[0.3]]))
    assert "pronouns" not in values
    assert torch.allclose(values["[CLS]"], torch.tensor([[0.0]]))


def test_head_attending_only_to_the_negation_scores_one_and_change_is_after_minus_before():
    n = len(NEG)
    batch = hand_made_batch(
        [NEG, CAT],
        {
            PRETRAINED: [all_rows_to(3, n), all_rows_to(0, 3)],  # n't, [CLS]
            FINETUNED: [all_rows_to(0, n), all_rows_to(0, 3)],
        },
    )
    analysis = LinguisticFeatures(context())
    analysis.update(batch)
    result = finish(analysis)
    pre, fine = result["per_checkpoint"][PRETRAINED], result["per_checkpoint"][FINETUNED]
    assert pre["sentences_with_feature"]["negation"] == 1 and pre["sentences_with_feature"]["nouns"] == 2
    assert pre["per_head"]["negation"][0][0] == 1.0
    assert fine["per_head"]["negation"][0][0] == 0.0
    assert result["per_pair"]["pretrained->finetuned"]["change_per_head"]["negation"][0][0] == -1.0
    assert fine["per_head"]["[CLS]"][0][0] == 1.0  # both sentences attend only to [CLS]
    assert abs(pre["per_head"]["negation"][0][1] - 1 / (n + 2)) < 1e-6
    assert pre["max_head"]["negation"]["layer"] == 1 and pre["max_head"]["negation"]["head"] == 1


def test_metrics_are_named_scalars_from_the_stored_entry():
    analysis = LinguisticFeatures(context())
    analysis.update(hand_made_batch([CAT], {PRETRAINED: [all_rows_to(2, 3)], FINETUNED: [all_rows_to(1, 3)]}))
    metrics = values(FeaturesView.metrics({"result": finish(analysis)}))
    assert metrics["features_pretrained_nouns_max"] == 1.0
    assert abs(metrics["features_finetuned_nouns_max"] - 0.2) < 1e-6  # only the uniform head reaches "cat"
