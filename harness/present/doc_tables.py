"""Results tables in the README and docs, generated from stored runs, never typed (``harness docs``).

A table in a Markdown file is a block

    <!-- table:NAME run:LABEL -->
    ...generated...
    <!-- /table -->

NAME is an analysis table (a stem of some analysis's `tables`, e.g. ``coreference_table``)
or one of the cross-analysis tables here (``overview``); LABEL names a stored run whose
results are kept in ``docs/results/LABEL.json``: the run's description and its analysis
entries as ``summary.json`` holds them (only the clustering's full distance matrix, which no
table reads, is left out). ``harness docs --run LABEL=RUN_FOLDER`` takes a finished run's
stored results as LABEL's; ``harness docs`` rebuilds every block from them, so the README
and every doc quote one run wherever they name the same LABEL; ``--check`` (and the test
suite) fails when a block differs from what its stored results give.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from classifier import CLASSES
from harness.analyses import ANALYSES
from harness.views.base import per_checkpoint_results, per_pair_results
from harness.analyses.cosine import most_changed
from harness.analyses.dependency import ALL_CLARK
from harness.analyses.evaluation import KOVALEVA_TABLE_1, TABLE_COLUMNS, table_cell
from harness.config import describe_recipe
from harness.views.style import markdown_table
from harness.results.store import key_of, read_json, write_json
from tasks.errors import InputError
from tasks.files import atomic_write_text
from tasks.registry import get_task

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results"
BLOCK = re.compile(r"(<!-- table:(?P<name>[\w-]+) run:(?P<run>[\w.-]+) -->\n)(?P<body>.*?)(<!-- /table -->)", re.S)
# What the tables read: the entries of these analyses (and of any with Markdown tables), less
# their heavy parts that no table reads (dropped at any depth; they stay in the run's store).
OVERVIEW_READS = ("evaluation", "cosine", "clustering", "patterns", "surface", "syntax", "coreference", "probes")
LEFT_OUT = {"clustering": ("js_divergence", "mds"), "syntax": ("per_head",), "surface": ("per_head",),
            "coreference": ("accuracy_per_head",), "sinks": ("per_head",)}
BEHAVIOURS = {"previous": "previous", "next": "next", "cls": "[CLS]", "broad": "broad"}


def documents(root: Path = ROOT) -> list[Path]:
    """The Markdown files whose table blocks are generated: the README and every doc."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def snapshot(summary: dict[str, Any], run_folder: Path) -> dict[str, Any]:
    """What a run's tables read: its description and analysis entries, and where they came from."""
    analyses = {name: {**entry, "result": without(entry["result"], LEFT_OUT.get(name, ()))}
                for name, entry in summary["analyses"].items() if name in OVERVIEW_READS or has_tables(name, entry)}
    return {"source": {"run_folder": run_folder.name, "summary_key": key_of(summary, 64)},
            "run": summary["run"], "analyses": analyses}


def without(value: Any, keys: tuple[str, ...]) -> Any:
    """``value`` with every dict key in ``keys`` dropped, at any depth."""
    if isinstance(value, dict):
        return {key: without(inner, keys) for key, inner in value.items() if key not in keys}
    if isinstance(value, list):
        return [without(inner, keys) for inner in value]
    return value


def has_tables(name: str, entry: dict[str, Any]) -> bool:
    analysis = ANALYSES.get(name)
    return analysis is not None and bool(analysis.tables(entry, {}))


def heads(names: list[tuple[int, int]]) -> str:
    return ", ".join(f"{layer}-{head}" for layer, head in names) or "none"


def labelled_heads(labels: list[list[list[str]]], label: str) -> list[tuple[int, int]]:
    """1-indexed (layer, head) of the heads carrying a Clark behaviour label."""
    return [(layer + 1, head + 1) for layer, row in enumerate(labels) for head, names in enumerate(row)
            if label in names]


def overview(results: dict[str, Any]) -> str:
    """One run at a glance: dev scores and the learning check, then each analysis's headline,
    pre-trained beside fine-tuned, the papers' BERT-base numbers for context."""
    run, analyses = results["run"], results["analyses"]
    rows = [("", "pre-trained (untrained head)", "fine-tuned", "paper (BERT-base)")]
    for part in (evaluation_rows, cosine_rows, pattern_rows, surface_rows, syntax_rows, coreference_rows,
                 probe_rows):
        rows += part(analyses, run)
    return markdown_table(rows[0], rows[1:])


def evaluation_rows(analyses: dict[str, Any], run: dict[str, Any]) -> list[tuple[str, ...]]:
    entry = analyses["evaluation"]
    results = per_checkpoint_results(entry)
    first = results["finetuned"]
    task = get_task(first["task"])
    split = next(iter(first["predictions"]))
    paper = KOVALEVA_TABLE_1.get(task.name, {})
    context = " / ".join(f"{value} {TABLE_COLUMNS[name]}" for name, value in paper.items())
    metric = "F1/accuracy" if "f1" in task.metrics else task.metrics[0]
    rows = [("fine-tuning recipe", "", f"{describe_recipe(run['recipe'])}, {run['train_examples']} training examples",
             "batch 32, 3 epochs (Kovaleva et al.)")]
    rows += [(f"{task.folder} {split} {metric} (majority class: {table_cell(task, first['majority'], split)})",
             table_cell(task, results["pretrained"]["metrics"], split), table_cell(task, first["metrics"], split),
             f"{context} (Kovaleva Table 1)" if context else "")]
    rows += [(f"{TABLE_COLUMNS[name]} baseline", "", table_cell(task, results[name]["metrics"], split), "")
             for name in results if name not in ("pretrained", "finetuned")]
    for (before, after), comparison in zip(entry["pairs"], per_pair_results(entry).values()):
        if before != "pretrained":
            continue
        versus = comparison["against_majority"]
        low, high = (100 * value for value in versus["interval"])
        rows.append(("fine-tuned minus majority class (95% paired bootstrap interval)", "",
                     f"{100 * versus['difference']:+.1f} [{low:+.1f}, {high:+.1f}]; "
                     f"learned: {'yes' if comparison['learned'] else 'no'}", ""))
    return rows


def cosine_rows(analyses: dict[str, Any], run: dict[str, Any]) -> list[tuple[str, ...]]:
    if "cosine" not in analyses:
        return []
    stats = next(iter(per_pair_results(analyses["cosine"]).values()))
    layers = len(stats["per_layer"])
    head = most_changed(stats["per_head"])
    changed = f"{head['layer']}-{head['head']} (cosine {head['value']:.3f})"
    if "clustering" in analyses:
        distances = np.asarray(next(iter(per_pair_results(analyses["clustering"]).values()))["between_versions"])
        layer, index = np.unravel_index(distances.argmax(), distances.shape)
        changed += f"; largest Jensen-Shannon distance: {layer + 1}-{index + 1}"
    return [(f"cosine similarity per layer 1..{layers}", "", " ".join(f"{v:.3f}" for v in stats["per_layer"]),
             "last two layers change most"),
            ("head that changed most", "", changed, "")]


def pattern_rows(analyses: dict[str, Any], run: dict[str, Any]) -> list[tuple[str, ...]]:
    if "patterns" not in analyses:
        return []
    shares = {name: " / ".join(f"{100 * stats['proportions'][label]:.1f}" for label in CLASSES)
              for name, stats in per_checkpoint_results(analyses["patterns"]).items()}
    return [("pattern shares (vert / diag / vert+diag / block / het, %)", shares["pretrained"], shares["finetuned"],
             "heterogeneous 32-61%")]


def surface_rows(analyses: dict[str, Any], run: dict[str, Any]) -> list[tuple[str, ...]]:
    if "surface" not in analyses:
        return []
    cells = {name: " / ".join(heads(labelled_heads(stats["labels"], label)) for label in BEHAVIOURS)
             for name, stats in per_checkpoint_results(analyses["surface"]).items()}
    return [(f"Clark heads: {' / '.join(BEHAVIOURS.values())}", cells["pretrained"], cells["finetuned"],
             "[SEP] dominates layers 6-10")]


def syntax_rows(analyses: dict[str, Any], run: dict[str, Any]) -> list[tuple[str, ...]]:
    if "syntax" not in analyses:
        return []
    entry = analyses["syntax"]
    results = per_checkpoint_results(entry)
    paper = entry["reference"]["clark_table1"][ALL_CLARK]

    def cell(stats: dict[str, Any], row: dict[str, Any]) -> str:
        best = row["best"]
        return f"{best['layer']}-{best['head']}: {best['accuracy']:.1f} (offset {row['baseline']['accuracy']:.1f})"

    return [("dependency `all` without punctuation and roots, best head (UD EWT dev)",
             *(cell(results[c], results[c]["relations"][0]) for c in ("pretrained", "finetuned")), ""),
            ("dependency `all`, every word (Clark's protocol)",
             *(cell(results[c], results[c][ALL_CLARK]) for c in ("pretrained", "finetuned")),
             f"{paper['head']}: {paper['accuracy']} (offset {paper['baseline_accuracy']}; PTB)")]


def coreference_rows(analyses: dict[str, Any], run: dict[str, Any]) -> list[tuple[str, ...]]:
    if "coreference" not in analyses:
        return []
    entry = analyses["coreference"]
    results = per_checkpoint_results(entry)
    paper = entry["reference"]["clark_table2"]["best_head"]
    cells = [f"{best['layer']}-{best['head']}: {100 * best['accuracy']:.1f}"
             for best in (results[c]["best_head"]["all"] for c in ("pretrained", "finetuned"))]
    tokens = results["pretrained"]["max_tokens"]
    return [(f"coreference, best head (all mentions, {tokens} tokens)", *cells,
             f"{paper['layer']}-{paper['head']}: {100 * paper['accuracy']['all']:.0f} (CoNLL-2012)")]


def probe_rows(analyses: dict[str, Any], run: dict[str, Any]) -> list[tuple[str, ...]]:
    if "probes" not in analyses:
        return []
    entry = analyses["probes"]
    paper = entry["reference"]["clark_table3_uas"]
    cells = [f"{stats['uas']['attn']:.1f} / {stats['uas']['attn_glove']:.1f}"
             for stats in (per_checkpoint_results(entry)[c] for c in ("pretrained", "finetuned"))]
    return [("probe UAS Attn / Attn+GloVe", *cells, f"{paper['attn']:.0f} / {paper['attn_glove']:.0f}")]


def sweep_table(results: dict[str, Any]) -> str:
    """A recipe sweep (``benchmarks/sweep_recipe.py``), per task and setting: the dev score's
    mean ± std over seeds, the majority class, and the seeds clearly above it."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for point in results["points"]:
        setting = (point["task"], point["learning_rate"], point["epochs"], point["max_train_examples"] or 0)
        groups.setdefault(setting, []).append(point)
    lines = ["| task | lr | epochs | train examples | metric | seeds | dev mean ± std | majority | seeds learned | "
             "train s / seed |", "|---" * 10 + "|"]
    for (task, rate, epochs, _), group in sorted(groups.items()):
        scores = [100 * point["score"] for point in group]
        spread = f" ± {statistics.stdev(scores):.1f}" if len(scores) > 1 else ""
        lines.append(f"| {task} | {rate:g} | {epochs:g} | {group[0]['train_examples']} | {group[0]['metric']} | "
                     f"{len(group)} | {statistics.mean(scores):.1f}{spread} | {100 * group[0]['majority']:.1f} | "
                     f"{sum(point['learned'] for point in group)} | "
                     f"{statistics.mean(point['train_seconds'] for point in group):.0f} |")
    return "\n".join(lines) + "\n"


# Tables that read more than one analysis (or no run at all: a sweep's points).
OVERVIEWS: dict[str, Callable[[dict[str, Any]], str]] = {"overview": overview, "sweep": sweep_table}


def without_title(text: str) -> str:
    """An analysis table without its ``# title`` line (the doc around it has its own headings)."""
    lines = text.splitlines()
    if lines and lines[0].startswith("# "):
        lines = lines[2:] if len(lines) > 1 and not lines[1] else lines[1:]
    return "\n".join(lines) + "\n"


def render(name: str, results: dict[str, Any]) -> str:
    """Table NAME from a run's stored results."""
    if name in OVERVIEWS:
        return OVERVIEWS[name](results)
    for analysis_name, entry in results["analyses"].items():
        analysis = ANALYSES.get(analysis_name)
        if analysis is not None and entry.get("version") == analysis.version:
            tables = analysis.tables(entry, results["run"])
            if name in tables:
                return without_title(tables[name])
    raise InputError(f"table {name!r}: no analysis of the stored run gives it (of the current version); "
                     f"tables: {', '.join(OVERVIEWS)} or an analysis table such as coreference_table")


def stored_results(label: str, results_dir: Path = RESULTS) -> dict[str, Any]:
    path = results_dir / f"{label}.json"
    results = read_json(path)
    if not isinstance(results, dict):
        raise InputError(f"{path}: no stored results of run {label!r}; take a finished run's with "
                         f"`python -m harness docs --run {label}=outputs/<run folder>` (a sweep's points: "
                         f"`python -m benchmarks.sweep_recipe --table --out POINTS.jsonl --keep-as {label}`)")
    return results


def take_run(label: str, run_folder: Path, results_dir: Path = RESULTS) -> Path:
    """Store a finished run's results as LABEL's (``docs/results/LABEL.json``)."""
    summary = read_json(run_folder / "summary.json")
    if not isinstance(summary, dict) or "analyses" not in summary:
        raise InputError(f"{run_folder / 'summary.json'}: not a whole summary; run `python -m harness run` with the "
                         "flags of that run again to rewrite it")
    path = results_dir / f"{label}.json"
    write_json(path, snapshot(summary, run_folder))
    return path


def rebuilt(text: str, results_dir: Path = RESULTS) -> tuple[str, list[str]]:
    """``text`` with every table block regenerated, and the ``name run:label`` of blocks that changed."""
    changed: list[str] = []
    cache: dict[str, dict[str, Any]] = {}

    def replace(match: re.Match) -> str:
        label = match["run"]
        results = cache.setdefault(label, stored_results(label, results_dir))
        body = render(match["name"], results)
        if body != match["body"]:
            changed.append(f"{match['name']} run:{label}")
        return match.group(1) + body + match.group(5)

    return BLOCK.sub(replace, text), changed


def rebuild(paths: list[Path], check: bool = False, results_dir: Path = RESULTS) -> list[str]:
    """Regenerate the table blocks of ``paths`` (or only compare, with ``check``); returns
    ``file: table run:label`` for every block that differed."""
    differing = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        new, changed = rebuilt(text, results_dir)
        differing += [f"{path.name}: {block}" for block in changed]
        if changed and not check:
            atomic_write_text(path, new)
    return differing
