"""``python -m classifier train|predict``: train the CNN on the labelled maps, classify maps.

Maps are sampled for labelling from a model with ``python -m harness annotate``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from classifier.model import WEIGHTS_FILE, load_classifier
from classifier.train import DEFAULT_TRACKING_URI, TrainConfig, run


def _train(args: argparse.Namespace) -> None:
    run(TrainConfig(epochs=args.epochs, synthetic_per_class=args.synthetic_per_class, seed=args.seed,
                    test_fraction=args.test_fraction, out=args.out), args.tracking_uri)


def _predict(args: argparse.Namespace) -> None:
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
    try:
        args.run(args)
    except (ValueError, FileNotFoundError) as error:
        sys.exit(f"error: {error}")


if __name__ == "__main__":
    main()
