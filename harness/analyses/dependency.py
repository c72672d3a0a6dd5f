"""Clark et al.'s Table 1: do single heads track dependency relations?

Each head predicts, for every word, the word it attends to most (diagonal zeroed, [CLS] and
[SEP] dropped, word-level attention): direction "dependent->head" reads the dependent's
row, "head->dependent" the dependent's column (which word attends most to it). A relation's
accuracy is the share of its dependents whose gold head is predicted. For every relation
with at least ``syntax_min_count`` (100) scored dependents (punctuation and root excluded, as in the
paper) the best (head, direction) is reported per checkpoint, beside the best fixed-offset
baseline (the same for every checkpoint, stored with each), over the offsets Clark et al.'s
code tried, -3..+2 (their 0, the word itself, is never right and left out). Counts are running
sums on the model's device. Each checkpoint also keeps, per treebank sentence, every (head,
direction)'s correct predictions on ours ``all`` and the sentence's scored words (``units``):
the sample a change is resampled over (`harness.views.evidence`), sentences and not words, as
the words of one sentence are not independent.

Two protocols for "all relations", from the same counts: ``all`` (ours) scores the dependents
the relation rows score, punctuation and roots left out; ``all_clark`` counts every word, as
Clark et al.'s ``evaluate_predictor`` did for the paper's Table 1 (a root is always wrong for
attention, which never predicts ROOT; its offset baseline clips at the sentence's ends as their
``offset_predictor``: before the first word is ROOT, past the last word is the last word).
The paper's ``all`` (34.5, baseline 26.3) is shown only beside ``all_clark``.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import torch

from harness.analyses.base import AnalysisContext, best_head, register_analysis
from harness.analyses.word_level import WordLevelAnalysis
from harness.inputs.batches import AttentionBatch
from harness.inputs.words import word_maps
from harness.views.base import pair_name
from harness.views.dependency import (
    ALL,
    ALL_CLARK,
    CHANGE,
    DIRECTIONS,
    PAPER_MODEL,
    PAPER_TABLE1,
    UD_TO_SD,
    UNIT,
    DependencyView,
    DirectedHead,
    RelationChange,
    RelationRow,
    SyntaxComparison,
    SyntaxResult,
    SyntaxSettings,
    paper_row,
)
from harness.views.evidence import UnitSums, best_of_many_change, head_names
from tasks.treebank import PUNCT_RELATIONS, Sentence

OFFSETS = (-3, -2, -1, 1, 2)  # Clark et al.'s code: range(-3, 3), less 0 (a word is never its own head)
ROOT = "root"  # the key of every word attached to the root, whatever its label says
UNSCORED = PUNCT_RELATIONS | {ROOT}  # out of our `all` and of the relation rows (the paper's rows skip them too)
ROOT_GOLD = -1  # gold "position" of the root: below every word, so attention never predicts it
# Offset-baseline protocols, the first index of the baseline counts: ours counts a prediction
# beyond the sentence as a miss (its root and punctuation columns are never read); Clark's
# clips it to ROOT (before the first word) or the last word (after the last).
OURS, CLARK = 0, 1
# Clark et al. score a possessor by the prediction of a following "'s" (the SD tree attaches
# "'s" to the possessor; the paper's Section 4.2 explains why).
POSSESSIVE_RELATIONS = frozenset({"poss", "nmod:poss"})
POSSESSIVE_MARKERS = frozenset({"'s", "'", "s'", "\u2019s", "\u2019"})


def counted_words(sentence: Sentence, num_words: int) -> tuple[torch.Tensor, torch.Tensor, list[str]]:
    """Every kept word whose head is kept or is the root (Clark's ``all`` counts them all).

    Returns (positions whose prediction is read, gold head positions (0-based, `ROOT_GOLD` for
    the root), relation keys (`ROOT` for root words)); a possessor followed by "'s" is read at
    the "'s" (Clark et al.'s special case).
    """
    read_at, gold, relations = [], [], []
    for i, (head, relation) in enumerate(zip(sentence.heads[:num_words], sentence.relations)):
        if head > num_words:
            continue
        follows = i + 1 < num_words and sentence.words[i + 1].lower() in POSSESSIVE_MARKERS
        read_at.append(i + 1 if relation in POSSESSIVE_RELATIONS and follows else i)
        gold.append(head - 1 if head else ROOT_GOLD)
        relations.append(relation if head else ROOT)
    return torch.tensor(read_at, dtype=torch.long), torch.tensor(gold, dtype=torch.long), relations


def head_predictions(maps: torch.Tensor) -> torch.Tensor:
    """Most-attended word per word and head, both directions: (2, layers, heads, words) from
    word-level ``maps`` (layers, heads, words, words); a word never predicts itself."""
    diagonal = torch.eye(maps.shape[-1], dtype=torch.bool, device=maps.device)
    masked = maps.masked_fill(diagonal, float("-inf"))
    return torch.stack([masked.argmax(dim=-1), masked.argmax(dim=-2)])


def offset_predictions(read_at: torch.Tensor, num_words: int) -> torch.Tensor:
    """(protocols, offsets, dependents): the word at each fixed offset from where the prediction
    is read; `OURS` as is (outside the sentence: a miss), `CLARK` clipped to [`ROOT_GOLD`, last word]."""
    shifted = read_at[None, :] + torch.tensor(OFFSETS, device=read_at.device)[:, None]
    return torch.stack([shifted, shifted.clamp(ROOT_GOLD, num_words - 1)])


class RelationCounts:
    """Running counts of correct predictions per relation; relations are added as they appear."""

    def __init__(self, shape: tuple[int, ...], device: torch.device) -> None:
        self.shape = shape
        self.device = device
        self.index: dict[str, int] = {}
        self.correct = torch.zeros(*shape, 0, dtype=torch.float64, device=device)

    def add(self, hits: torch.Tensor, relations: list[str]) -> None:
        """``hits``: (*shape, dependents) 0/1, one dependent per entry of ``relations``."""
        new = [r for r in dict.fromkeys(relations) if r not in self.index]
        for relation in new:
            self.index[relation] = len(self.index)
        if new:
            grown = torch.zeros(*self.shape, len(new), dtype=torch.float64, device=self.device)
            self.correct = torch.cat([self.correct, grown], dim=-1)
        columns = torch.tensor([self.index[r] for r in relations], dtype=torch.long, device=self.device)
        one_hot = torch.nn.functional.one_hot(columns, len(self.index)).double()
        self.correct += hits.to(self.device).double() @ one_hot

    def of(self, relation: str) -> torch.Tensor:
        """(*shape) correct-prediction counts of ``relation`` (float64); a relation never added raises `KeyError`."""
        return self.correct[..., self.index[relation]]


def best(accuracy: torch.Tensor) -> DirectedHead:
    """Best (direction, layer, head) of a (directions, layers, heads) accuracy grid, 1-indexed, in %."""
    top = best_head(accuracy)
    return {
        "layer": top["layer"],
        "head": top["head"],
        "direction": DIRECTIONS[top["leading"][0]],
        "accuracy": 100 * top["value"],
    }


def best_per_direction(accuracy: torch.Tensor) -> dict[str, DirectedHead]:
    """`best` within each direction of a (2, layers, heads) accuracy grid."""
    return {
        direction: {**best(accuracy[index : index + 1]), "direction": direction}
        for index, direction in enumerate(DIRECTIONS)
    }


def members(result: SyntaxResult) -> list[str]:
    """The names of the (direction, layer, head) members of a result's units, in their order:
    ``"5-4 head->dependent"``."""
    width = UnitSums.read(result["units"]).numerators.shape[1]
    if not result["relations"]:
        return [f"member {index + 1}" for index in range(width)]
    _, layers, heads = np.asarray(result["relations"][0]["per_head"]).shape
    return [f"{name} {direction}" for direction in DIRECTIONS for name in head_names(layers, heads)]


@register_analysis
class DependencyHeads(WordLevelAnalysis):
    """Per relation and checkpoint: best head and accuracy, with the offset baseline."""

    view = DependencyView
    source = "syntax"
    settings = SyntaxSettings
    settings_used = ("word_attention_from",)
    # keyed by our row: the paper's `all` sits under `all_clark`, the protocol it was measured with
    reference = {
        "clark_table1": {row: paper_row(row) for row in (ALL_CLARK, *PAPER_TABLE1) if paper_row(row)},
        "ud_to_sd": UD_TO_SD,
        "paper_model": PAPER_MODEL,
    }

    def __init__(self, context: AnalysisContext) -> None:
        super().__init__(context)
        self.min_count = SyntaxSettings.of(context.settings).syntax_min_count
        shape = (len(context.checkpoints), len(DIRECTIONS), context.num_layers, context.num_heads)
        self.heads = RelationCounts(shape, context.device)
        self.baseline = RelationCounts((2, len(OFFSETS)), torch.device("cpu"))  # (OURS/CLARK, offsets)
        self.totals = RelationCounts((), torch.device("cpu"))
        self.sentences = self.words = self.words_cut = self.arcs_cut = 0
        # per sentence: each checkpoint's correct predictions on ours `all` per (direction, layer, head), and
        # how many words `all` scores there (the units of a change)
        self.sentence_correct: list[torch.Tensor] = []
        self.sentence_scored: list[int] = []

    def update_words(self, batch: AttentionBatch) -> None:
        rows = [word_maps(batch, checkpoint, self.from_mode) for checkpoint in self.context.checkpoints]
        for per_checkpoint in zip(*rows):
            aligned = per_checkpoint[0][0]
            sentence: Sentence = aligned.item
            read_at, gold, relations = counted_words(sentence, aligned.num_words)
            scored = torch.tensor([r not in UNSCORED for r in relations], dtype=torch.bool)
            self._count_sentence(sentence, aligned.words_cut, int(scored.sum()))
            if not relations:
                self.sentence_correct.append(
                    torch.zeros(self.heads.shape, dtype=torch.float64, device=self.context.device).flatten(1)
                )
                continue
            on_device = read_at.to(self.context.device), gold.to(self.context.device)
            hits = torch.stack(
                [head_predictions(maps)[..., on_device[0]] == on_device[1] for _, maps in per_checkpoint]
            )
            self.sentence_correct.append((hits & scored.to(hits.device)).sum(dim=-1).flatten(1).double())
            # every word is counted; the protocols choose which relation columns they sum
            self.heads.add(hits, relations)
            self.baseline.add(offset_predictions(read_at, aligned.num_words) == gold, relations)
            self.totals.add(torch.ones(len(relations)), relations)

    def _count_sentence(self, sentence: Sentence, cut: int, scored: int) -> None:
        self.sentences += 1
        self.sentence_scored.append(scored)
        self.words += len(sentence)
        self.words_cut += cut
        scorable = sum(1 for h, r in zip(sentence.heads, sentence.relations) if r not in PUNCT_RELATIONS and h)
        self.arcs_cut += scorable - scored

    def _columns(self, relation: str) -> list[int]:
        """The relation columns a row sums: ours `ALL` every scored relation, `ALL_CLARK` every column."""
        index = self.totals.index  # every counter adds the same relations in the same order
        if relation == ALL_CLARK:
            return list(index.values())
        if relation == ALL:
            return [column for r, column in index.items() if r not in UNSCORED]
        return [index[relation]]

    def _row(self, correct: torch.Tensor, relation: str, protocol: int = OURS) -> RelationRow:
        """One checkpoint's row; ``correct``: its (directions, layers, heads, relations) counts on the CPU."""
        columns = self._columns(relation)
        count = int(self.totals.correct[columns].sum())
        grid = correct[..., columns].sum(dim=-1) / max(count, 1)
        baseline = self.baseline.correct[protocol][:, columns].sum(dim=-1) / max(count, 1)
        offset = int(baseline.argmax())
        return {
            "relation": relation,
            "count": count,
            "best": best(grid),
            "by_direction": best_per_direction(grid),
            "baseline": {"offset": OFFSETS[offset], "accuracy": 100 * float(baseline[offset])},
            "per_head": (100 * grid).tolist(),
        }

    def result(self) -> dict[str, SyntaxResult]:
        counts = {r: int(self.totals.of(r)) for r in self.totals.index if r not in UNSCORED}
        frequent = sorted((r for r, n in counts.items() if n >= self.min_count), key=lambda r: -counts[r])
        relations = [ALL, *frequent] if self.totals.index else []
        correct = self.heads.correct.cpu()
        return {
            checkpoint: {
                "relations": [self._row(correct[index], relation) for relation in relations],
                ALL_CLARK: self._row(correct[index], ALL_CLARK, CLARK) if relations else None,
                "min_count": self.min_count,
                "offsets": list(OFFSETS),
                "directions": list(DIRECTIONS),
                "word_attention_from": self.from_mode,
                "num_sentences": self.sentences,
                "num_words": self.words,
                "num_scored": sum(counts.values()),
                "words_cut": self.words_cut,
                "arcs_cut": self.arcs_cut,
                "units": self.units(index).stored(),
            }
            for index, checkpoint in enumerate(self.context.checkpoints)
        }

    def units(self, index: int) -> UnitSums:
        """Checkpoint ``index``'s correct predictions on ours `all` (sentences, directions * layers * heads),
        over each sentence's scored words."""
        width = len(DIRECTIONS) * self.context.num_layers * self.context.num_heads
        rows = [correct[index] for correct in self.sentence_correct]
        correct = torch.stack(rows).cpu().numpy() if rows else np.zeros((0, width))
        return UnitSums.of(correct, self.sentence_scored, UNIT)

    @classmethod
    def compare(
        cls, per_checkpoint: dict[str, SyntaxResult], pairs: list[tuple[str, str]]
    ) -> dict[str, SyntaxComparison]:
        """Per relation: best head before and after, the change, and the after model's accuracy
        at the before model's best head (does the head that tracked the relation keep it?); and
        the evidence of the best head's change on ours `all` (in points), the best (head,
        direction) cross-fitted over the sentences (`best_of_many_change`: chosen on one half,
        scored on the other)."""

        def changed(before: RelationRow, after: RelationRow) -> RelationChange:
            head = before["best"]
            same_head = after["per_head"][DIRECTIONS.index(head["direction"])][head["layer"] - 1][head["head"] - 1]
            return {
                "relation": before["relation"],
                "change": after["best"]["accuracy"] - head["accuracy"],
                "after_at_before_head": same_head,
            }

        def compared(before: SyntaxResult, after: SyntaxResult) -> SyntaxComparison:
            first, second = before[ALL_CLARK], after[ALL_CLARK]
            clark = changed(first, second) if first and second else None
            units = [UnitSums.read(stats["units"]) for stats in (before, after)]
            in_points = [replace(sums, numerators=100 * sums.numerators) for sums in units]  # as the rows give it
            return {
                "relations": [changed(b, a) for b, a in zip(before["relations"], after["relations"])],
                ALL_CLARK: clark,
                "evidence": {CHANGE: best_of_many_change(in_points[0], in_points[1], members(before))},
            }

        return {pair_name((a, b)): compared(per_checkpoint[a], per_checkpoint[b]) for a, b in pairs}
