"""Attention maps of single inputs as arrays, and the page that shows a run's typed inputs.

A run keeps the maps of a few seeded dev examples (the ``examples`` analysis, in its summary) and
of every input typed to ``harness maps`` (one JSON file each in the run's ``maps/`` folder,
`harness.run.maps`); both are stored as `harness.views.examples.ENCODING`'s text (three
decimals). `run_inputs` reads them back as `InputMaps`, numpy arrays of (layers, heads,
tokens, tokens) per checkpoint; `write_page` shows the typed ones in the report's per-example
view, a page of its own. Nothing here loads a model.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import NotRequired, TypedDict

import numpy as np

from harness.present.report import ViewData, render
from harness.results.checkpoints import FINETUNED, PAIRS, PRETRAINED
from harness.results.entries import decoded
from harness.results.store import key_of, read_json
from harness.results.summary import SUMMARY
from harness.views.base import per_checkpoint_results
from harness.views.examples import ExamplesEntry, ExamplesView, decode_maps, encode_maps, head_cosines
from harness.views.titles import checkpoint_title
from tasks.files import atomic_write_text

MAPS_FOLDER = "maps"  # in a run's folder: one JSON file per typed input, and the page
PAGE = "index.html"


class TypedInput(TypedDict):
    """One typed input as stored: its texts and tokens, whether it was cut to the run's
    ``--max-length``, the model's shape and each checkpoint's maps (encoded)."""

    text_a: str
    text_b: str | None
    tokens: list[str]
    truncated: bool
    num_layers: int
    num_heads: int
    maps: dict[str, str]
    predictions: NotRequired[dict[str, str]]  # each checkpoint's prediction, as `harness maps` says it


@dataclass
class InputMaps:
    """One input's attention through a run's checkpoints: ``maps[checkpoint]`` is (layers, heads,
    tokens, tokens), row i the attention of token i over the tokens (each row sums to 1)."""

    text_a: str
    text_b: str | None
    tokens: list[str]
    maps: dict[str, np.ndarray]
    truncated: bool = False
    predictions: dict[str, str] = field(default_factory=dict)  # each checkpoint's: "pos (0.91)", a score, tags

    def change(self, before: str = PRETRAINED, after: str = FINETUNED) -> np.ndarray:
        """``after``'s maps minus ``before``'s: (layers, heads, tokens, tokens)."""
        return self.maps[after] - self.maps[before]

    def head_cosines(self, before: str = PRETRAINED, after: str = FINETUNED) -> np.ndarray:
        """(layers, heads) cosine of each head's two maps: 1 where a head attends as it did."""
        return head_cosines(self.maps[before], self.maps[after])

    def most_changed(self, before: str = PRETRAINED, after: str = FINETUNED) -> tuple[int, int, float]:
        """The head (layer and head, 1-indexed) whose two maps are least alike, and their cosine."""
        cosine = self.head_cosines(before, after)
        layer, head = np.unravel_index(int(np.argmin(cosine)), cosine.shape)
        return int(layer) + 1, int(head) + 1, float(cosine[layer, head])

    def stored(self) -> TypedInput:
        """The input as `write_input` stores it."""
        layers, heads = next(iter(self.maps.values())).shape[:2]
        return {
            "text_a": self.text_a,
            "text_b": self.text_b,
            "tokens": self.tokens,
            "truncated": self.truncated,
            "num_layers": int(layers),
            "num_heads": int(heads),
            "maps": {name: encode_maps(maps) for name, maps in self.maps.items()},
            "predictions": self.predictions,
        }


def from_stored(record: TypedInput) -> InputMaps:
    """A stored typed input as arrays (to three decimals)."""
    shape = (record["num_layers"], record["num_heads"])
    maps = {name: decode_maps(text, *shape) for name, text in record["maps"].items()}
    return InputMaps(
        record["text_a"], record["text_b"], record["tokens"], maps, record["truncated"], record.get("predictions", {})
    )


def input_name(text_a: str, text_b: str | None) -> str:
    """The file a typed input is stored in: a hash of its texts, so typing it again replaces it."""
    return f"{key_of([text_a, text_b])}.json"


def write_input(run_folder: Path, maps: InputMaps) -> Path:
    """Store a typed input's maps in the run's ``maps/`` folder (atomically); its file."""
    (run_folder / MAPS_FOLDER).mkdir(exist_ok=True)
    return atomic_write_text(run_folder / MAPS_FOLDER / input_name(maps.text_a, maps.text_b), json.dumps(maps.stored()))


def typed_records(run_folder: Path) -> list[TypedInput]:
    """Every input typed to ``harness maps`` for this run as stored, in the order they were typed."""
    files = sorted((run_folder / MAPS_FOLDER).glob("*.json"), key=lambda path: path.stat().st_mtime_ns)
    return [record for path in files if (record := read_json(path)) is not None]  # a damaged file is said and skipped


def typed_inputs(run_folder: Path) -> list[InputMaps]:
    """Every input typed to ``harness maps`` for this run, as arrays, in the order they were typed."""
    return [from_stored(record) for record in typed_records(run_folder)]


def example_inputs(run_folder: Path) -> list[InputMaps]:
    """The run's seeded dev examples (its ``examples`` analysis), as arrays; none when it did not run."""
    summary = (read_json(run_folder / SUMMARY) if (run_folder / SUMMARY).is_file() else None) or {}
    entry = summary.get("analyses", {}).get(ExamplesView.name)
    if entry is None:
        return []
    examples: ExamplesEntry = decoded(entry)
    per_checkpoint = per_checkpoint_results(examples)
    first = next(iter(per_checkpoint.values()))
    shape = (first["num_layers"], first["num_heads"])
    return [
        InputMaps(
            example["text_a"],
            example["text_b"],
            example["tokens"],
            {name: decode_maps(stored["examples"][index]["maps"], *shape) for name, stored in per_checkpoint.items()},
        )
        for index, example in enumerate(first["examples"])
    ]


def run_inputs(run_folder: Path | str) -> list[InputMaps]:
    """A run's single inputs as arrays: its seeded dev examples, then every input typed to ``harness maps``."""
    folder = Path(run_folder)
    return [*example_inputs(folder), *typed_inputs(folder)]


def view_input(index: int, record: TypedInput, before: str, after: str) -> ViewData:
    """One stored typed input as the report's per-example view takes an example (its maps as stored)."""
    maps = from_stored(record)
    layer, head, cosine = maps.most_changed(before, after)
    return {
        "guid": f"typed-{index + 1}",
        "split": "typed" + (f", cut to {len(maps.tokens)} tokens" if maps.truncated else ""),
        "label": "none (typed)",
        "text_a": maps.text_a,
        "text_b": maps.text_b,
        "tokens": maps.tokens,
        "before": record["maps"][before],
        "after": record["maps"][after],
        "steps": [],
        "predictions": {
            PREDICTED_BY[name]: prediction for name, prediction in maps.predictions.items() if name in PREDICTED_BY
        },
        "cosine": np.round(maps.head_cosines(before, after), 3).tolist(),
        "most_changed": {"layer": layer, "head": head, "cosine": round(cosine, 3)},
    }


# Whose prediction the page shows: the pre-trained model's head is the seeded, untrained one.
PREDICTED_BY = {PRETRAINED: "pre-trained (untrained head)", FINETUNED: checkpoint_title(FINETUNED)}
PAGE_INTRO = (
    "Each input typed to harness maps for this run, through its pre-trained and fine-tuned checkpoints: each row "
    "of a map is the attention of one token over the tokens it attends to; the change is fine-tuned minus "
    "pre-trained. The view opens each input on the head whose map changed most on it (lowest cosine); hover over "
    "a map for its weights. From Python: harness.present.maps.run_inputs(run folder) gives the arrays."
)


def write_page(run_folder: Path, title: str) -> Path:
    """The page of the run's typed inputs (``maps/index.html``), the report's per-example view."""
    before, after = PAIRS[0]
    records = typed_records(run_folder)
    run = {
        "label": title,
        "layers": records[0]["num_layers"],
        "heads": records[0]["num_heads"],
        "before": checkpoint_title(before),
        "after": checkpoint_title(after),
        "examples": [view_input(index, record, before, after) for index, record in enumerate(records)],
        "candidates": len(records),
        "max_tokens": max(len(record["tokens"]) for record in records),
        "steps": [],
    }
    page = render(f"Your own inputs: {title}", None, [], {"runs": [run]}, intro=PAGE_INTRO)
    return atomic_write_text(run_folder / MAPS_FOLDER / PAGE, page)
