"""Where a study's (task, seed) runs execute (``harness study --engine``).

* ``inline``: one after the other in this process (the default; a laptop, one GPU).
* ``ray``: each run a Ray task (https://docs.ray.io), chosen over a scheduler of our own
  and over Slurm-only tools (submitit) because one API covers the processes and GPUs of one
  machine (a local Ray instance, started here) and a cluster of machines (``ray start`` on
  each, or Ray on Slurm/Kubernetes; ``--ray-address``), places each run on free GPUs
  (``num_gpus``) and queues the rest. A task is one `harness run` (`harness.run.pipeline.run`)
  in a fresh worker process, in this folder; with ``--processes-per-run P`` it first
  fine-tunes under ``accelerate launch --multi_gpu --num_processes P -m harness finetune``
  (on CPUs ``torch.distributed.run``) with the run's flags, then analyses on one device.
  Across machines the run folders, checkpoint cache and
  MLflow store must be shared: a shared file system and an ``mlflow server`` as
  ``--tracking-uri`` (docs in README).

Every engine returns ``{run label: error}`` for the runs that failed; the rest went on.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import torch
from tqdm import tqdm

from harness.arguments import to_argv
from harness.config import RunConfig, StudyConfig
from harness.run.pipeline import run as run_pipeline
from tasks.errors import InputError

try:
    import ray
except ImportError:  # the `cluster` extra (pip install -e '.[cluster]'); --engine ray says so
    ray = None  # type: ignore[assignment]  # the module or None, checked before each use


@dataclass
class Job:
    """One (task, seed) run of a study: its label, configuration and MLflow tags (parent, study)."""

    label: str
    config: RunConfig
    tags: dict[str, str]


def one_line(error: BaseException) -> str:
    """An error as the study reports a failed run: its type and the first line of its message."""
    return f"{type(error).__name__}: {error}".splitlines()[0]


def run_inline(jobs: list[Job], bar: tqdm) -> dict[str, str]:
    """Each job in this process, in order; a job that raises is reported and the next goes on
    (Ctrl-C and SIGTERM stop the study)."""
    failures = {}
    for job in jobs:
        bar.set_postfix_str(job.label)
        try:
            run_pipeline(job.config, job.tags)
        except Exception as error:
            failures[job.label] = one_line(error)
            tqdm.write(f"{job.label} failed: {failures[job.label]}")
        bar.update()
    return failures


def execute(job: Job, folder: Path, processes: int) -> None:
    """A job in a Ray worker: from the study's folder (relative paths mean the same), the
    fine-tuning under ``accelerate launch`` when it takes several processes, then the run."""
    os.chdir(folder)
    if processes > 1:
        subprocess.run([*launcher(processes), "-m", "harness", "finetune", *finetune_argv(job.config)], check=True)
    run_pipeline(job.config, job.tags)


def launcher(processes: int) -> list[str]:
    """The command that starts ``processes`` fine-tuning processes: ``accelerate launch
    --multi_gpu`` on GPUs; on CPUs torch's own launcher (what accelerate's GPU launcher calls
    too: accelerate launches several CPU processes only through MPI)."""
    if torch.cuda.is_available():
        return [
            sys.executable,
            "-m",
            "accelerate.commands.launch",
            "--multi_gpu",
            "--num_processes",
            str(processes),
            "--num_machines",
            "1",
        ]
    return [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(processes)]


def finetune_argv(config: RunConfig) -> list[str]:
    """``harness finetune``'s flags for the fine-tuning of ``config`` (same checkpoint cache key)."""
    return to_argv(config.task) + to_argv(config.finetune) + to_argv(config.environment)


def start_ray(settings: StudyConfig) -> tuple[int, int]:
    """Connect to the cluster at ``--ray-address``, or start a Ray instance on this machine for
    ``--workers`` runs at once (each with its share of the cores); returns the CPUs and GPUs
    each run asks for (GPUs only where the cluster has them)."""
    if ray is None:
        raise InputError("--engine ray needs Ray: pip install -e '.[cluster]' (or pip install ray)")
    cpus = 1 if settings.ray_address else max(1, (os.cpu_count() or 1) // settings.workers)
    if settings.ray_address:
        ray.init(address=settings.ray_address, log_to_driver=False, configure_logging=False)
    else:
        ray.init(
            num_cpus=cpus * settings.workers, include_dashboard=False, log_to_driver=False, configure_logging=False
        )
    return cpus, settings.processes_per_run if ray.cluster_resources().get("GPU", 0) else 0


def run_on_ray(jobs: list[Job], settings: StudyConfig, bar: tqdm) -> dict[str, str]:
    """Every job as a Ray task (one fresh worker process each), at most as many at once as the
    resources allow; results as they come. On Ctrl-C or SIGTERM the running tasks are
    cancelled (each run ends KILLED, as when stopped by hand) before Ray shuts down."""
    cpus, gpus = start_ray(settings)
    task = ray.remote(num_cpus=cpus, num_gpus=gpus, max_calls=1, max_retries=0)(execute)
    pending = {task.remote(job, Path.cwd(), settings.processes_per_run): job for job in jobs}
    failures = {}
    try:
        while pending:
            (done,), _ = ray.wait(list(pending), num_returns=1)
            job = pending.pop(done)
            try:
                ray.get(done)
            except ray.exceptions.RayTaskError as error:
                failures[job.label] = one_line(error.cause if error.cause is not None else error)
                tqdm.write(f"{job.label} failed: {failures[job.label]}")
            bar.set_postfix_str(job.label)
            bar.update()
    except KeyboardInterrupt:
        for reference in pending:
            ray.cancel(reference)
        ray.wait(list(pending), num_returns=len(pending), timeout=60)
        raise
    finally:
        ray.shutdown()
    return failures
