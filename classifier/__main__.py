"""``python -m classifier train|crossval|guideline|second-pass|agreement|predict``: train the pattern
classifier (boosted trees on the maps' measurements, or the paper's CNN) on the labelled maps,
cross-validate its recipe grouped by task and by input, check the labels against the
guideline's lines and draw examples of them, draw a second labelling pass and measure its
agreement, classify maps.

Maps are sampled for labelling from a model with ``python -m harness annotate``."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from classifier.agreement import AGREEMENT_FILE, agreement_table, draw_second_pass, record_agreement
from classifier.crossval import CROSSVAL_FILE, GROUPINGS, cross_validate, report_table, save_reports
from classifier.data import LABELS_FILE, read_labels, read_maps, write_rows
from classifier.features import NO_SECOND_SEGMENT
from classifier.guideline import LINES, draw_examples, misplaced, relabel
from classifier.model import WEIGHTS_FILE, load_classifier
from classifier.train import DEFAULT_TRACKING_URI, KINDS, TrainConfig, run
from tasks.collector import exit_uncollected

SEGMENT_SUFFIX = "_second_segment"  # the npz array giving a map's second segment for `predict`


def _recipe(args: argparse.Namespace) -> TrainConfig:
    return TrainConfig(
        kind=args.kind,
        tree_depth=args.tree_depth,
        tree_rounds=args.tree_rounds,
        epochs=args.epochs,
        synthetic_per_class=args.synthetic_per_class,
        synthetic_max_length=args.synthetic_max_length,
        seed=args.seed,
    )


def _train(args: argparse.Namespace) -> None:
    run(replace(_recipe(args), test_fraction=args.test_fraction, out=args.out), args.tracking_uri)


def _crossval(args: argparse.Namespace) -> None:
    recipe = _recipe(args)
    if recipe.kind != "trees" and "task-nested" in args.by:  # say so before hours of folds, not after
        raise SystemExit(
            "classifier crossval: nested selection chooses among tree recipes; "
            f"pass --by task input with --kind {recipe.kind}"
        )
    reports = [cross_validate(recipe, grouping) for grouping in args.by]
    for report in reports:
        print(report_table(report), end="\n\n")
    print(f"written to {save_reports(reports, args.out)}")


def _guideline(args: argparse.Namespace) -> None:
    rows, maps = read_labels(), read_maps()
    for row, side in misplaced(rows, maps):
        print(f"{row.id}\tlabelled {row.label}\tthe guideline's line says {side}")
    if args.relabel:
        rows, moved = relabel(rows, maps)
        write_rows(LABELS_FILE, rows)
        print(f"moved {moved} labels to their side of the lines in {LABELS_FILE}")
    for line in LINES:
        print(f"{line.name}: {draw_examples(line, rows, maps, args.out / f'line_{line.name}.png')}")


def _second_pass(args: argparse.Namespace) -> None:
    sheets = draw_second_pass(read_labels(), read_maps(), args.count, args.seed, args.out)
    print(f"wrote {args.count} labelled maps without their labels and {len(sheets)} sheets to {args.out}")


def _agreement(args: argparse.Namespace) -> None:
    print(agreement_table(record_agreement(args.labels)))
    print(f"written to {AGREEMENT_FILE}")


def _add_recipe(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kind",
        choices=KINDS,
        default="trees",
        help="boosted trees on the maps' measurements (shipped) or the paper's CNN",
    )
    parser.add_argument("--tree-depth", type=int, default=TrainConfig.tree_depth)
    parser.add_argument("--tree-rounds", type=int, default=TrainConfig.tree_rounds)
    parser.add_argument("--epochs", type=int, default=TrainConfig.epochs, help="CNN only")
    parser.add_argument(
        "--synthetic-per-class",
        type=int,
        help="synthetic maps of each class beside the real ones (default: 100 for trees, 800 for the CNN)",
    )
    parser.add_argument(
        "--synthetic-max-length",
        type=int,
        help="tokens of the longest synthetic map (default: 320 for trees, 128 for the CNN)",
    )
    parser.add_argument("--seed", type=int, default=TrainConfig.seed)


def _predict(args: argparse.Namespace) -> None:
    with np.load(args.file) as stored:
        names = [name for name in stored.files if not name.endswith(SEGMENT_SUFFIX)]
        maps = [stored[name].astype(np.float32) for name in names]
        segments = [
            int(stored[name + SEGMENT_SUFFIX]) if name + SEGMENT_SUFFIX in stored.files else NO_SECOND_SEGMENT
            for name in names
        ]
    for name, attention in zip(names, maps):
        if attention.ndim != 2 or attention.shape[0] != attention.shape[1] or attention.shape[0] < 2:
            raise ValueError(
                f"{args.file}: array {name!r} has shape {attention.shape}; "
                "each array must be one square attention map (n x n, n >= 2)"
            )
    for name, label in zip(names, load_classifier(args.weights).predict(maps, segments)):
        print(f"{name}\t{label}")


def main(argv: list[str] | None = None) -> None:
    """The ``python -m classifier`` command line; a `ValueError` or missing file exits with its message."""
    parser = argparse.ArgumentParser(prog="python -m classifier", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    train = commands.add_parser("train", help="train the classifier, report held-out scores, log to MLflow")
    _add_recipe(train)
    train.add_argument("--test-fraction", type=float, default=0.25)
    train.add_argument("--out", type=Path, default=WEIGHTS_FILE, help="where to write the weights")
    train.add_argument("--tracking-uri", default=DEFAULT_TRACKING_URI)
    train.set_defaults(run=_train)

    crossval = commands.add_parser(
        "crossval",
        help="cross-validate the training recipe grouped by task and by "
        "input: macro-F1 with intervals, per task and length band",
    )
    _add_recipe(crossval)
    crossval.add_argument(
        "--by",
        nargs="+",
        choices=GROUPINGS,
        default=list(GROUPINGS),
        help="groupings to score (task-nested: trees only, about 10 minutes on 2 cores)",
    )
    crossval.add_argument("--out", type=Path, default=CROSSVAL_FILE, help="where to write the reports (JSON)")
    crossval.set_defaults(run=_crossval)

    guideline = commands.add_parser(
        "guideline", help="list labelled maps on the wrong side of a guideline line; draw the maps nearest each line"
    )
    guideline.add_argument("--out", type=Path, default=Path("docs/figures"), help="folder for the example sheets")
    guideline.add_argument(
        "--relabel",
        action="store_true",
        help="move the labels on the wrong side of a line to the side it gives, in the label file",
    )
    guideline.set_defaults(run=_guideline)

    second_pass = commands.add_parser(
        "second-pass",
        help="draw labelled maps, evenly over tasks, into a pool without their labels, for a second labeller",
    )
    second_pass.add_argument("--count", type=int, default=200)
    second_pass.add_argument("--seed", type=int, default=0)
    second_pass.add_argument("--out", type=Path, required=True, help="pool folder (candidates and sheets)")
    second_pass.set_defaults(run=_second_pass)

    agreement = commands.add_parser("agreement", help="Cohen's kappa of a second labelling pass with the labels")
    agreement.add_argument("labels", type=Path, help="the second pass's '<id> <class>' lines")
    agreement.set_defaults(run=_agreement)

    predict = commands.add_parser("predict", help="print '<name> <class>' for each map of an .npz file")
    predict.add_argument(
        "file",
        type=Path,
        help=f".npz of square 2-D attention maps; a map of a sentence pair comes with an integer "
        f"'<name>{SEGMENT_SUFFIX}' (its second segment's first token), else it is taken as "
        f"one segment (never block)",
    )
    predict.add_argument("--weights", type=Path, default=WEIGHTS_FILE)
    predict.set_defaults(run=_predict)

    args = parser.parse_args(argv)
    try:
        args.run(args)
    except (ValueError, FileNotFoundError) as error:
        sys.exit(f"error: {error}")


if __name__ == "__main__":
    main()
    exit_uncollected(0)
