"""Regenerate tiny_run_summary.json.gz and metric_names.json, the records tests/unit/views/test_metrics.py
reads: a tiny RTE run (the test fixtures' model and data) with every analysis, the ablation, the
transplant and the baselines, its summary and every metric's name, analysis and value.

Run it when an analysis's version moves on purpose (its stored entry is then no longer read, and
its metrics leave the records), then read the diff of metric_names.json: a name that went is a
metric a stored study or an MLflow comparison can no longer find.

    .venv/bin/python tests/data/regenerate_tiny_run.py
"""

from __future__ import annotations

import gzip
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from transformers import BertTokenizerFast  # noqa: E402

import tests.fixtures  # noqa: E402
from harness.analyses import ANALYSES  # noqa: E402
from harness.cli import main  # noqa: E402
from harness.results.checkpoints import FINETUNED, PRETRAINED  # noqa: E402
from harness.run.pipeline import checkpoint_metrics  # noqa: E402
from harness.views.metrics import values  # noqa: E402
from harness.views.summary import headline_records, summary_records  # noqa: E402
from tests.fixtures import tiny_bert, tiny_run_arguments, write_tiny_data, write_tiny_vocabulary  # noqa: E402

DATA = ROOT / "tests" / "data"


def tiny_run(folder: Path) -> dict:
    """The summary of the tiny run with everything on, made in ``folder``."""
    (folder / "model").mkdir(parents=True)
    write_tiny_vocabulary(folder / "model")
    tokenizer = BertTokenizerFast.from_pretrained(str(folder / "model"), do_lower_case=True)
    tiny_bert(0, positions=256).save_pretrained(folder / "model")  # cosine_padded pads to 200
    tokenizer.save_pretrained(folder / "model")
    write_tiny_data(folder / "data")
    tests.fixtures.store_uri = lambda root: f"sqlite:///{root}/mlflow.db"  # a fresh store, not the session's copy
    extra = ("--analyses", *ANALYSES, "--ablation", "on", "--transplant", "on", "--baselines", "--no-figures")
    if main(tiny_run_arguments(folder / "model", folder / "data", folder, *extra)) != 0:
        raise SystemExit("the tiny run failed")
    (summary,) = (folder / "out").glob("rte-*/summary.json")
    return json.loads(summary.read_text())


def names_and_values(summary: dict) -> dict:
    """What test_metrics pins: each metric's analysis and value, the headline, each checkpoint's."""
    records, headline = summary_records(summary), headline_records(summary)
    return {
        "metrics": {metric.name: metric.analysis for metric in records},
        "values": values(records),
        "headline": [metric.name for metric in headline],
        "checkpoints": {name: sorted(checkpoint_metrics(records, name)) for name in (PRETRAINED, FINETUNED)},
        "checkpoint_headlines": {name: sorted(checkpoint_metrics(headline, name)) for name in (PRETRAINED, FINETUNED)},
    }


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        summary = tiny_run(Path(folder))
    (DATA / "tiny_run_summary.json.gz").write_bytes(gzip.compress(json.dumps(summary).encode(), mtime=0))
    (DATA / "metric_names.json").write_text(json.dumps(names_and_values(summary), indent=1, sort_keys=True) + "\n")
    print(f"wrote {DATA / 'tiny_run_summary.json.gz'} and {DATA / 'metric_names.json'}")
