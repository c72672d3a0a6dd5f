"""MLflow tracking: one parent run per run key (task, model, seed and every setting), found again on a re-run.

The default store is ``sqlite:///mlruns/mlflow.db`` with artifacts under ``mlruns/artifacts``
(MLflow 3 refuses a plain ``./mlruns`` file store). ``--tracking-uri`` or
``MLFLOW_TRACKING_URI`` override it; any SQLite store keeps its artifacts in an
``artifacts/`` folder beside the database file.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import closing
from functools import partial
from pathlib import Path
from typing import TypeVar
from urllib.parse import quote

import numpy as np
from mlflow.entities import Metric, Param, Run, RunTag
from mlflow.tracking import MlflowClient

from harness.results.locking import exclusive
from harness.results.store import JsonObject
from tasks.errors import InputError
from tasks.files import DiskFull, is_disk_full, writing

EXPERIMENT = "attention-shift"
# The MLflow 3 UI opens an experiment without this tag in its GenAI mode (traces, "evaluation runs");
# with it, as model training (runs, metrics, the compare view).
EXPERIMENT_KIND = ("mlflow.experimentKind", "custom_model_development")
RUN_KEY_TAG = "harness.run_key"
RETRY_TAG = "harness.retry_of"
SKIPPED_TAG = "harness.analyses_skipped"  # the analyses the last invocation left out for want of data
PARENT_TAG = "mlflow.parentRunId"  # MLflow's UI nests a run under the run this tag names
CHECKPOINT_TAG = "harness.checkpoint"  # a checkpoint's child run under its harness run
HARNESS_RUNS = f"tags.`{CHECKPOINT_TAG}` IS NULL"  # a search filter: runs and studies, not their checkpoints
BATCH_METRICS = 1000  # MLflow's limits per log_batch
TRAIN_SECONDS = "train_seconds"  # a run's metric: its checkpoint's training (kept with a reused checkpoint)
BATCH_ENTITIES = 100  # of params, and of tags
IMAGES = "images"  # where MLflow keeps the images logged by step (its file names: <key>+step+<N>+...)
RETRY_PAUSES = (0.5, 1, 2, 4, 8, 15, 30, None)
Result = TypeVar("Result")


def _database(uri: str) -> Path | None:
    return Path(uri.removeprefix("sqlite:///")) if uri.startswith("sqlite:///") else None


def damage(database: Path) -> str | None:
    """What SQLite's quick check finds wrong in the store file ``database`` (its pages, records
    and free list; not its indexes against the tables, which an integrity check reads too at
    several times the cost), or None when it finds nothing: a damaged store must not take a
    run's records, which it may lose or scramble."""
    try:
        with closing(sqlite3.connect(f"{database.resolve().as_uri()}?mode=ro", uri=True)) as connection:
            said = [row[0] for row in connection.execute("PRAGMA quick_check(3)")]
    except sqlite3.DatabaseError as error:  # "file is not a database": the header itself is damaged
        return str(error)
    return None if said == ["ok"] else "; ".join(said)


def seconds_metric(timed: str) -> str:
    """The MLflow metric of the seconds a run timed ``timed`` (a source's analyses, `timed_along`):
    ``seconds_task``."""
    return f"seconds_{timed}"


def timed_along(source: str) -> str:
    """What a run times as ``source``'s analyses on the checkpoints kept along fine-tuning: ``task_trajectory``."""
    return f"{source}_trajectory"


def check_store(uri: str) -> None:
    """One line, before a run or study takes its lock or logs anything, when the SQLite store of
    ``uri`` exists and is damaged: the file, what SQLite says, and the ways out."""
    database = _database(uri)
    if database is None or not database.is_file():
        return
    found = damage(database)
    if found is not None:
        raise InputError(
            f"the MLflow store {database} is damaged (SQLite: {found.splitlines()[0][:200]}); nothing "
            f"was logged to it. Export what it still holds (`mlflow experiments csv -x <id>`, or "
            f"sqlite3's `.recover` into a new file), or give --tracking-uri sqlite:///<a new file>"
        )


def store_folder(uri: str) -> Path:
    """The folder an MLflow store writes to: a SQLite file's folder (its artifacts are beside it),
    a file store's folder, or the URI itself for a remote server."""
    database = _database(uri)
    return database.parent if database is not None else Path(uri.removeprefix("file://"))


def retrying(call: Callable[[], Result]) -> Result:
    """``call()``, tried again (with growing pauses, for about a minute) while SQLite says
    ``database is locked``: concurrent runs share one store file."""
    for pause in RETRY_PAUSES:
        try:
            return call()
        except Exception as error:  # MLflow wraps the SQLAlchemy error in its own types
            if "database is locked" not in str(error) or pause is None:
                raise
            time.sleep(pause)
    raise AssertionError("unreachable: the last pause is None")


def open_experiment(uri: str) -> tuple[MlflowClient, str]:
    """A client of the store and the harness's experiment id. A new SQLite store is created
    (tables, experiment) under a lock file beside it, so runs started at once on a fresh
    store do not race to create the same tables."""
    database = _database(uri)
    if database is None:
        client = MlflowClient(tracking_uri=uri)
        return client, retrying(lambda: _experiment_id(client, None))
    with exclusive(database.with_name(database.name + ".lock"), f"creating the MLflow store {database}"):
        new = not database.exists()
        try:
            client = MlflowClient(tracking_uri=uri)
            artifacts = (database.parent / "artifacts").resolve().as_uri()  # mlruns/artifacts by default
            return client, retrying(lambda: _experiment_id(client, artifacts))
        except Exception as error:
            if new and is_disk_full(error):  # half-made tables cannot be migrated again: the rerun starts afresh
                database.unlink(missing_ok=True)
            raise


def _experiment_id(client: MlflowClient, artifacts: str | None) -> str:
    experiment = client.get_experiment_by_name(EXPERIMENT)
    if experiment is None:
        return client.create_experiment(EXPERIMENT, artifact_location=artifacts, tags=dict([EXPERIMENT_KIND]))
    if experiment.tags.get(EXPERIMENT_KIND[0]) != EXPERIMENT_KIND[1]:  # a store made by an earlier version
        client.set_experiment_tag(experiment.experiment_id, *EXPERIMENT_KIND)
    return experiment.experiment_id


def runs_of(uri: str, run_key: str) -> tuple[MlflowClient, str, list[Run]]:
    """The store's client, the experiment and the MLflow runs of ``run_key`` (a retried or
    stopped attempt is a run of its own), or one clear line when the store cannot be opened."""
    try:
        with writing(store_folder(uri), "the MLflow store"):  # a new store's tables
            client, experiment_id = open_experiment(uri)
            runs = retrying(lambda: client.search_runs([experiment_id], f"tags.`{RUN_KEY_TAG}` = '{run_key}'"))
    except DiskFull:
        raise
    except Exception as error:  # MLflow raises many types for bad URIs/stores
        raise InputError(
            f"cannot open the MLflow store {uri!r} ({str(error).splitlines()[0]}); "
            "check --tracking-uri / MLFLOW_TRACKING_URI"
        ) from error
    return client, experiment_id, runs


def is_finished(uri: str, run_key: str) -> bool:
    """Whether ``run_key`` has a FINISHED MLflow run (everything of it logged)."""
    return any(run.info.status == "FINISHED" for run in runs_of(uri, run_key)[2])


class Tracker:
    """The MLflow run of one harness run key; running the same key again reopens it.

    Params and metrics already on the run are not logged again (a metric's steps go in one
    batch, and a batch is one transaction), so a resumed or repeated run leaves one value per
    metric. A FINISHED run stays FINISHED: a later attempt adds what it computes to it, and if
    that attempt fails or is stopped, it is recorded as a run of its own, tagged with the key
    under ``harness.retry_of``, rather than turning the finished run into a failed one.

    Every write is in `writing`: a full disk under the store is one `DiskFull` line naming its
    folder; what was logged stays, and the rerun logs only the rest into the same run.
    """

    def __init__(self, uri: str, run_key: str, run_name: str, tags: dict[str, str]) -> None:
        self.folder = store_folder(uri)
        with writing(self.folder, "the MLflow run"):
            self.open(uri, run_key, run_name, tags)

    def open(self, uri: str, run_key: str, run_name: str, tags: dict[str, str]) -> None:
        """Find the run of ``run_key`` (or create it) and give it ``tags``."""
        self.client, self.experiment_id, runs = runs_of(uri, run_key)
        finished = [run for run in runs if run.info.status == "FINISHED"]
        self.run_key, self.run_name, self.tags = run_key, run_name, tags
        self.was_finished = bool(finished)
        if finished:
            self.run_id = finished[0].info.run_id
        elif runs:
            self.run_id = runs[0].info.run_id
            retrying(lambda: self.client.update_run(self.run_id, status="RUNNING"))
        else:
            self.run_id = retrying(
                lambda: self.client.create_run(
                    self.experiment_id, run_name=run_name, tags={RUN_KEY_TAG: run_key, **tags}
                )
            ).info.run_id
        if runs:  # a run made outside a study, then taken into one, gets the study's tags (its parent)
            present = (finished or runs)[0].data.tags
            self.set_tags({name: value for name, value in tags.items() if name not in present})

    def set_tags(self, tags: dict[str, str]) -> None:
        """Set ``tags`` on the run, replacing their earlier values (what a tag says may change, unlike
        a param), a batch of MLflow's 100 at a time: one transaction each, not one per tag."""
        with writing(self.folder, "the MLflow run's tags"):
            self.log_batches(tags=[RunTag(name, value) for name, value in tags.items()])

    def log_params(self, params: dict[str, str]) -> None:
        """Log the params the run does not have yet (MLflow's params cannot change), 6000 characters each at most."""
        logged = retrying(lambda: self.client.get_run(self.run_id)).data.params
        fresh = [Param(key, value[:6000]) for key, value in params.items() if key not in logged]
        with writing(self.folder, "the MLflow run's params"):
            self.log_batches(params=fresh)

    def log_batches(self, params: Sequence[Param] = (), tags: Sequence[RunTag] = ()) -> None:
        """``params`` and ``tags`` logged `BATCH_ENTITIES` at a time, one transaction each."""
        for start in range(0, max(len(params), len(tags)), BATCH_ENTITIES):
            end = start + BATCH_ENTITIES
            retrying(partial(self.client.log_batch, self.run_id, params=params[start:end], tags=tags[start:end]))

    def log_metrics(self, metrics: Iterable[tuple[str, float, int]]) -> None:
        """(name, value, step) triples, e.g. a training curve; names already on the run are skipped."""
        logged = retrying(lambda: self.client.get_run(self.run_id)).data.metrics
        by_name: dict[str, list[Metric]] = {}
        for name, value, step in metrics:
            if name not in logged:
                by_name.setdefault(name, []).append(Metric(name, float(value), 0, step))
        with writing(self.folder, "the MLflow run's metrics"):
            for batch in metric_batches(by_name.values()):
                retrying(partial(self.client.log_batch, self.run_id, metrics=batch))

    def log_artifact(self, path: Path, folder: str | None = None) -> None:
        """Copy a file into the run's artifacts (under ``folder``)."""
        with writing(self.folder, f"the MLflow artifact {path.name}", path.stat().st_size):
            retrying(lambda: self.client.log_artifact(self.run_id, str(path), folder))

    def log_images_once(self, key: str, images: dict[int, np.ndarray]) -> None:
        """Images (RGB arrays) by training step under ``key``, which MLflow's UI shows with a slider
        over the steps; the steps the run has an image of already are left out (a rerun adds none)."""
        stored = retrying(lambda: self.client.list_artifacts(self.run_id, IMAGES))
        named = f"{IMAGES}/{key.replace('/', '~')}+step+"
        logged = {info.path[len(named) :].split("+")[0] for info in stored if info.path.startswith(named)}
        with writing(self.folder, f"the MLflow images {key}"):
            for step, image in images.items():
                if str(step) not in logged:
                    retrying(partial(self.client.log_image, self.run_id, image, key=key, step=step))

    def log_folder_once(self, folder: Path, name: str) -> None:
        """The files of ``folder`` (a flat folder) as the run's artifact folder ``name``, unless the
        run has each of them already, whole (a re-run does not copy a model again; one cut short by
        a full disk copies it anew)."""
        logged = {info.path: info.file_size for info in retrying(lambda: self.client.list_artifacts(self.run_id, name))}
        files = {f"{name}/{path.name}": path.stat().st_size for path in folder.iterdir() if path.is_file()}
        if any(logged.get(path) != size for path, size in files.items()):  # absent, or cut short by a full disk
            with writing(self.folder, f"the MLflow artifact folder {name}", sum(files.values())):
                retrying(lambda: self.client.log_artifacts(self.run_id, str(folder), name))

    def page(self) -> str:
        """The run's page under ``mlflow ui``'s address, in the UI's model-training view: MLflow
        3's UI opens an experiment in its GenAI view (traces, "Evaluation runs") by default,
        whatever the experiment's kind says."""
        return f"#/experiments/{self.experiment_id}/runs/{self.run_id}?workflowType=machine_learning"

    def children(self) -> list[str]:
        """The ids of the finished runs nested under this one (a study's (task, seed) runs), oldest first."""
        runs = retrying(
            lambda: self.client.search_runs(
                [self.experiment_id],
                f"tags.`{PARENT_TAG}` = '{self.run_id}' and attributes.status = 'FINISHED'",
                order_by=["attributes.start_time ASC"],
            )
        )
        return [run.info.run_id for run in runs]

    def children_seconds(self, timed: Iterable[str]) -> dict[str, dict[str, float]]:
        """Per finished child run (by its run key), the seconds it logged: `TRAIN_SECONDS` and the
        metrics named in ``timed`` (`seconds_metric`: each source's analyses; a later ``harness
        ablate`` adds its own)."""
        wanted = {TRAIN_SECONDS, *timed}
        runs = retrying(
            lambda: self.client.search_runs(
                [self.experiment_id], f"tags.`{PARENT_TAG}` = '{self.run_id}' and attributes.status = 'FINISHED'"
            )
        )
        return {
            run.data.tags[RUN_KEY_TAG]: {name: value for name, value in run.data.metrics.items() if name in wanted}
            for run in runs
            if RUN_KEY_TAG in run.data.tags
        }

    def compare_page(self, run_ids: list[str]) -> str:
        """The UI's compare view of ``run_ids`` of this experiment (params and metrics side by
        side, charts of each metric over the runs), in the model-training view."""
        runs, experiments = (quote(json.dumps(ids, separators=(",", ":"))) for ids in (run_ids, [self.experiment_id]))
        return f"#/compare-runs?runs={runs}&experiments={experiments}&workflowType=machine_learning"

    def finish(self, status: str = "FINISHED") -> None:
        """End the run as ``status`` (FINISHED, FAILED or KILLED), keeping a finished run finished."""
        with writing(self.folder, f"the MLflow run's end ({status})"):
            self.record_end(status)

    def record_end(self, status: str) -> None:
        """`finish` without its translation of a full disk."""
        if not self.was_finished:
            retrying(lambda: self.client.set_terminated(self.run_id, status=status))
        elif status != "FINISHED":
            retry = retrying(
                lambda: self.client.create_run(
                    self.experiment_id, run_name=f"{self.run_name} (retry)", tags={RETRY_TAG: self.run_key, **self.tags}
                )
            ).info.run_id
            retrying(lambda: self.client.set_terminated(retry, status=status))


def metric_batches(groups: Iterable[list[Metric]]) -> Iterator[list[Metric]]:
    """Metrics in batches of at most `BATCH_METRICS`, never splitting one metric's steps
    across two batches unless it alone has more (so a kill between batches leaves each
    metric either whole or absent, and the rerun logs the absent ones)."""
    batch: list[Metric] = []
    for group in groups:
        if batch and len(batch) + len(group) > BATCH_METRICS:
            yield batch
            batch = []
        for start in range(0, len(group), BATCH_METRICS):
            batch.extend(group[start : start + BATCH_METRICS])
            if len(batch) >= BATCH_METRICS:
                yield batch
                batch = []
    if batch:
        yield batch


def training_curve(log_history: list[JsonObject]) -> list[tuple[str, float, int]]:
    """Trainer's log history as (metric, value, step) triples for MLflow."""
    curve = []
    for entry in log_history:
        for name in ("loss", "learning_rate", "grad_norm"):
            if name in entry:
                curve.append((f"train_{name}", float(entry[name]), int(entry["step"])))
    return curve
