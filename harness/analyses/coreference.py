"""Clark et al.'s coreference analysis: does a mention's head word attend to its antecedent?

For every coreferent mention with an antecedent inside the encoded text, each head's
word-level attention row of the mention's head word is taken; the head is right when the
word it attends to most (itself and [CLS]/[SEP] excluded) is the head word of one of the
mention's antecedents (Clark et al. 2019, Section 4.3, "antecedent selection accuracy").
Accuracy is counted per head and per mention type (pronoun, proper, nominal), beside
baselines that do not look at attention. Each baseline picks one word, the head word of a
mention, and is scored exactly like a head (right when that word is an antecedent's head):

- ``nearest`` (Clark's "Nearest", "picking the nearest other mention"): the closest earlier,
  non-overlapping mention, as an antecedent precedes its mention;
- ``head_match`` (Clark's "Head match", "the nearest other mention with the same head
  word"): the closest earlier, non-overlapping mention with the same head word
  (case-insensitive); a mention with none is counted wrong;
- ``nearest_either_side`` (ours, no paper number): the other mention whose head word is
  closest to the mention's head word on either side, the candidates of an attention head,
  which may look either way; mentions sharing the mention's own head word are not candidates
  (a head's own word is excluded from its argmax too); a tie goes to the earlier one.

Each checkpoint also keeps, per document, every head's hits on all mentions and the
document's scored mentions (``units``): the sample a change is resampled over
(`harness.views.evidence`), documents and not mentions, as the mentions of one document are
not independent.

"Mention" means a gold mention of a cluster with at least two mentions in the whole document
(CoNLL-2012 annotates no singletons; LitBank does, and they are left out so the candidates
match Clark's). Mentions are ordered by (start, end). Documents are cut to ``max_tokens``
word pieces (Clark used 128); mentions past the cut are counted, not scored, and are no
candidates. Head words and mention types come from `tasks.coreference`; the reasoning behind
the definitions is in ``docs/coreference.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from harness.analyses.base import AnalysisContext, best_head, register_analysis
from harness.analyses.word_level import WordLevelAnalysis
from harness.inputs.batches import AttentionBatch
from harness.inputs.words import word_maps
from harness.views.base import pair_name
from harness.views.coreference import (
    BASELINES,
    CHANGE,
    CLARK_TABLE_2,
    GROUPS,
    UNIT,
    CoreferenceComparison,
    CoreferenceResult,
    CoreferenceView,
)
from harness.views.evidence import UnitSums, best_of_many_change, head_names
from tasks.coreference import MENTION_TYPES, Document, Mention, mention_head, mention_type


@dataclass
class CorefTargets:
    """The scored mentions of one encoded document (m of them, over its n kept words).

    ``heads``: (m,) head word of each mention; ``antecedent_heads``: (m, n) True at the head
    words of its antecedents; ``types``: (m,) index into `MENTION_TYPES`; ``baselines``: per
    name in `BASELINES`, (m,) whether the baseline's word is an antecedent's head word;
    ``mentions_cut``: coreferent mentions that end past the kept words.
    """

    heads: torch.Tensor
    antecedent_heads: torch.Tensor
    types: torch.Tensor
    baselines: dict[str, torch.Tensor]
    mentions_cut: int


def nearest_other_head(heads: list[int], own: int) -> int | None:
    """Nearest either side (ours): of the mention head words ``heads``, the closest to ``own``
    on either side (a tie goes to the earlier word), ``own`` itself excluded; None if there is none."""
    return min((h for h in heads if h != own), key=lambda h: (abs(h - own), h > own), default=None)


def baseline_picks(kept: list[Mention], heads: list[int], head_words: list[str], index: int) -> dict[str, int | None]:
    """The word each baseline picks as mention ``index``'s antecedent head (None: no pick)."""
    mention = kept[index]
    # Earlier in (start, end) order and not overlapping: the mentions it may refer back to.
    preceding = [j for j in range(index) if kept[j].end < mention.start]
    same_head = [j for j in preceding if head_words[j] == head_words[index]]
    return {
        "nearest": heads[preceding[-1]] if preceding else None,
        "head_match": heads[same_head[-1]] if same_head else None,
        "nearest_either_side": nearest_other_head(heads, heads[index]),
    }


def coreference_targets(document: Document, num_words: int) -> CorefTargets:
    """Which mentions are scored, their antecedents' head words, and whether each baseline is right."""
    coreferent = [m for m in document.mentions if document.cluster_sizes[m.cluster] > 1]
    kept = [m for m in coreferent if m.end < num_words]
    heads = [mention_head(document, m) for m in kept]
    head_words = [document.words[h].lower() for h in heads]
    rows: list[tuple[int, set[int], int, dict[str, int | None]]] = []
    for i, mention in enumerate(kept):
        # Its antecedents: earlier mentions of its chain that do not overlap it (nested or containing).
        antecedents = {heads[j] for j in range(i) if kept[j].end < mention.start and kept[j].cluster == mention.cluster}
        if antecedents:
            kind = MENTION_TYPES.index(mention_type(document, mention, heads[i]))
            rows.append((heads[i], antecedents, kind, baseline_picks(kept, heads, head_words, i)))
    antecedent_heads = torch.zeros(len(rows), num_words, dtype=torch.bool)
    for row, (_, antecedents, _, _) in enumerate(rows):
        antecedent_heads[row, list(antecedents)] = True
    return CorefTargets(
        heads=torch.tensor([r[0] for r in rows], dtype=torch.long),
        antecedent_heads=antecedent_heads,
        types=torch.tensor([r[2] for r in rows], dtype=torch.long),
        baselines={name: torch.tensor([r[3][name] in r[1] for r in rows], dtype=torch.bool) for name in BASELINES},
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
    # Summed by index, not by a product with a one-hot matrix: CUDA has no integer matrix product.
    by_type = values.new_zeros((*values.shape[:-1], len(MENTION_TYPES)), dtype=torch.long)
    by_type.index_add_(-1, types, values.to(torch.long))  # (..., types)
    return torch.cat([by_type.sum(dim=-1, keepdim=True), by_type], dim=-1).movedim(-1, 0)


def by_group(values: torch.Tensor | list[float], mentions: list[int]) -> dict[str, float | None]:
    """Per group, ``values`` or None where the group has no mentions (JSON has no NaN)."""
    return {group: (float(v) if n else None) for group, v, n in zip(GROUPS, values, mentions)}


# Any: `CoreferenceResult`'s best_head, the groups' heads and another shape in one object (its view says why)
def best_heads(accuracy: torch.Tensor, mentions: list[int]) -> dict[str, Any]:
    """The best head (1-indexed) of each group in ``accuracy`` (groups, layers, heads), and the
    overall best head's accuracy by group (Clark's Table 2 row "5-4")."""
    tops = {group: best_head(grid) for group, grid in zip(GROUPS, accuracy)}
    best: dict[str, Any] = {  # `CoreferenceResult`'s best_head: the groups' heads, then another shape
        group: {"layer": top["layer"], "head": top["head"], "accuracy": top["value"] if count else None}
        for (group, top), count in zip(tops.items(), mentions)
    }
    layer, head = tops["all"]["layer"] - 1, tops["all"]["head"] - 1
    best["overall_head_by_type"] = by_group(accuracy[:, layer, head], mentions)
    return best


@register_analysis
class Coreference(WordLevelAnalysis):
    """Antecedent selection accuracy per head and mention type, per checkpoint, with Clark's baselines."""

    view = CoreferenceView
    source = "coreference"
    settings_used = ("word_attention_from",)
    reference = {
        "clark_table2": CLARK_TABLE_2,
        "paper_setting": "bert-base-uncased, CoNLL-2012 dev, documents cut to 128 tokens",
    }

    def __init__(self, context: AnalysisContext) -> None:
        super().__init__(context)
        grid = (len(context.checkpoints), len(GROUPS), context.num_layers, context.num_heads)
        self.hits = torch.zeros(grid, dtype=torch.long, device=context.device)
        self.baseline_hits = {name: torch.zeros(len(GROUPS), dtype=torch.long) for name in BASELINES}
        self.mentions = torch.zeros(len(GROUPS), dtype=torch.long)
        self.documents = self.documents_cut = self.words_cut = self.mentions_cut = 0
        # per checkpoint, per document: every head's hits on all its mentions (the units of a change)
        self.document_hits: list[list[torch.Tensor]] = [[] for _ in context.checkpoints]
        self.document_mentions: list[int] = []

    def update_words(self, batch: AttentionBatch) -> None:
        targets = [coreference_targets(aligned.item, aligned.num_words) for aligned in batch.items]
        for aligned, target in zip(batch.items, targets):
            self.documents += 1
            self.documents_cut += aligned.words_cut > 0
            self.words_cut += aligned.words_cut
            self.mentions_cut += target.mentions_cut
            self.mentions += per_group(torch.ones_like(target.types), target.types)
            self.document_mentions.append(len(target.heads))
            for name, right in target.baselines.items():
                self.baseline_hits[name] += per_group(right, target.types)
        device = self.context.device
        for index, checkpoint in enumerate(self.context.checkpoints):
            for (_, maps), target in zip(word_maps(batch, checkpoint, self.from_mode), targets):
                grouped = torch.zeros_like(self.hits[index])
                if len(target.heads):
                    hits = attention_hits(maps, target.heads.to(device), target.antecedent_heads.to(device))
                    grouped = per_group(hits, target.types.to(device))
                self.hits[index] += grouped
                self.document_hits[index].append(grouped[0].flatten())

    def result(self) -> dict[str, CoreferenceResult]:
        mentions = self.mentions.tolist()
        counts = self.mentions.clamp(min=1).double()
        accuracy = self.hits.cpu().double() / counts[None, :, None, None]
        baselines = {name: by_group(hits.double() / counts, mentions) for name, hits in self.baseline_hits.items()}
        return {
            checkpoint: {
                "word_attention_from": self.from_mode,
                "max_tokens": self.context.settings.max_tokens,
                "documents": self.documents,
                "documents_cut": self.documents_cut,
                "words_cut": self.words_cut,
                "mentions_cut": self.mentions_cut,
                "mentions": dict(zip(GROUPS, mentions)),
                "baselines": baselines,
                "accuracy_per_head": {group: grid.tolist() for group, grid in zip(GROUPS, accuracy[index])},
                "best_head": best_heads(accuracy[index], mentions),
                "units": self.units(index).stored(),
            }
            for index, checkpoint in enumerate(self.context.checkpoints)
        }

    def units(self, index: int) -> UnitSums:
        """Checkpoint ``index``'s hits of every head on all mentions (documents, layers * heads), over each
        document's scored mentions."""
        rows, heads = self.document_hits[index], self.context.num_layers * self.context.num_heads
        hits = torch.stack(rows).cpu().numpy() if rows else np.zeros((0, heads))
        return UnitSums.of(hits, self.document_mentions, UNIT)

    @classmethod
    def compare(
        cls, per_checkpoint: dict[str, CoreferenceResult], pairs: list[tuple[str, str]]
    ) -> dict[str, CoreferenceComparison]:
        """After minus before, by group: best head vs best head (each the best of all heads on the
        mentions it is scored on, as the paper), and at the before model's best head overall
        (does the head that tracked coreference keep it?); and the evidence of the best head's
        change on all mentions, cross-fitted over the documents (`best_of_many_change`: chosen on
        one half, scored on the other)."""

        def changed(before: CoreferenceResult, after: CoreferenceResult) -> CoreferenceComparison:
            mentions = [before["mentions"][group] for group in GROUPS]
            grids = [np.asarray([stats["accuracy_per_head"][group] for group in GROUPS]) for stats in (before, after)]
            layer, head = before["best_head"]["all"]["layer"] - 1, before["best_head"]["all"]["head"] - 1
            best_change = grids[1].reshape(len(GROUPS), -1).max(axis=1) - grids[0].reshape(len(GROUPS), -1).max(axis=1)
            layers, heads = grids[0].shape[1:]
            evidence = best_of_many_change(
                UnitSums.read(before["units"]), UnitSums.read(after["units"]), head_names(layers, heads)
            )
            return {
                "best_head": by_group(best_change.tolist(), mentions),
                "at_before_best_head": {
                    "layer": layer + 1,
                    "head": head + 1,
                    **by_group((grids[1][:, layer, head] - grids[0][:, layer, head]).tolist(), mentions),
                },
                "evidence": {CHANGE: evidence},
            }

        return {pair_name((a, b)): changed(per_checkpoint[a], per_checkpoint[b]) for a, b in pairs}
