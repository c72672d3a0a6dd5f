"""Labelling real attention maps: show a pool of them, record the labels.

A candidate pool (sampled from a model by ``harness annotate``, see `harness.run.annotation`)
is written by `write_pool`: ``candidates.tsv`` (sources), ``candidates.npz`` (maps) and
contact sheets ``sheet_NNN.png`` (5 x 5 maps, the id above each, [SEP] positions ticked in
red so two-segment blocks can be judged). The annotator looks at the sheets and writes
``<id> <class>`` lines; `record` adds the labelled maps to the package data
(`classifier.data`). `label_interactively` asks for those lines at the terminal instead.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import PowerNorm

from classifier.data import (
    CLASSES,
    LABELS_FILE,
    MAPS_FILE,
    LabelledMap,
    MapSource,
    read_labels,
    read_maps,
    read_sources,
    write_maps,
    write_rows,
)
from classifier.features import NO_SECOND_SEGMENT, map_features
from tasks.files import atomic_path

SHEET_SIDE = 5
SHORT_NAMES = {"v": "vertical", "d": "diagonal", "vd": "vertical+diagonal", "b": "block", "h": "heterogeneous"}
SKIP = {"skip", "?", "-"}


def write_pool(
    out_dir: Path, sources: list[MapSource], maps: dict[str, np.ndarray], separators: dict[str, list[int]]
) -> list[Path]:
    """Write the candidate pool and its contact sheets; returns the sheet files."""
    out_dir.mkdir(parents=True, exist_ok=True)
    write_rows(out_dir / "candidates.tsv", sources)
    write_maps(out_dir / "candidates.npz", maps)
    per_sheet = SHEET_SIDE * SHEET_SIDE
    return [
        draw_sheet(
            sources[start : start + per_sheet], maps, separators, out_dir / f"sheet_{start // per_sheet:03d}.png"
        )
        for start in range(0, len(sources), per_sheet)
    ]


def separator_ticks(source: MapSource) -> list[int]:
    """The [SEP] positions of a map's input, from where its second segment starts and its length."""
    middle = [source.second_segment - 1] if source.second_segment != NO_SECOND_SEGMENT else []
    return [*middle, source.length - 1]


def draw_sheet(
    sources: Sequence[MapSource],
    maps: dict[str, np.ndarray],
    separators: dict[str, list[int]],
    path: Path,
    title: str | None = None,
) -> Path:
    """Up to 5 x 5 maps, each titled with its id, layer/head (1-indexed), length and the
    guideline's measurements (`classifier.features`: band lift, columns, band, rest peak, within segments).

    Drawn at the pixel size it is viewed at (no rescaling by the viewer hides one-token lines),
    on a square-root scale so that weak but structured attention shows.
    """
    rows = math.ceil(len(sources) / SHEET_SIDE)
    figure, axes = plt.subplots(rows, SHEET_SIDE, figsize=(2.2 * SHEET_SIDE, 2.4 * rows), squeeze=False)
    for axis in axes.flat:
        axis.axis("off")
    for axis, source in zip(axes.flat, sources):
        attention = maps[source.id]
        axis.imshow(
            attention,
            cmap="Greys",
            norm=PowerNorm(0.5, vmin=0, vmax=max(float(attention.max()), 1e-6)),
            interpolation="nearest",
        )
        for position in separators.get(source.id, []):
            axis.plot([position], [-1.5], marker="v", color="red", markersize=3, clip_on=False)
        measured = map_features(attention, source.second_segment)
        within = "" if measured.within_segments is None else f" seg {measured.within_segments:.2f}"
        head = f"L{source.layer + 1}H{source.head + 1}"
        axis.set_title(
            f"{source.id}  {head} n={source.length} lift {measured.band_lift:.1f}\n"
            f"col {measured.columns:.2f} band {measured.band:.2f} peak {measured.rest_peak:.2f}{within}",
            fontsize=8,
        )
    figure.suptitle(title or f"{path.stem}: classes v d vd b h (red: [SEP])", fontsize=9)
    figure.tight_layout()
    with atomic_path(path) as temporary:
        figure.savefig(temporary, dpi=100, format="png")
    plt.close(figure)
    return path


def parse_label_lines(lines: list[str], where: str) -> dict[str, str]:
    """``<id> <class>`` lines (class as its name or v/d/vd/b/h; skip/?/- to leave out) -> id: class."""
    labels = {}
    for number, line in enumerate(lines, start=1):
        parts = line.split("#", 1)[0].split()
        if not parts:
            continue
        if len(parts) != 2:
            raise ValueError(f"{where}:{number}: expected '<id> <class>', got {line.strip()!r}")
        map_id, name = parts
        if name in SKIP:
            continue
        label = SHORT_NAMES.get(name, name)
        if label not in CLASSES:
            raise ValueError(
                f"{where}:{number}: {name!r} is not a class; use one of {', '.join(CLASSES)} or {'/'.join(SHORT_NAMES)}"
            )
        labels[map_id] = label
    return labels


def record(pool_dir: Path, labels: dict[str, str], labels_file: Path = LABELS_FILE, maps_file: Path = MAPS_FILE) -> int:
    """Add the labelled maps of a pool to the label file and map store; returns how many were added.

    Relabelling an id already stored replaces its label.
    """
    sources = {source.id: source for source in read_sources(pool_dir / "candidates.tsv")}
    unknown = sorted(set(labels) - set(sources))
    if unknown:
        raise ValueError(f"ids not in {pool_dir / 'candidates.tsv'}: {', '.join(unknown[:5])}")
    pool_maps = read_maps(pool_dir / "candidates.npz")
    stored = {row.id: row for row in read_labels(labels_file)} if labels_file.exists() else {}
    stored_maps = read_maps(maps_file) if maps_file.exists() else {}
    for map_id, label in labels.items():
        stored[map_id] = LabelledMap(**vars(sources[map_id]), label=label)
        stored_maps[map_id] = pool_maps[map_id]
    write_rows(labels_file, list(stored.values()))
    write_maps(maps_file, stored_maps)
    return len(labels)


def label_interactively(sheets: list[Path], sources: list[MapSource]) -> dict[str, str]:
    """Ask at the terminal for the class of each map, sheet by sheet (open the PNG to look)."""
    labels: dict[str, str] = {}
    per_sheet = SHEET_SIDE * SHEET_SIDE
    for number, sheet in enumerate(sheets):
        print(f"open {sheet}  (classes: {', '.join(f'{k}={v}' for k, v in SHORT_NAMES.items())}; skip with ?)")
        for source in sources[number * per_sheet : (number + 1) * per_sheet]:
            while True:
                answer = input(f"{source.id}: ").strip()
                try:
                    labels.update(parse_label_lines([f"{source.id} {answer}"], "input"))
                    break
                except ValueError as error:
                    print(error)
    return labels
