"""The GLUE TSV reader on every task folder in ../shared/data/glue, with the README's counts."""

import pytest

from tasks import get_task
from tasks.loading import load_examples
from tests.fixtures import GLUE_DIR

pytestmark = pytest.mark.skipif(not GLUE_DIR.is_dir(), reason=f"real GLUE data not found at {GLUE_DIR}")

README_COUNTS = [
    ("cola", "train", 8551),
    ("cola", "dev", 1043),
    ("mrpc", "train", 3668),
    ("mrpc", "dev", 408),
    ("qnli", "dev", 5463),
    ("rte", "train", 2490),
    ("rte", "dev", 277),
    ("sst2", "train", 67349),
    ("sst2", "dev", 872),
    ("stsb", "train", 5749),
    ("stsb", "dev", 1500),
    ("wnli", "train", 635),
    ("wnli", "dev", 71),
]


@pytest.mark.parametrize(("name", "split", "count"), README_COUNTS)
def test_row_counts_match_the_data_readme(name, split, count):
    task = get_task(name)
    examples = load_examples(task, split, GLUE_DIR)
    assert len(examples) == count
    assert all(example.text_a for example in examples)
    assert all((example.text_b is not None) == task.is_pair for example in examples)
    if task.is_regression:
        assert all(0.0 <= example.label <= 5.0 for example in examples)
    else:
        assert {example.label for example in examples} == set(range(task.num_labels))


def test_mrpc_bom_header_and_literal_quotes():
    first = load_examples(get_task("mrpc"), "dev", GLUE_DIR)[0]
    assert first.text_a.startswith("He said the foodservice pie business")
    assert first.text_b.startswith('"The foodservice pie business')  # a lone quote stays literal
    assert first.label == 1


def test_sst2_trailing_space_and_cola_without_header():
    assert (
        load_examples(get_task("sst2"), "dev", GLUE_DIR)[0].text_a == "it 's a charming and often affecting journey ."
    )
    cola = load_examples(get_task("cola"), "dev", GLUE_DIR)[0]
    assert cola.text_a == "The sailors rode the breeze clear of the rocks." and cola.label == 1


def test_string_labels_map_to_the_label_names():
    task = get_task("rte")
    first = load_examples(task, "dev", GLUE_DIR)[0]
    assert task.label_names[first.label] == "not_entailment"
