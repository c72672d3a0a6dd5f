"""Whole-process wall time of a short ``harness run`` against the peer baseline
(`benchmarks.peer_trainer`: the plain Trainer recipe padding every example to 128), on the
same model and training examples, alternating, median of three; fresh checkpoint caches and
results stores every time, one MLflow store for all harness rounds (as a user's ``mlruns/``:
creating a new SQLite store costs about 2 s, paid by the first round only).

    GLUE_DIR=../shared/data/glue python -m benchmarks.bench_run --train-examples 1024

The harness run also measures the cosine analysis on the dev sample and logs to MLflow; the
baseline only trains and evaluates, so the ratio is conservative.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def harness_command(args: argparse.Namespace, root: Path, tracking: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "harness",
        "run",
        "--task",
        args.task,
        "--model",
        args.model,
        "--max-train-examples",
        str(args.train_examples),
        "--epochs",
        "1",
        "--analyses",
        "cosine",
        "--output-dir",
        str(root / "out"),
        "--cache-dir",
        str(root / "cache"),
        "--tracking-uri",
        f"sqlite:///{tracking}/mlflow.db",
        *args.harness_flags,
    ]


def peer_command(args: argparse.Namespace, root: Path, tracking: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "benchmarks.peer_trainer",
        "--task",
        args.task,
        "--model",
        args.model,
        "--train-examples",
        str(args.train_examples),
    ]


def seconds(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="rte")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--train-examples", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--harness-flags",
        nargs=argparse.REMAINDER,
        default=[],
        help="extra flags for harness run, e.g. --precision fp32 --random-order",
    )
    args = parser.parse_args()
    times: dict[str, list[float]] = {"harness": [], "peer_pad_to_128": []}
    with tempfile.TemporaryDirectory() as tracking:
        for _ in range(args.rounds):
            for name, build in (("peer_pad_to_128", peer_command), ("harness", harness_command)):
                with tempfile.TemporaryDirectory() as folder:
                    times[name].append(seconds(build(args, Path(folder), Path(tracking))))
                print(name, f"{times[name][-1]:.1f} s", file=sys.stderr, flush=True)
    medians = {name: statistics.median(values) for name, values in times.items()}
    print(
        json.dumps(
            {
                "seconds": times,
                "median_seconds": medians,
                "speedup_vs_peer": medians["peer_pad_to_128"] / medians["harness"],
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
