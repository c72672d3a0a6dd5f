"""The labelled real maps: a plain TSV of labels and sources, and the maps in one ``.npz``.

``labels.tsv`` has one row per map (columns `COLUMNS`): its id, its class, and where it
comes from (model, checkpoint, fine-tune key, task, split, example index and guid, layer
and head, 0-indexed, the number of real tokens, and where the input's second segment starts,
-1 for single-segment inputs). ``maps.npz`` holds each map under
its id, cropped to the real tokens, as float16.
"""

from __future__ import annotations

import csv
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TypeVar

import numpy as np

from tasks.files import atomic_path

CLASSES = ("vertical", "diagonal", "vertical+diagonal", "block", "heterogeneous")
DATA_DIR = Path(__file__).resolve().parent / "data"
LABELS_FILE = DATA_DIR / "labels.tsv"
MAPS_FILE = DATA_DIR / "maps.npz"
LENGTH_BANDS = (16, 32, 64)  # upper ends (tokens) of the short input-length bands; the last holds every longer input
Item = TypeVar("Item")


def length_band(length: int) -> int:
    """Index of the `LENGTH_BANDS` band of an input of ``length`` tokens."""
    return bisect_left(LENGTH_BANDS, length)


def band_name(band: int) -> str:
    """``"<=16"``, ``"17-32"``, ``"33-64"``, ``">64"`` for `LENGTH_BANDS` (16, 32, 64)."""
    if band == 0:
        return f"<={LENGTH_BANDS[0]}"
    if band == len(LENGTH_BANDS):
        return f">{LENGTH_BANDS[-1]}"
    return f"{LENGTH_BANDS[band - 1] + 1}-{LENGTH_BANDS[band]}"


def draw_evenly(groups: Sequence[Sequence[Item]], count: int, rng: np.random.Generator) -> list[Item]:
    """Up to ``count`` items drawn at random, in turn from each group that has items left, so
    every group is equally represented where it has enough."""
    pools = [[group[i] for i in rng.permutation(len(group))] for group in groups]
    chosen: list[Item] = []
    while len(chosen) < count and any(pools):
        for pool in pools:
            if pool and len(chosen) < count:
                chosen.append(pool.pop())
    return chosen


@dataclass(frozen=True)
class MapSource:
    """Where one attention map comes from, enough to regenerate it exactly."""

    id: str
    model: str  # alias or path of the pre-trained model
    checkpoint: str  # "pretrained" or "finetuned"
    finetune_key: str  # FineTuneConfig.cache_key of the fine-tuned run, "-" for pre-trained
    task: str
    split: str
    example_index: int  # position in the split as `tasks.load_examples` returns it
    guid: str
    layer: int  # 0-indexed
    head: int  # 0-indexed
    length: int  # real tokens (map is length x length)
    second_segment: int  # first token of the input's second segment; -1 for a single-segment input


@dataclass(frozen=True)
class LabelledMap(MapSource):
    label: str = ""


COLUMNS = [field.name for field in fields(LabelledMap)]
_INTEGER_COLUMNS = {"example_index", "layer", "head", "length", "second_segment"}


def read_sources(path: Path) -> list[MapSource]:
    """Rows of a candidates file (the `MapSource` columns, no label)."""
    return [MapSource(**row) for row in _read_rows(path, [field.name for field in fields(MapSource)])]


def read_labels(path: Path = LABELS_FILE) -> list[LabelledMap]:
    """Every labelled map of ``path``; a bad row raises ValueError naming the file and line."""
    rows = []
    for line, row in enumerate(_read_rows(path, COLUMNS), start=2):
        if row["label"] not in CLASSES:
            raise ValueError(f"{path}:{line}: label {row['label']!r} is not one of {', '.join(CLASSES)}")
        rows.append(LabelledMap(**row))
    return rows


def _read_rows(path: Path, columns: list[str]) -> list[dict]:
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle, delimiter="\t")
        if reader.fieldnames != columns:
            raise ValueError(f"{path}:1: header {reader.fieldnames} should be {columns}")
        return [{key: int(value) if key in _INTEGER_COLUMNS else value for key, value in row.items()} for row in reader]


def write_rows(path: Path, rows: Sequence[MapSource]) -> None:
    """Write sources or labelled maps as TSV with a header."""
    columns = [field.name for field in fields(rows[0])] if rows else COLUMNS
    with atomic_path(path) as temporary, temporary.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, delimiter="\t", lineterminator="\n")
        writer.writeheader()
        writer.writerows(asdict(row) for row in rows)


def read_maps(path: Path = MAPS_FILE) -> dict[str, np.ndarray]:
    """Every stored map by id, as float32 (n, n)."""
    with np.load(path) as stored:
        return {key: stored[key].astype(np.float32) for key in stored.files}


def write_maps(path: Path, maps: dict[str, np.ndarray]) -> None:
    """Store maps compressed, as float16 (attention weights need no more precision to be seen)."""
    with atomic_path(path) as temporary:
        # numpy's stub lets a key of ``**`` arrays match its ``allow_pickle`` flag; every key here is a map's id
        np.savez_compressed(temporary, **{key: value.astype(np.float16) for key, value in maps.items()})  # type: ignore[arg-type]
