"""``python -m classifier annotate|train|predict``: label maps, train the CNN, classify maps."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _annotate(args: argparse.Namespace) -> None:
    from classifier.annotate import (SampleRequest, label_interactively, parse_label_lines, record,
                                     sample_maps, write_pool)
    from classifier.data import read_sources

    if args.labels:
        labels = parse_label_lines(args.labels.read_text().splitlines(), str(args.labels))
        added = record(args.out, labels)
        print(f"recorded {added} labelled maps from {args.out}")
        return
    load_from, finetune_key = args.model, "-"
    if args.checkpoint == "finetuned":
        load_from, finetune_key = _finetuned(args)
    request = SampleRequest(model=args.model, load_from=load_from, checkpoint=args.checkpoint,
                            finetune_key=finetune_key, task=args.task, count=args.count, seed=args.seed,
                            prefix=args.prefix, data_dir=args.data_dir,
                            heads=_heads(args))
    sources, maps, separators = sample_maps(request)
    sheets = write_pool(args.out, sources, maps, separators)
    print(f"wrote {len(sources)} candidate maps and {len(sheets)} sheets to {args.out}")
    if args.interactive:
        added = record(args.out, label_interactively(sheets, read_sources(args.out / "candidates.tsv")))
        print(f"recorded {added} labelled maps")


def _heads(args: argparse.Namespace) -> list[tuple[int, int]] | None:
    """0-indexed (layer, head) pairs from --heads L:H ... or --layers L ... (1-indexed)."""
    if args.heads:
        return [(int(layer) - 1, int(head) - 1) for layer, head in (pair.split(":") for pair in args.heads)]
    if args.layers:
        from harness.models import resolve_model
        from transformers import AutoConfig

        num_heads = AutoConfig.from_pretrained(resolve_model(args.model)).num_attention_heads
        return [(layer - 1, head) for layer in args.layers for head in range(num_heads)]
    return None


def _finetuned(args: argparse.Namespace) -> tuple[str, str]:
    """The fine-tuned checkpoint folder (trained now, or reused from the cache) and its key."""
    from harness.config import FineTuneConfig, RunConfig
    from harness.finetune import finetune
    from tasks import get_task

    settings = FineTuneConfig(epochs=args.finetune_epochs, max_train_examples=args.finetune_examples)
    config = RunConfig(task=args.task, model=args.model, data_dir=args.data_dir, device="cpu", finetune=settings)
    result = finetune(config, get_task(args.task))
    return str(result.checkpoint_dir), settings.cache_key(args.model, args.task)


def _train(args: argparse.Namespace) -> None:
    from classifier.train import TrainConfig, run

    run(TrainConfig(epochs=args.epochs, synthetic_per_class=args.synthetic_per_class, seed=args.seed,
                    test_fraction=args.test_fraction, out=args.out), args.tracking_uri)


def _predict(args: argparse.Namespace) -> None:
    import numpy as np

    from classifier import load_classifier

    with np.load(args.file) as stored:
        names = list(stored.files)
        maps = [stored[name].astype(np.float32) for name in names]
    for name, attention in zip(names, maps):
        if attention.ndim != 2 or attention.shape[0] != attention.shape[1] or attention.shape[0] < 2:
            raise ValueError(f"{args.file}: array {name!r} has shape {attention.shape}; "
                             "each array must be one square attention map (n x n, n >= 2)")
    for name, label in zip(names, load_classifier(args.weights).predict(maps)):
        print(f"{name}\t{label}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m classifier", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    annotate = commands.add_parser(
        "annotate", help="sample maps into contact sheets, then record labels",
        description="Without --labels: sample COUNT maps of MODEL on TASK's dev set into OUT "
                    "(candidates.tsv, candidates.npz, sheet_NNN.png). With --labels FILE "
                    "('<id> <class>' lines, class as name or v/d/vd/b/h): add them to classifier/data.")
    annotate.add_argument("--out", type=Path, required=True, help="candidate pool folder")
    annotate.add_argument("--labels", type=Path, help="record these labels for the pool in --out")
    annotate.add_argument("--model", default="minilm")
    annotate.add_argument("--task", default="rte")
    annotate.add_argument("--checkpoint", choices=["pretrained", "finetuned"], default="pretrained")
    annotate.add_argument("--finetune-examples", type=int, default=500,
                          help="train examples for a quick fine-tune (finetuned checkpoint)")
    annotate.add_argument("--finetune-epochs", type=float, default=1.0)
    annotate.add_argument("--count", type=int, default=50)
    annotate.add_argument("--seed", type=int, default=0)
    annotate.add_argument("--prefix", default="m", help="id prefix, unique per pool")
    annotate.add_argument("--layers", type=int, nargs="+", help="1-indexed layers to draw from (default all)")
    annotate.add_argument("--heads", nargs="+", metavar="L:H", help="1-indexed layer:head pairs to draw from")
    annotate.add_argument("--data-dir", type=Path, help="GLUE folder (default $GLUE_DIR)")
    annotate.add_argument("--interactive", action="store_true", help="ask for labels at the terminal")
    annotate.set_defaults(run=_annotate)

    from classifier.model import WEIGHTS_FILE
    from harness.config import DEFAULT_TRACKING_URI

    train = commands.add_parser("train", help="train the CNN, report held-out scores, log to MLflow")
    train.add_argument("--epochs", type=int, default=30)
    train.add_argument("--synthetic-per-class", type=int, default=800)
    train.add_argument("--test-fraction", type=float, default=0.25)
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--out", type=Path, default=WEIGHTS_FILE, help="where to write the weights")
    train.add_argument("--tracking-uri", default=DEFAULT_TRACKING_URI)
    train.set_defaults(run=_train)

    predict = commands.add_parser("predict", help="print '<name> <class>' for each map of an .npz file")
    predict.add_argument("file", type=Path, help=".npz of square 2-D attention maps")
    predict.add_argument("--weights", type=Path, default=WEIGHTS_FILE)
    predict.set_defaults(run=_predict)

    args = parser.parse_args(argv)
    from harness.errors import HarnessError

    try:
        args.run(args)
    except (HarnessError, ValueError, FileNotFoundError) as error:
        sys.exit(f"error: {error}")


if __name__ == "__main__":
    main()
