"""A user's task from a hub dataset id, offline: a dataset repository in the hub cache's layout (a
README declaring its configuration's data files, parquet files with a `datasets.ClassLabel`) is read
through `datasets` as the local folder it is, its class names become the task's labels.

huggingface_hub and datasets read ``HF_HOME`` and the offline switches when imported, so the loader
runs in a subprocess with its own environment.
"""

from __future__ import annotations

import json

import datasets
import pytest

from tests.fixtures import sentiment_sentences
from tests.unit.hub_cache_helpers import parquet, python_in, write_hub_snapshot

pytestmark = pytest.mark.slow  # a subprocess importing datasets, twice

REPOSITORY = "someone/sentiment-mini"
FEATURES = datasets.Features(
    {"text": datasets.Value("string"), "label": datasets.ClassLabel(names=["negative", "positive"])}
)
README = """---
configs:
- config_name: default
  data_files:
  - split: train
    path: data/train-*
  - split: validation
    path: data/validation-*
---
# Sentiment, two classes (written by the harness's tests)
"""
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
# The task --dataset names, resolved and read; its labels and examples as JSON, an InputError its line and exit 2.
LOAD = """
import dataclasses, json, sys
from harness.config import TaskConfig
from tasks.errors import InputError
from tasks.loading import load_examples, resolved
try:
    task = resolved(TaskConfig(task="mini", dataset=sys.argv[1], text_fields=["text"]).definition)
    examples = load_examples(task, "validation")
except InputError as error:
    print(error)
    sys.exit(2)
print(json.dumps({"labels": task.label_names, "examples": [dataclasses.asdict(example) for example in examples]}))
"""


def test_a_hub_dataset_id_is_read_offline_from_the_hub_cache_with_its_class_names(tmp_path):
    rows = sentiment_sentences()
    dev = [{"text": text, "label": label} for text, label in rows[:8]]
    train = [{"text": text, "label": label} for text, label in rows[8:]]
    files = {
        "README.md": README.encode(),
        "data/train-00000-of-00001.parquet": parquet(train, FEATURES, tmp_path),
        "data/validation-00000-of-00001.parquet": parquet(dev, FEATURES, tmp_path),
    }
    home = tmp_path / "hf_home"
    write_hub_snapshot(home / "hub", REPOSITORY, files, repo_type="dataset")

    done = python_in(home, LOAD, REPOSITORY, **OFFLINE)
    assert done.returncode == 0, done.stdout + done.stderr
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert loaded["labels"] == ["negative", "positive"]
    assert [(e["text_a"], e["label"], e["split"]) for e in loaded["examples"]] == [
        (row["text"], row["label"], "validation") for row in dev
    ]
    missing = python_in(home, LOAD, "someone/not-cached", **OFFLINE)
    assert missing.returncode == 2 and "someone/not-cached" in missing.stdout
    assert len(missing.stdout.strip().splitlines()) == 1
