"""Clark et al.'s coreference analysis: does a mention's head word attend to its antecedent?

For every coreferent mention with an antecedent inside the encoded text, each head's
word-level attention row of the mention's head word is taken; the head is right when the
word it attends to most (itself and [CLS]/[SEP] excluded) is the head word of one of the
mention's antecedents (Clark et al. 2019, Section 4.3, "antecedent selection accuracy").
Accuracy is counted per head and per mention type (pronoun, proper, nominal), beside two
baselines that do not look at attention (Clark's Table 2):

- Nearest: the closest preceding mention is the antecedent;
- Head match: the closest preceding mention with the same head word (case-insensitive);
  a mention with none is counted wrong.

"Mention" for the baselines means a gold mention of a cluster with at least two mentions in
the whole document (CoNLL-2012 annotates no singletons; LitBank does, and they are left out
so the candidates match Clark's). A preceding mention that overlaps the current one (nested
or containing) is never a candidate. Mentions are ordered by (start, end). Documents are cut
to ``max_tokens`` word pieces (Clark used 128); mentions past the cut are counted, not scored.
Head words and mention types come from `tasks.coreference` (see ``docs/coreference.md``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from harness.analyses.base import AnalysisContext, register_analysis
from harness.attention import FINETUNED, PRETRAINED, AttentionBatch, EncodedBatch
from harness.config import SHARED_DATA
from harness.errors import HarnessError
from harness.sources import SourceContext, SourceStream, register_source
from harness.wordlevel import WordLevelAnalysis, encode_words, word_maps
from tasks.coreference import MENTION_TYPES, Document, mention_head, mention_type, read_coreference

DEFAULT_COREF_DATA = SHARED_DATA / "litbank" / "conll"
GROUPS = ("all", *MENTION_TYPES)
BASELINES = ("nearest", "head_match")

# Clark et al. 2019, Table 2 (BERT-base, CoNLL-2012 dev, documents cut to 128 tokens), as fractions.
CLARK_TABLE_2 = {
    "nearest": {"all": 0.27, "pronoun": 0.29, "proper": 0.29, "nominal": 0.19},
    "head_match": {"all": 0.52, "pronoun": 0.47, "proper": 0.67, "nominal": 0.40},
    "rule_based": {"all": 0.69, "pronoun": 0.70, "proper": 0.77, "nominal": 0.60},
    "neural_coref": {"all": 0.83},
    "best_head": {"layer": 5, "head": 4, "accuracy": {"all": 0.65, "pronoun": 0.64, "proper": 0.73, "nominal": 0.58}},
}


def coref_data_path(value: str | Path | None) -> Path:
    """``--coref-data`` if given, else the shared LitBank folder, else a clear error."""
    if value:
        return Path(value)
    if not DEFAULT_COREF_DATA.is_dir():
        raise HarnessError(f"no --coref-data given and the default LitBank folder {DEFAULT_COREF_DATA} is absent; "
                           "pass --coref-data with a CoNLL-2012 *_gold_conll file, a .jsonlines file or a "
                           "LitBank conll/ folder")
    return DEFAULT_COREF_DATA


@dataclass
class CorefTargets:
    """The scored mentions of one encoded document (m of them, over its n kept words).

    ``heads``: (m,) head word of each mention; ``antecedent_heads``: (m, n) True at the head
    words of its antecedents; ``types``: (m,) index into `MENTION_TYPES`; ``nearest`` and
    ``head_match``: (m,) whether each baseline picks a right antecedent; ``mentions_cut``:
    coreferent mentions that end past the kept words.
    """

    heads: torch.Tensor
    antecedent_heads: torch.Tensor
    types: torch.Tensor
    nearest: torch.Tensor
    head_match: torch.Tensor
    mentions_cut: int


def coreference_targets(document: Document, num_words: int) -> CorefTargets:
    """Which mentions are scored, their antecedents' head words, and the baselines' answers."""
    coreferent = [m for m in document.mentions if document.cluster_sizes[m.cluster] > 1]
    kept = [m for m in coreferent if m.end < num_words]
    heads = [mention_head(document, m) for m in kept]
    head_words = [document.words[h].lower() for h in heads]
    rows: list[tuple[int, list[int], int, bool, bool]] = []
    for i, mention in enumerate(kept):
        # Earlier in (start, end) order and not overlapping: the mentions it may refer back to.
        candidates = [j for j in range(i) if kept[j].end < mention.start]
        antecedents = [heads[j] for j in candidates if kept[j].cluster == mention.cluster]
        if not antecedents:
            continue
        same_head = [j for j in candidates if head_words[j] == head_words[i]]
        nearest_right = kept[candidates[-1]].cluster == mention.cluster
        head_match_right = bool(same_head) and kept[same_head[-1]].cluster == mention.cluster
        kind = MENTION_TYPES.index(mention_type(document, mention, heads[i]))
        rows.append((heads[i], antecedents, kind, nearest_right, head_match_right))
    antecedent_heads = torch.zeros(len(rows), num_words, dtype=torch.bool)
    for row, (_, antecedents, _, _, _) in enumerate(rows):
        antecedent_heads[row, antecedents] = True
    return CorefTargets(
        heads=torch.tensor([r[0] for r in rows], dtype=torch.long),
        antecedent_heads=antecedent_heads,
        types=torch.tensor([r[2] for r in rows], dtype=torch.long),
        nearest=torch.tensor([r[3] for r in rows], dtype=torch.bool),
        head_match=torch.tensor([r[4] for r in rows], dtype=torch.bool),
        mentions_cut=len(coreferent) - len(kept),
    )


def attention_hits(maps: torch.Tensor, heads: torch.Tensor, antecedent_heads: torch.Tensor) -> torch.Tensor:
    """Whether each attention head points each mention to an antecedent.

    ``maps``: (layers, heads, n, n) word-level attention, rows attend to columns;
    ``heads``: (m,) head word per mention; ``antecedent_heads``: (m, n) bool.
    Returns (layers, heads, m) bool: the argmax of the mention head's row, with the word
    itself excluded, is an antecedent's head word.
    """
    mentions = torch.arange(len(heads))
    rows = maps[:, :, heads, :].clone()
    rows[:, :, mentions, heads] = float("-inf")
    return antecedent_heads[mentions, rows.argmax(dim=-1)]


def per_group(values: torch.Tensor, types: torch.Tensor) -> torch.Tensor:
    """Sums of ``values`` (..., m) over all mentions and over each type: (len(GROUPS), ...)."""
    one_hot = torch.nn.functional.one_hot(types, len(MENTION_TYPES)).to(torch.long)
    by_type = values.to(torch.long) @ one_hot  # (..., types)
    return torch.cat([by_type.sum(dim=-1, keepdim=True), by_type], dim=-1).movedim(-1, 0)


def document_windows(document: Document, sentence_tokens: list[int], budget: int) -> Iterator[Document]:
    """Consecutive runs of whole sentences of at most ``budget`` word pieces each."""
    starts = document.sentence_starts
    ends = [*starts[1:], len(document.words)]
    first, used = 0, 0
    for index, tokens in enumerate(sentence_tokens):
        if used and used + tokens > budget:
            yield document.window(starts[first], ends[index - 1])
            first, used = index, 0
        used += tokens
    if starts:
        yield document.window(starts[first], ends[-1])


def split_into_windows(tokenizer: Any, documents: list[Document], max_tokens: int) -> list[Document]:
    """Every document as consecutive sentence windows that fit ``max_tokens`` with [CLS]/[SEP]."""
    budget = max_tokens - tokenizer.num_special_tokens_to_add(pair=False)
    windows: list[Document] = []
    for document in documents:
        sentences = [document.words[s:e] for s, e in
                     zip(document.sentence_starts, [*document.sentence_starts[1:], len(document.words)])]
        counts = [len(ids) for ids in tokenizer(sentences, add_special_tokens=False,
                                                 is_split_into_words=True)["input_ids"]] if sentences else []
        windows.extend(document_windows(document, counts, budget))
    return windows


def encoded_documents(tokenizer: Any, documents: list[Document], batch_size: int,
                      max_tokens: int) -> Iterator[EncodedBatch]:
    """Batches of documents cut to ``max_tokens``; items are `WordAlignedItem`s of `Document`s."""
    for start in range(0, len(documents), batch_size):
        chunk = documents[start:start + batch_size]
        yield encode_words(tokenizer, [document.words for document in chunk], max_tokens, chunk)[0]


@register_source("coreference")
def coreference_source(context: SourceContext) -> SourceStream:
    """The coreference corpus (``--coref-data``, default LitBank), one document per row."""
    settings = context.settings
    path = coref_data_path(settings.coref_data)
    documents = read_coreference(path)
    notes: dict[str, Any] = {"coref_data": str(path), "documents": len(documents)}
    if settings.coref_windows:
        documents = split_into_windows(context.tokenizer, documents, settings.max_tokens)
        notes["windows"] = len(documents)
    return SourceStream(
        batches=encoded_documents(context.tokenizer, documents, settings.eval_batch_size, settings.max_tokens),
        num_items=len(documents),
        notes=notes,
    )


@register_analysis
class Coreference(WordLevelAnalysis):
    """Antecedent selection accuracy per head and mention type, with Clark's baselines."""

    name = "coreference"
    source = "coreference"

    def __init__(self, context: AnalysisContext) -> None:
        super().__init__(context)
        grid = (len(GROUPS), context.num_layers, context.num_heads)
        self.hits = {checkpoint: torch.zeros(grid, dtype=torch.long) for checkpoint in context.checkpoints}
        self.baseline_hits = {name: torch.zeros(len(GROUPS), dtype=torch.long) for name in BASELINES}
        self.mentions = torch.zeros(len(GROUPS), dtype=torch.long)
        self.documents = self.documents_cut = self.words_cut = self.mentions_cut = 0

    def update_words(self, batch: AttentionBatch) -> None:
        targets = [coreference_targets(aligned.item, aligned.num_words) for aligned in batch.items]
        for aligned, target in zip(batch.items, targets):
            self.documents += 1
            self.documents_cut += aligned.words_cut > 0
            self.words_cut += aligned.words_cut
            self.mentions_cut += target.mentions_cut
            self.mentions += per_group(torch.ones_like(target.types), target.types)
            self.baseline_hits["nearest"] += per_group(target.nearest, target.types)
            self.baseline_hits["head_match"] += per_group(target.head_match, target.types)
        for checkpoint, hits in self.hits.items():
            for (_, maps), target in zip(word_maps(batch, checkpoint, self.from_mode), targets):
                if len(target.heads):
                    hits += per_group(attention_hits(maps, target.heads, target.antecedent_heads), target.types)

    def result(self) -> dict[str, Any]:
        counts = self.mentions.clamp(min=1).double()
        accuracy = {checkpoint: hits.double() / counts[:, None, None] for checkpoint, hits in self.hits.items()}
        result = {
            "coref_data": str(coref_data_path(self.context.options.get("coref_data"))),
            "word_attention_from": self.from_mode,
            "max_tokens": self.context.options.get("max_tokens", 128),
            "documents": self.documents,
            "documents_cut": self.documents_cut,
            "words_cut": self.words_cut,
            "mentions_cut": self.mentions_cut,
            "mentions": dict(zip(GROUPS, self.mentions.tolist())),
            "baselines": {name: self._by_group(hits.double() / counts) for name, hits in self.baseline_hits.items()},
            "accuracy_per_head": {checkpoint: {group: grid.tolist() for group, grid in zip(GROUPS, acc)}
                                  for checkpoint, acc in accuracy.items()},
            "best_head": {checkpoint: self._best_heads(acc) for checkpoint, acc in accuracy.items()},
            "paper": CLARK_TABLE_2,
        }
        if {PRETRAINED, FINETUNED} <= accuracy.keys():
            result["change"] = self._change(accuracy[PRETRAINED], accuracy[FINETUNED])
        return {"coreference": result}

    def _change(self, before: torch.Tensor, after: torch.Tensor) -> dict[str, Any]:
        """Fine-tuned minus pre-trained, by group: best head vs best head, and at the
        pre-trained model's best head overall (does the head that tracked coreference keep it?)."""
        num_heads = before.shape[-1]
        index = int(before[0].flatten().argmax())
        layer, head = index // num_heads, index % num_heads
        return {
            "best_head": self._by_group(after.flatten(1).max(dim=1).values - before.flatten(1).max(dim=1).values),
            "at_pretrained_best_head": {"layer": layer + 1, "head": head + 1,
                                        **self._by_group(after[:, layer, head] - before[:, layer, head])},
        }

    def _by_group(self, values: torch.Tensor) -> dict[str, float | None]:
        """Per group, ``values`` or None where the group has no mentions (JSON has no NaN)."""
        return {group: (float(v) if n else None) for group, v, n in zip(GROUPS, values, self.mentions.tolist())}

    def _best_heads(self, accuracy: torch.Tensor) -> dict[str, Any]:
        """The best head (1-indexed) for each group, and the overall best head's accuracy by
        group (Clark's Table 2 row "5-4")."""
        num_heads = accuracy.shape[-1]
        best = {}
        for group, grid in zip(GROUPS, accuracy):
            index = int(grid.flatten().argmax())
            best[group] = {"layer": index // num_heads + 1, "head": index % num_heads + 1,
                           "accuracy": float(grid.flatten()[index]) if self.mentions[GROUPS.index(group)] else None}
        layer, head = best["all"]["layer"] - 1, best["all"]["head"] - 1
        best["overall_head_by_type"] = self._by_group(accuracy[:, layer, head])
        return best

    @staticmethod
    def metrics(summary: dict[str, Any]) -> list[tuple[str, float]]:
        """Scalars for MLflow: per mention type, each baseline and each checkpoint's best head."""
        result = summary["coreference"]
        out = [(f"coref_{group}_{name}", values[group])
               for name, values in result["baselines"].items() for group in GROUPS]
        out += [(f"coref_{group}_{checkpoint}", best[group]["accuracy"])
                for checkpoint, best in result["best_head"].items() for group in GROUPS]
        return [(name, value) for name, value in out if value is not None]

    @staticmethod
    def draw(summary: dict[str, Any], out_dir: Path) -> list[Path]:
        result = summary["coreference"]
        title = (f"{summary.get('model', 'model')} ({summary.get('task', '?')}) on "
                 f"{data_name(result)}, {result['mentions']['all']} mentions")
        return [*draw_head_grids(result, out_dir, title), draw_by_type(result, out_dir, title),
                write_table(result, out_dir)]


LABELS = {"pretrained": "pre-trained", "finetuned": "fine-tuned"}


def draw_head_grids(result: dict[str, Any], out_dir: Path, title: str) -> list[Path]:
    """Accuracy of every head (all mentions) per checkpoint, and fine-tuned minus pre-trained."""
    from harness.figures import draw_head_grid

    grids = {checkpoint: torch.tensor(groups["all"]) for checkpoint, groups in result["accuracy_per_head"].items()}
    top = max(float(grid.max()) for grid in grids.values())
    paths = [draw_head_grid(grid.tolist(), out_dir / f"coreference_accuracy_{checkpoint}.png",
                            title=f"antecedent selection accuracy, {LABELS.get(checkpoint, checkpoint)}\n{title}",
                            colorbar_label="accuracy (all mentions)", vmin=0.0, vmax=top, cmap="viridis")
             for checkpoint, grid in grids.items()]
    if {"pretrained", "finetuned"} <= grids.keys():
        change = grids["finetuned"] - grids["pretrained"]
        bound = max(float(change.abs().max()), 1e-6)
        paths.append(draw_head_grid(change.tolist(), out_dir / "coreference_accuracy_change.png",
                                    title=f"coreference accuracy, fine-tuned minus pre-trained\n{title}",
                                    colorbar_label="accuracy change", vmin=-bound, vmax=bound, cmap="RdBu_r"))
    return paths


def our_rows(result: dict[str, Any]) -> list[tuple[str, dict[str, float | None]]]:
    """(label, accuracy by group): the baselines, then each checkpoint's best head overall."""
    rows = [("Nearest", result["baselines"]["nearest"]), ("Head match", result["baselines"]["head_match"])]
    for checkpoint, best in result["best_head"].items():
        rows.append((f"best head {best['all']['layer']}-{best['all']['head']}, {LABELS.get(checkpoint, checkpoint)}",
                     best["overall_head_by_type"]))
    return rows


def paper_rows(result: dict[str, Any]) -> list[tuple[str, dict[str, float]]]:
    """(label, accuracy by group) of Clark et al.'s Table 2."""
    paper = result["paper"]
    best = paper["best_head"]
    return [("Nearest", paper["nearest"]), ("Head match", paper["head_match"]),
            ("Rule-based", paper["rule_based"]), (f"best head {best['layer']}-{best['head']}", best["accuracy"])]


def bar_colour(label: str) -> str:
    """The same method gets the same colour in both panels."""
    order = ("Nearest", "Head match", "Rule-based", "best head")
    position = next(i for i, prefix in enumerate(order) if label.startswith(prefix))
    return f"C{position + (label.endswith('fine-tuned'))}"


def data_name(result: dict[str, Any]) -> str:
    """Short name of the corpus for titles: its last two path parts (``litbank/conll``)."""
    return "/".join(Path(result["coref_data"]).parts[-2:])


def draw_by_type(result: dict[str, Any], out_dir: Path, title: str) -> Path:
    """Grouped bars by mention type: our baselines and best heads, and Clark's Table 2 beside."""
    import numpy as np

    from harness.figures import plt, save

    figure, panels = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    x = np.arange(len(GROUPS))
    panel_rows = ((panels[0], our_rows(result), f"ours: {data_name(result)}",
                   [f"{g}\n(n={result['mentions'][g]})" for g in GROUPS]),
                  (panels[1], paper_rows(result), "Clark et al. 2019: BERT-base, CoNLL-2012", list(GROUPS)))
    for panel, rows, heading, ticks in panel_rows:
        width = 0.8 / len(rows)
        for offset, (label, values) in enumerate(rows):
            heights = [np.nan if values.get(g) is None else values[g] for g in GROUPS]
            panel.bar(x + (offset - (len(rows) - 1) / 2) * width, heights, width, label=label,
                      color=bar_colour(label))
        panel.set_xticks(x, ticks)
        panel.set_xlabel("mention type")
        panel.set_ylim(0, 1.3)
        panel.set_yticks(np.linspace(0, 1, 6))
        panel.set_title(heading, fontsize=9)
        panel.grid(axis="y", alpha=0.3)
        panel.legend(fontsize=7, ncol=2, loc="upper center")
    panels[0].set_ylabel("antecedent selection accuracy")
    figure.suptitle(title, fontsize=9)
    return save(figure, out_dir / "coreference_by_type.png")


def write_table(result: dict[str, Any], out_dir: Path) -> Path:
    """Clark's Table 2 layout as Markdown: ours, with Clark's number in brackets."""
    def line(label: str, ours: dict[str, float | None], theirs: dict[str, float]) -> str:
        cells = []
        for group in GROUPS:
            mine = "–" if ours.get(group) is None else f"{100 * ours[group]:.1f}"
            cells.append(mine if theirs.get(group) is None else f"{mine} ({100 * theirs[group]:.0f})")
        return f"| {label} | " + " | ".join(cells) + " |"

    paper = result["paper"]
    ours = our_rows(result)
    lines = [f"Antecedent selection accuracy (%) on {result['coref_data']}; Clark et al. 2019 "
             "(BERT-base, CoNLL-2012, their best head 5-4) in brackets.", "",
             "| method | " + " | ".join(f"{g} (n={result['mentions'][g]})" for g in GROUPS) + " |",
             "|---" * (len(GROUPS) + 1) + "|",
             line(*ours[0], paper["nearest"]), line(*ours[1], paper["head_match"]),
             line("Rule-based (Clark only)", {}, paper["rule_based"]),
             *(line(label, values, paper["best_head"]["accuracy"]) for label, values in ours[2:])]
    lines += ["", f"Documents: {result['documents']} ({result['documents_cut']} cut to {result['max_tokens']} "
                  f"word pieces; {result['words_cut']} words and {result['mentions_cut']} coreferent mentions cut)."]
    path = out_dir / "coreference_table.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path
