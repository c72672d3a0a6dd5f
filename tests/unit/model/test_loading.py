"""Loading a pre-trained encoder with a new head for each kind of GLUE task."""

import pytest

from harness.model.loading import load_sequence_classifier
from tasks.registry import get_task
from tests.conftest import tiny_bert


@pytest.mark.parametrize("random_init", [False, True])
def test_each_task_gets_a_head_of_its_own_size_and_kind(tmp_path, random_init):
    tiny_bert(0).bert.save_pretrained(tmp_path)  # an encoder without a head, as the hub's BERTs and MiniLM
    # STS-B has no label names: passing id2label=None made transformers 5 build a head of size None
    regression = load_sequence_classifier(str(tmp_path), get_task("stsb"), head_seed=0, random_init=random_init)
    assert regression.classifier.out_features == 1 and regression.config.problem_type == "regression"
    mnli = load_sequence_classifier(str(tmp_path), get_task("mnli"), head_seed=0, random_init=random_init)
    assert mnli.classifier.out_features == 3 and mnli.config.id2label[0] == get_task("mnli").label_names[0]
