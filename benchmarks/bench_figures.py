"""How near a run's figures are drawn to the floor of writing their images, per figure kind, and
on how many cores.

A stored run's figures (its run folder's summary.json) are drawn as ``harness figures`` draws
them (`harness.present.redraw.redraw`, forced, PNG unless ``--formats`` adds vector copies) in
one process and in ``--processes`` processes, and, in the same process and round, the floor:
as many PNG files of the same pixel sizes, each a single ``imshow`` of the run's layers x heads
grid saved by Agg at the same DPI. Rounds alternate the three; the medians are printed with their
ratios (figures over floor on one core; one process over N), then each analysis (figure kind)
drawn alone in this process beside its own floor. CPU seconds of this process are printed beside
wall seconds where it does the work: on a shared machine wall time follows the load (printed),
CPU time far less.

    python -m benchmarks.bench_figures outputs/rte-minilm-seed42-1234abcd --rounds 3 --processes 2
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from PIL import Image

from harness.present.parallel import cores
from harness.present.redraw import drawn_files, drawn_names, redraw
from harness.results.summary import whole_summary
from harness.views.saving import DPI


def cpu_seconds() -> float:
    """CPU seconds of this process (not of a pool's workers: the fork server's children)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime


def timed(work: Callable[[], Any]) -> tuple[float, float]:
    """Wall and CPU seconds of ``work()``."""
    wall, cpu = time.perf_counter(), cpu_seconds()
    work()
    return time.perf_counter() - wall, cpu_seconds() - cpu


def draw_figures(summary: dict[str, Any], out_dir: Path, formats: tuple[str, ...], processes: int) -> list[Path]:
    """The run's figures and tables, drawn anew as ``harness figures`` draws them."""
    return redraw(summary, out_dir, force=True, formats=formats, processes=processes)


def pixel_sizes(pngs: list[Path]) -> list[tuple[int, int]]:
    """(width, height) of each PNG."""
    sizes = []
    for png in pngs:
        with Image.open(png) as image:
            sizes.append(image.size)
    return sizes


def draw_floor(sizes: list[tuple[int, int]], grid: np.ndarray, out_dir: Path) -> None:
    """The floor of writing PNGs of ``sizes``: each a figure of that size holding one ``imshow``
    of ``grid`` and nothing else, saved by Agg at the figures' DPI."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for index, (width, height) in enumerate(sizes):
        figure = plt.figure(figsize=(width / DPI, height / DPI), dpi=DPI)
        axes = figure.add_axes((0, 0, 1, 1))
        axes.set_axis_off()
        axes.imshow(grid, aspect="auto", cmap="viridis")
        figure.savefig(out_dir / f"floor_{index}.png", dpi=DPI)
        plt.close(figure)


def head_grid(run: dict[str, Any]) -> np.ndarray:
    """A layers x heads grid of the run's shape, its values spread over [0, 1]."""
    layers, heads = run.get("num_layers", 12), run.get("num_heads", 12)
    return np.linspace(0, 1, layers * heads).reshape(layers, heads)


def median_line(name: str, rounds: list[tuple[float, float]], cpu: bool) -> str:
    """A kind's median seconds: wall, and this process's CPU where it did the work (``cpu``)."""
    wall, spent = (statistics.median(values) for values in zip(*rounds))
    return f"{name}: {wall:.2f} s wall" + (f", {spent:.2f} s CPU" if cpu else "") + f" (median of {len(rounds)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_folder", type=Path, help="a run folder holding summary.json")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--processes", type=int, default=cores(), help="the processes of the parallel drawing")
    parser.add_argument("--formats", nargs="+", default=["png"], help="png, then any vector copies (pdf, svg)")
    parser.add_argument("--no-kinds", action="store_true", help="leave out the time of each figure kind")
    args = parser.parse_args()
    summary = whole_summary(args.run_folder)
    formats, grid = tuple(args.formats), head_grid(summary["run"])
    print(f"{args.run_folder.name}: {cores()} cores, load average {os.getloadavg()[0]:.1f} at the start", flush=True)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        drawn = draw_figures(summary, root / "figures", formats, 1)  # warms the caches; the floor's sizes
        pngs = [path for path in drawn if path.suffix == ".png"]
        sizes = dict(zip(pngs, pixel_sizes(pngs)))
        kinds: dict[str, list[tuple[float, float]]] = {
            "figures, 1 process": [],
            f"figures, {args.processes} processes": [],
            "floor": [],
        }
        works = [
            lambda: draw_figures(summary, root / "figures", formats, 1),
            lambda: draw_figures(summary, root / "figures", formats, args.processes),
            lambda: draw_floor(list(sizes.values()), grid, root / "floor"),
        ]
        for round_index in range(args.rounds):
            for (kind, spent), work in zip(kinds.items(), works):
                spent.append(timed(work))
                print(f"round {round_index + 1}, {kind}: {spent[-1][0]:.2f} s wall", flush=True)
        medians = {kind: tuple(statistics.median(values) for values in zip(*spent)) for kind, spent in kinds.items()}
        one, many, floor = medians.values()
        print(f"{len(pngs)} PNG figures ({', '.join(formats)})")
        for kind, spent in kinds.items():
            print(median_line(kind, spent, cpu=kind != f"figures, {args.processes} processes"))
        print(f"figures over floor, 1 process: {one[0] / floor[0]:.2f}x wall, {one[1] / floor[1]:.2f}x CPU")
        print(f"1 process over {args.processes}: {one[0] / many[0]:.2f}x wall")
        if not args.no_kinds:
            print_kinds(summary, root, formats, sizes, grid)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


def print_kinds(
    summary: dict[str, Any], root: Path, formats: tuple[str, ...], sizes: dict[Path, tuple[int, int]], grid: np.ndarray
) -> None:
    """Each analysis's figures drawn alone in this process beside the floor of as many PNGs of their sizes."""
    files = drawn_files(root / "figures")
    print("| figure kind | PNGs | seconds (CPU) | floor (CPU) | ratio |\n|---|---|---|---|---|")
    for name in drawn_names(summary):
        pngs = [path for path in files.get(name, []) if path.suffix == ".png"]
        _, drawing = timed(partial(redraw, summary, root / "figures", True, formats, [name], 1))
        _, floor = timed(partial(draw_floor, [sizes[path] for path in pngs], grid, root / "floor"))
        ratio = f"{drawing / floor:.1f}x" if pngs and floor else "-"
        print(f"| {name} | {len(pngs)} | {drawing:.2f} | {floor:.2f} | {ratio} |", flush=True)


if __name__ == "__main__":
    main()
