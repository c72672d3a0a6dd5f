"""Clark et al.'s surface analyses per head, for both checkpoints side by side.

Figures: attention to [CLS], [SEP] and punctuation (Clark's Figure 2), by relative position,
and the entropies (Clark's Figure 4), per head and layer with every checkpoint overlaid, and
per-head grids of six statistics side by side with their differences; tables: the heads
whose Clark label changed and every statistic per layer; metrics: how many heads carry each
label per checkpoint; the overview names the heads of four labels. A study keeps the
attention to [CLS] and [SEP] per layer over seeds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.results.checkpoints import FINETUNED, PRETRAINED
from harness.views.across_tasks import draw_per_layer_by_task
from harness.views.base import (
    Claim,
    Entry,
    PaperPoint,
    Row,
    View,
    per_checkpoint_results,
    per_pair_results,
    register_view,
)
from harness.views.seeds import elementwise
from harness.views.style import (
    checkpoint_colour,
    checkpoint_title,
    draw_side_by_side_grids,
    markdown_table,
    panels_for,
    run_title,
    save,
    scatter_by_layer,
    suptitle,
    titled_pairs,
)

# Statistic name -> how it is shown in tables and figures.
STATISTICS = {
    "self": "itself", "previous": "previous token", "next": "next token",
    "cls": "[CLS]", "sep": "[SEP]", "period": '"."', "comma": '","', "punct": '"." or ","',
    "sep_to_sep": "[SEP] rows to [SEP]", "rest_to_sep": "other rows to [SEP]",
    "entropy": "entropy (nats)", "cls_entropy": "[CLS] row entropy (nats)",
}

HEATMAP_STATISTICS = ("previous", "next", "cls", "sep", "punct", "entropy")
SERIES_STYLES = (("-", "o"), ("--", "s"))  # line style and marker of the first and second statistic in a panel
SPECIAL_TOKENS = ("cls", "sep")  # the statistics a study keeps per layer over seeds
# Clark behaviour label -> how the overview table names it.
OVERVIEW_LABELS = {"previous": "previous", "next": "next", "cls": "[CLS]", "broad": "broad"}


TOKEN_TITLES = {"cls": "[CLS]", "sep": "[SEP]"}


def draw_special_tokens(study: dict[str, Any], path: Path) -> Path:
    """Mean attention to [CLS] and to [SEP] per layer, a line per task and checkpoint, a panel per token, saved at
    ``path`` (PNG, with a PDF beside it); returns ``path``."""
    panels = {f"attention to {title}": lambda entry, checkpoint, token=token:
              entry["special_tokens"][checkpoint][token]["mean"] for token, title in TOKEN_TITLES.items()}
    return draw_per_layer_by_task(study, panels, "mean attention", "Attention to [CLS] and [SEP] per layer", path)


def cls_peaks_before_sep(entry: Entry) -> bool:
    """Whether, in every checkpoint, attention to [CLS] peaks in an earlier layer than attention to [SEP]."""
    peaks = [[max(range(len(series)), key=series.__getitem__) for series in (stats["per_layer"]["cls"],
                                                                              stats["per_layer"]["sep"])]
             for stats in per_checkpoint_results(entry).values()]
    return all(cls_layer < sep_layer for cls_layer, sep_layer in peaks)


def sep_takes_half_a_layer(entry: Entry) -> bool:
    """Whether, in the pre-trained model, over half of some layer's attention goes to [SEP]."""
    return max(per_checkpoint_results(entry)[PRETRAINED]["per_layer"]["sep"]) > 0.5


@register_view
class SurfaceView(View):
    name = "surface"
    claims = {"cls_peaks_before_sep": Claim("attention to [CLS] peaks in an earlier layer than attention to [SEP], "
                                            "pre-trained and fine-tuned", cls_peaks_before_sep),
              "sep_takes_half_a_layer": Claim("over half of some layer's attention goes to [SEP] in the pre-trained "
                                              "model", sep_takes_half_a_layer)}
    papers = {"cls_peaks_before_sep": PaperPoint(
                  "Kovaleva et al. 2019, Fig. 6; Clark et al. 2019, Fig. 2", "early layers attend to [CLS], later ones "
                  "to [SEP] (fine-tuned bert-base per task; pre-trained BERT-base)", "holds"),
              "sep_takes_half_a_layer": PaperPoint(
                  "Clark et al. 2019, Fig. 2", "over half of the attention of layers 6-10 of BERT-base (12 layers) "
                  "goes to [SEP]", "holds")}
    version = 2
    left_out = ("per_head",)

    @classmethod
    def metrics(cls, entry: Entry) -> list[tuple[str, float]]:
        """Per checkpoint: how many heads carry each of Clark's behaviour labels."""
        return [(f"surface_{checkpoint}_{label}_heads", count)
                for checkpoint, stats in per_checkpoint_results(entry).items()
                for label, count in stats["label_counts"].items()]

    @classmethod
    def draw(cls, entry: Entry, run: dict[str, Any], out_dir: Path) -> list[Path]:
        return draw_surface(entry, run, out_dir)

    @classmethod
    def tables(cls, entry: Entry, run: dict[str, Any]) -> dict[str, str]:
        return {"surface_label_changes": f"# Heads whose Clark label changed: {run_title(run)}\n\n"
                                         f"{label_change_table(entry)}",
                "surface_by_layer": f"# Clark's statistics per layer: {run_title(run)}\n\n{layer_table(entry)}"}

    @classmethod
    def overview_rows(cls, entries: dict[str, Entry], run: dict[str, Any]) -> list[Row]:
        """The heads carrying each of four Clark labels, pre-trained and fine-tuned."""
        cells = {name: " / ".join(head_list(labelled_heads(stats["labels"], label)) for label in OVERVIEW_LABELS)
                 for name, stats in per_checkpoint_results(entries[cls.name]).items()}
        return [(f"Clark heads: {' / '.join(OVERVIEW_LABELS.values())}", cells[PRETRAINED], cells[FINETUNED],
                 "[SEP] dominates layers 6-10")]

    @classmethod
    def across_seeds(cls, entries: list[Entry]) -> dict[str, Any]:
        """Attention to [CLS] and [SEP] per layer, pre-trained and fine-tuned, mean and spread over seeds."""
        return {"special_tokens": {
            checkpoint: {token: elementwise([per_checkpoint_results(entry)[checkpoint]["per_layer"][token]
                                             for entry in entries]) for token in SPECIAL_TOKENS}
            for checkpoint in (PRETRAINED, FINETUNED)}}

    @classmethod
    def study_tables(cls, study: dict[str, Any]) -> dict[str, str]:
        """Attention to [CLS] and to [SEP] per layer, task and checkpoint, mean over seeds."""
        tasks = study["tasks"]
        if not tasks or not all("special_tokens" in entry for entry in tasks.values()):
            return {}
        layers = max(len(entry["special_tokens"][PRETRAINED]["cls"]["mean"]) for entry in tasks.values())
        rows = []
        for task, entry in tasks.items():
            for checkpoint in (PRETRAINED, FINETUNED):
                series = entry["special_tokens"][checkpoint]
                cells = [f"{cls_share:.2f} / {sep_share:.2f}"
                         for cls_share, sep_share in zip(series["cls"]["mean"], series["sep"]["mean"])]
                rows.append([task, checkpoint_title(checkpoint), *cells, *["-"] * (layers - len(cells))])
        return {"special_tokens_per_layer_by_task": markdown_table(
            ["task", "checkpoint", *(f"layer {n}: [CLS] / [SEP]" for n in range(1, layers + 1))], rows)}

    @classmethod
    def draw_study(cls, study: dict[str, Any], out_dir: Path) -> list[Path]:
        """Attention to [CLS] and [SEP] per layer and task (Kovaleva et al.'s Figure 6, Clark et al.'s Figure 2)."""
        tasks = study["tasks"].values()
        if not tasks or not all("special_tokens" in entry for entry in tasks):
            return []
        return [draw_special_tokens(study, out_dir / "special_tokens_by_task.png")]


def head_list(names: list[tuple[int, int]]) -> str:
    """``3-1, 4-2``: 1-indexed (layer, head) pairs, or ``none``."""
    return ", ".join(f"{layer}-{head}" for layer, head in names) or "none"


def labelled_heads(labels: list[list[list[str]]], label: str) -> list[tuple[int, int]]:
    """1-indexed (layer, head) of the heads carrying a Clark behaviour label."""
    return [(layer + 1, head + 1) for layer, row in enumerate(labels) for head, names in enumerate(row)
            if label in names]


def draw_by_layer(entry: Entry, run: dict[str, Any], rows: dict[str, tuple[str, ...]], path: Path, *,
                  heading: str, reference: dict[str, float] | None = None) -> Path:
    """One panel per entry of ``rows`` (y label -> its statistics), every checkpoint overlaid in
    its colour; a second statistic in a panel dashed, with square markers."""
    checkpoints = per_checkpoint_results(entry)
    figure, panels = panels_for(len(rows))
    for panel, (ylabel, statistics) in zip(panels, rows.items()):
        series = [(index, checkpoint, statistic, style) for index, checkpoint in enumerate(checkpoints)
                  for statistic, style in zip(statistics, SERIES_STYLES)]
        for band, (index, checkpoint, statistic, (linestyle, marker)) in enumerate(series):
            label = checkpoint_title(checkpoint) + (f": {STATISTICS[statistic]}" if len(statistics) > 1 else "")
            scatter_by_layer(panel, checkpoints[checkpoint]["per_head"][statistic],
                             checkpoint_colour(checkpoint, index), label, band=(band, len(series)),
                             linestyle=linestyle, marker=marker)
        for label, value in (reference or {}).items():
            panel.axhline(value, color="black", linestyle=":", linewidth=1, label=label)
        panel.set_ylabel(ylabel)
        panel.set_xlabel("layer")
        panel.legend(fontsize=7)
    suptitle(figure, f"{heading}: {run_title(run)}")
    return save(figure, path)


def label_change_table(entry: Entry) -> str:
    """Markdown tables, one per declared pair, of the heads whose Clark behaviour labels changed."""
    parts = []
    for (before, after), comparison in zip(entry["pairs"], per_pair_results(entry).values()):
        lines = [f"**{checkpoint_title(before)} -> {checkpoint_title(after)}**", "",
                 f"| layer | head | {checkpoint_title(before)} | {checkpoint_title(after)} |", "|---|---|---|---|"]
        for change in comparison["label_changes"]:
            lines.append(f"| {change['layer']} | {change['head']} | {', '.join(change['before']) or '-'} | "
                         f"{', '.join(change['after']) or '-'} |")
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def layer_table(entry: Entry) -> str:
    """Markdown: every statistic per layer (1-indexed), one column per checkpoint."""
    results = per_checkpoint_results(entry)
    lines = ["| statistic | " + " | ".join(checkpoint_title(c) for c in results) + " |",
             "|---" * (len(results) + 1) + "|"]
    for statistic, label in STATISTICS.items():
        cells = [" ".join(f"{value:.2f}" for value in stats["per_layer"][statistic]) for stats in results.values()]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def draw_surface(entry: Entry, run: dict[str, Any], out_dir: Path) -> list[Path]:
    """The per-layer figures of special tokens, relative position and entropy, then a per-head
    grid of each of `HEATMAP_STATISTICS`; the files written."""
    uniform = next(iter(per_checkpoint_results(entry).values()))["uniform_entropy"]
    written = [
        draw_by_layer(entry, run, {"attention to [CLS]": ("cls",), "attention to [SEP]": ("sep",),
                                   'attention to "." or ","': ("punct",),
                                   "attention to [SEP]\nby row type": ("sep_to_sep", "rest_to_sep")},
                      out_dir / "surface_special_tokens.png", heading="Attention to special tokens (Clark Fig. 2)"),
        draw_by_layer(entry, run, {"previous token": ("previous",), "next token": ("next",), "itself": ("self",)},
                      out_dir / "surface_relative_position.png", heading="Attention by relative position"),
        draw_by_layer(entry, run, {"mean row entropy\n(nats)": ("entropy",),
                                   "[CLS] row entropy\n(nats)": ("cls_entropy",)},
                      out_dir / "surface_entropy.png", heading="Attention entropy (Clark Fig. 4)",
                      reference={"uniform attention": uniform}),
    ]
    for statistic in HEATMAP_STATISTICS:
        grids = {checkpoint_title(c): stats["per_head"][statistic]
                 for c, stats in per_checkpoint_results(entry).items()}
        written.append(draw_side_by_side_grids(
            grids, out_dir / f"surface_heads_{statistic}.png", differences=titled_pairs(entry["pairs"]),
            title=f"{STATISTICS[statistic]} per head: {run_title(run)}",
            colorbar_label="nats" if statistic == "entropy" else "mean attention"))
    return written
