"""MLflow tracking: one parent run per run key (task, model, seed and every setting), found again on a re-run.

The default store is ``sqlite:///mlruns/mlflow.db`` with artifacts under ``mlruns/artifacts``
(MLflow 3 refuses a plain ``./mlruns`` file store). ``--tracking-uri`` or
``MLFLOW_TRACKING_URI`` override it; any SQLite store keeps its artifacts in an
``artifacts/`` folder beside the database file.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

from mlflow.entities import Metric, Param
from mlflow.tracking import MlflowClient

from tasks.errors import InputError

EXPERIMENT = "attention-shift"
RUN_KEY_TAG = "harness.run_key"


def _client(uri: str) -> MlflowClient:
    if uri.startswith("sqlite:///"):
        Path(uri.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    return MlflowClient(tracking_uri=uri)


def _experiment_id(client: MlflowClient, uri: str) -> str:
    experiment = client.get_experiment_by_name(EXPERIMENT)
    if experiment is not None:
        return experiment.experiment_id
    artifacts = None
    if uri.startswith("sqlite:///"):  # artifacts beside the database (mlruns/artifacts by default)
        artifacts = (Path(uri.removeprefix("sqlite:///")).parent / "artifacts").resolve().as_uri()
    return client.create_experiment(EXPERIMENT, artifact_location=artifacts)


def flatten(prefix: str, value: Any) -> dict[str, str]:
    """Nested dataclasses/dicts as dotted MLflow params."""
    if is_dataclass(value):
        value = asdict(value)
    if isinstance(value, dict):
        flat: dict[str, str] = {}
        for key, inner in value.items():
            flat.update(flatten(f"{prefix}.{key}" if prefix else key, inner))
        return flat
    return {prefix: str(value)}


class Tracker:
    """The MLflow parent run of one harness run key; running the same key again reopens it.

    Params and metrics already on the run are not logged again, so a resumed or repeated
    run leaves one value per metric.
    """

    def __init__(self, uri: str, run_key: str, run_name: str, tags: dict[str, str]) -> None:
        try:
            self.client = _client(uri)
            experiment_id = _experiment_id(self.client, uri)
        except Exception as error:  # MLflow raises many types for bad URIs/stores
            raise InputError(f"cannot open the MLflow store {uri!r} ({error}); "
                             "check --tracking-uri / MLFLOW_TRACKING_URI") from error
        existing = self.client.search_runs([experiment_id], f"tags.`{RUN_KEY_TAG}` = '{run_key}'", max_results=1)
        if existing:
            self.run_id = existing[0].info.run_id
            self.client.update_run(self.run_id, status="RUNNING")
        else:
            self.run_id = self.client.create_run(experiment_id, run_name=run_name,
                                                 tags={RUN_KEY_TAG: run_key, **tags}).info.run_id
        self.uri = uri

    def log_params(self, params: dict[str, str]) -> None:
        logged = self.client.get_run(self.run_id).data.params
        fresh = [Param(key, value[:6000]) for key, value in params.items() if key not in logged]
        for start in range(0, len(fresh), 100):  # MLflow's batch limit
            self.client.log_batch(self.run_id, params=fresh[start:start + 100])

    def log_metrics(self, metrics: Iterable[tuple[str, float, int]]) -> None:
        """(name, value, step) triples, e.g. a training curve; names already on the run are skipped."""
        logged = self.client.get_run(self.run_id).data.metrics
        batch = [Metric(name.replace("/", "_"), float(value), 0, step) for name, value, step in metrics
                 if name.replace("/", "_") not in logged]
        for start in range(0, len(batch), 1000):
            self.client.log_batch(self.run_id, metrics=batch[start:start + 1000])

    def log_artifact(self, path: Path, folder: str | None = None) -> None:
        self.client.log_artifact(self.run_id, str(path), folder)

    def finish(self, status: str = "FINISHED") -> None:
        self.client.set_terminated(self.run_id, status=status)


def training_curve(log_history: list[dict[str, Any]]) -> list[tuple[str, float, int]]:
    """Trainer's log history as (metric, value, step) triples for MLflow."""
    curve = []
    for entry in log_history:
        for name in ("loss", "learning_rate", "grad_norm"):
            if name in entry:
                curve.append((f"train_{name}", float(entry[name]), int(entry["step"])))
    return curve
