"""``python -m harness``: one CLI with subcommands ``run`` and ``figures``."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from harness.config import AnalysisConfig, FineTuneConfig, RunConfig
from harness.errors import HarnessError
from harness.models import DEFAULT_MODEL

FINETUNE_DEFAULTS = FineTuneConfig()
ANALYSIS_DEFAULTS = AnalysisConfig()


def add_run_identity(parser: argparse.ArgumentParser) -> None:
    """Flags that name a run (shared by ``run`` and ``figures``)."""
    parser.add_argument("--task", required=True, help="GLUE task: cola, sst2, mrpc, stsb, qqp, mnli, qnli, rte, wnli")
    parser.add_argument("--model", default=DEFAULT_MODEL,
                        help=f"Hugging Face id or local path, or 'minilm' for the bundled offline model (default {DEFAULT_MODEL})")
    parser.add_argument("--seed", type=int, default=FINETUNE_DEFAULTS.seed)
    parser.add_argument("--output-dir", type=Path, default=Path("outputs"), help="results and figures (default outputs/)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="harness", description="What does fine-tuning do to BERT's attention?")
    parser.add_argument("--debug", action="store_true", help="show tracebacks and library warnings")
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="fine-tune, compare attention of both checkpoints, track in MLflow")
    add_run_identity(run)
    run.add_argument("--data-dir", type=Path, help="GLUE TSV folder (default $GLUE_DIR; else `datasets` from the hub)")
    run.add_argument("--cache-dir", type=Path, default=Path(".cache/checkpoints"), help="fine-tuned checkpoint cache")
    run.add_argument("--tracking-uri", help="MLflow tracking URI (default $MLFLOW_TRACKING_URI or sqlite:///mlruns/mlflow.db)")
    run.add_argument("--device", help="cpu, cuda, cuda:1 ... (default: cuda if available)")
    run.add_argument("--precision", choices=["fp32", "bf16", "fp16"], default="fp32", help="bf16/fp16 apply on GPU only")
    tuning = run.add_argument_group("fine-tuning (Kovaleva et al.: batch 32, 3 epochs)")
    tuning.add_argument("--epochs", type=float, default=FINETUNE_DEFAULTS.epochs)
    tuning.add_argument("--batch-size", type=int, default=FINETUNE_DEFAULTS.batch_size)
    tuning.add_argument("--learning-rate", type=float, default=FINETUNE_DEFAULTS.learning_rate)
    tuning.add_argument("--warmup-ratio", type=float, default=FINETUNE_DEFAULTS.warmup_ratio)
    tuning.add_argument("--max-length", type=int, default=FINETUNE_DEFAULTS.max_length, help="tokens per input")
    tuning.add_argument("--group-by-length", action="store_true",
                        help="batch examples of similar length (less padding, faster; not the papers' random order)")
    tuning.add_argument("--max-train-examples", type=int, help="seeded subset of the training set, for quick runs")
    analysis = run.add_argument_group("analyses")
    analysis.add_argument("--analyses", nargs="+", help="subset of analyses to run (default: all)")
    analysis.add_argument("--max-eval-examples", type=int, default=ANALYSIS_DEFAULTS.max_eval_examples,
                          help="seeded sample of the dev set (default 1000, as Kovaleva et al.)")
    analysis.add_argument("--eval-batch-size", type=int, default=ANALYSIS_DEFAULTS.eval_batch_size)
    analysis.add_argument("--corpus", type=Path, help="plain text (one paragraph a line) for the surface analyses")
    analysis.add_argument("--syntax-data", type=Path, help="treebank (.conllu or .conllx)")
    analysis.add_argument("--syntax-train-data", type=Path,
                          help="probe training treebank (default: the --syntax-data file with 'train' for 'dev')")
    analysis.add_argument("--syntax-min-count", type=int, default=ANALYSIS_DEFAULTS.syntax_min_count,
                          help="drop dependency relations with fewer scored dependents (default 100, as Clark)")
    analysis.add_argument("--probe-train-sentences", type=int, default=ANALYSIS_DEFAULTS.probe_train_sentences,
                          help="seeded sample of training sentences for the attention probes")
    analysis.add_argument("--coref-data", type=Path, help="coreference data (*_conll, .jsonlines, LitBank folder)")
    analysis.add_argument("--coref-windows", action="store_true",
                          help="score coreference over whole documents cut into sentence windows, "
                               "instead of only their first --max-tokens tokens (Clark)")
    analysis.add_argument("--max-tokens", type=int, default=ANALYSIS_DEFAULTS.max_tokens,
                          help="truncation of word-level inputs (Clark et al. used 128)")
    analysis.add_argument("--word-attention-from", choices=["mean", "first"], default=ANALYSIS_DEFAULTS.word_attention_from,
                          help="attention from a split word: mean of its sub-tokens, or the first (Clark's code)")

    analysis.add_argument("--pattern-weights", type=Path,
                          help="attention-pattern CNN weights from `python -m classifier train` (default: shipped)")
    analysis.add_argument("--clustering-tokens", type=int, default=ANALYSIS_DEFAULTS.clustering_tokens_per_example,
                          help="tokens sampled per example for the Jensen-Shannon head distances")

    figures = commands.add_parser("figures", help="redraw the figures of a finished run from its summary.json")
    add_run_identity(figures)
    return parser


def run_config(args: argparse.Namespace) -> RunConfig:
    return RunConfig(
        task=args.task, model=args.model, data_dir=args.data_dir, output_dir=args.output_dir,
        cache_dir=args.cache_dir, tracking_uri=args.tracking_uri, device=args.device, precision=args.precision,
        finetune=FineTuneConfig(
            batch_size=args.batch_size, epochs=args.epochs, learning_rate=args.learning_rate,
            warmup_ratio=args.warmup_ratio, max_length=args.max_length,
            max_train_examples=args.max_train_examples, seed=args.seed, group_by_length=args.group_by_length),
        analysis=AnalysisConfig(
            analyses=args.analyses, max_eval_examples=args.max_eval_examples,
            eval_batch_size=args.eval_batch_size, max_length=args.max_length, corpus=args.corpus,
            syntax_data=args.syntax_data, syntax_train_data=args.syntax_train_data,
            syntax_min_count=args.syntax_min_count, probe_train_sentences=args.probe_train_sentences,
            coref_data=args.coref_data, coref_windows=args.coref_windows,
            max_tokens=args.max_tokens,
            word_attention_from=args.word_attention_from,
            pattern_weights=args.pattern_weights, clustering_tokens_per_example=args.clustering_tokens),
    )


def command_run(args: argparse.Namespace) -> None:
    from harness.pipeline import run

    config = run_config(args)
    summary = run(config)
    print(f"done: {config.run_dir / 'summary.json'}")
    for checkpoint, scores in summary["dev_metrics"].items():
        print(f"  dev {checkpoint}: " + ", ".join(f"{k} {v:.4f}" for k, v in scores.items()))
    if "cosine_per_layer" in summary:
        print("  cosine per layer: " + " ".join(f"{v:.3f}" for v in summary["cosine_per_layer"]))


def command_figures(args: argparse.Namespace) -> None:
    from harness.figures import redraw
    from tasks import get_task

    config = RunConfig(task=get_task(args.task).name, model=args.model, output_dir=args.output_dir)
    config.finetune.seed = args.seed
    path = config.run_dir / "summary.json"
    if not path.is_file():
        raise HarnessError(f"{path} not found; run `python -m harness run --task {args.task} "
                           f"--model {args.model}` first (or pass the same --output-dir/--seed)")
    for figure in redraw(json.loads(path.read_text()), config.run_dir / "figures"):
        print(figure)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not args.debug:  # keep the terminal to progress bars and results
        import transformers

        transformers.logging.set_verbosity_error()
        logging.getLogger("mlflow").setLevel(logging.WARNING)
    try:
        {"run": command_run, "figures": command_figures}[args.command](args)
    except HarnessError as error:
        if args.debug:
            raise
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: re-run the same command to resume (finished work is kept)", file=sys.stderr)
        return 130
    return 0
