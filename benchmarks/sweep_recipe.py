"""A fine-tuning recipe sweep: learning rate x epochs x seeds per task, scored on dev against
the majority class, to choose a model's preset by measurement (issue 11: a recipe with which
the offline MiniLM clearly learns).

Each (task, learning rate, epochs, seed) is fine-tuned and evaluated exactly as ``harness
finetune`` does (the same cache and results store, so a sweep point is also a reusable
checkpoint), and appended to a JSON-lines file as soon as it is done; running the command
again skips what the file already holds. ``--table`` prints the mean and standard deviation
over seeds per task and setting, and how many seeds were clearly above the majority class;
``--keep-as LABEL`` stores the points as ``docs/results/LABEL.json``, from which ``python -m
harness docs`` rebuilds the table in docs/recipe.md.

    GLUE_DIR=../shared/data/glue python -m benchmarks.sweep_recipe --tasks rte \\
        --learning-rates 2e-5,5e-5,1e-4 --epochs 3,6 --seeds 42,1,2 --out outputs/sweep/minilm.jsonl
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from harness.analyses.evaluation import Evaluation
from harness.config import AnalysisConfig, EnvironmentConfig, FineTuneConfig, RunConfig, TaskConfig
from harness.model.finetune import finetune
from harness.present.doc_tables import RESULTS, sweep_table
from harness.results.store import write_json
from harness.run.pipeline import dev_evaluation
from harness.run.plan import plan_run


def numbers(text: str, kind: type) -> list:
    return [kind(value) for value in text.split(",")]


def point(
    task: str,
    model: str,
    learning_rate: float,
    epochs: float,
    seed: int,
    max_train: int | None,
    output_dir: Path,
    reinit_layers: int = 0,
    trajectory: list[float] | None = None,
) -> dict[str, Any]:
    """Fine-tune one sweep point (or reuse its cached checkpoint) and score it on dev; with a
    ``trajectory``, the checkpoint is the one a study with ``--trajectory`` reuses."""
    config = RunConfig(
        TaskConfig(task=task, model=model),
        FineTuneConfig(
            learning_rate=learning_rate,
            epochs=epochs,
            seed=seed,
            max_train_examples=max_train,
            reinit_layers=reinit_layers,
            trajectory=trajectory,
        ),
        AnalysisConfig(analyses=[Evaluation.name]),
        EnvironmentConfig(output_dir=output_dir),
    )
    plan = plan_run(config)
    start = time.perf_counter()
    tuned = finetune(plan.config, plan.data)
    entry = dev_evaluation(plan, tuned)
    comparison = next(iter(entry["result"]["per_pair"].values()))
    scores = entry["result"]["per_checkpoint"]["finetuned"]
    metric = comparison["main_metric"]
    return {
        "task": task,
        "model": model,
        "learning_rate": learning_rate,
        "epochs": epochs,
        "seed": seed,
        "max_train_examples": max_train,
        "reinit_layers": reinit_layers,
        "train_examples": tuned.train_examples,
        "metric": metric,
        "score": scores["metrics"][metric],
        "majority": scores["majority"][metric],
        "above_majority": comparison["against_majority"]["interval"],
        "learned": comparison["learned"],
        "final_train_loss": next((e["loss"] for e in reversed(tuned.log_history) if "loss" in e), None),
        "train_seconds": tuned.train_seconds,
        "seconds": time.perf_counter() - start,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="rte")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--learning-rates", default="2e-5,5e-5,1e-4")
    parser.add_argument("--epochs", default="3")
    parser.add_argument("--seeds", default="42,1,2")
    parser.add_argument("--max-train-examples", type=int, default=None)
    parser.add_argument(
        "--reinit-layers",
        default="0",
        help="top encoder layers (and the pooler) re-initialised before fine-tuning, a comma-separated list (0: none)",
    )
    parser.add_argument(
        "--trajectory",
        nargs="*",
        type=float,
        help="keep the model part-way through training, as "
        "`harness run --trajectory` does (alone: its "
        "default fractions), so a study reuses the points",
    )
    parser.add_argument("--output-dir", type=Path, default=Path("outputs/sweep"))
    parser.add_argument("--out", type=Path, default=Path("outputs/sweep/points.jsonl"))
    parser.add_argument("--table", action="store_true", help="print the table of the points done, run nothing")
    parser.add_argument(
        "--keep-as",
        metavar="LABEL",
        help="store the points done as docs/results/LABEL.json, whose tables `python -m harness docs` rebuilds",
    )
    args = parser.parse_args()
    done = [json.loads(line) for line in args.out.read_text().splitlines()] if args.out.is_file() else []
    if not args.table:
        have = {
            (r["task"], r["learning_rate"], r["epochs"], r["seed"], r["max_train_examples"], r.get("reinit_layers", 0))
            for r in done
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        settings = [
            (rate, epochs, reinit)
            for rate in numbers(args.learning_rates, float)
            for epochs in numbers(args.epochs, float)
            for reinit in numbers(args.reinit_layers, int)
        ]
        for task in args.tasks.split(","):
            for seed in numbers(args.seeds, int):  # seeds outermost: every setting gets a first seed early
                for rate, epochs, reinit in settings:
                    if (task, rate, epochs, seed, args.max_train_examples, reinit) in have:
                        continue
                    row = point(
                        task,
                        args.model,
                        rate,
                        epochs,
                        seed,
                        args.max_train_examples,
                        args.output_dir,
                        reinit,
                        args.trajectory,
                    )
                    done.append(row)
                    with args.out.open("a") as handle:
                        handle.write(json.dumps(row) + "\n")
                    print(json.dumps(row), flush=True)
    print(sweep_table({"points": done}))
    if args.keep_as:
        write_json(RESULTS / f"{args.keep_as}.json", {"source": {"sweep": args.out.name}, "points": done})


if __name__ == "__main__":
    main()
