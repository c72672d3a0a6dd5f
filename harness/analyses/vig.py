"""Vig's head behaviours per head, for every checkpoint, on the task's own inputs.

Vig ("Deconstructing BERT", 2019, and "A Multiscale Visualization of Attention in the
Transformer Model", ACL 2019 demo) named six behaviours of BERT-base's heads from
visualisations, without measuring them: attention to the next token, to the previous token,
to identical words in the same sentence, to identical words in the other sentence, to the
other word pieces of the same word ("straw" <-> "##berries") and to the delimiters. Here each
is measured per head at token level, over real tokens only, as the share of a row's attention
that goes to the row's targets, averaged as Clark et al. average (`harness.analyses.surface`):
per example over its rows that have at least one target, then over the examples that have
such rows:

- ``same_segment_identical``: the tokens of the *other occurrences* of the row's word in the
  row's own text (sentence); the other pieces of the row's own occurrence belong to
  ``same_word_pieces``, not here, so no share is counted twice;
- ``other_segment_identical``: the tokens of the occurrences of the row's word in the other
  text of a pair (single-sentence inputs have no such rows);
- ``same_word_pieces``: the other tokens of the row's own word occurrence (both directions),
  for rows whose word the tokenizer split into more than one piece;
- ``next`` and ``previous``: the next and the previous real token (rows that have one);
- ``delimiters``: the special tokens the tokenizer's template adds around the texts ([CLS]
  and [SEP], RoBERTa's ``<s>`` and ``</s>``), by role: the tokens its sequence ids leave out
  of both texts, whatever they are called; every real row. Not ``all_special_ids``: a word
  the vocabulary lacks is encoded as [UNK] (``<unk>``), which is among them but stands for a
  word of the text.

A word is a maximal run of word characters (``\\w+``: letters, digits, underscore) in the
example's text, lower-cased; a token belongs to the first word its character span (the
tokenizer's offsets, `harness.inputs.encoding.token_spans`) overlaps, and tokens that overlap
none (punctuation, a lone ``Ġ`` or ``▁``) belong to no word. Words are read from the text and
not from the fast tokenizer's word ids because those follow each tokenizer's pre-tokenizer:
SentencePiece splits only at spaces, so "mat." would be one word there and two for WordPiece
and byte-level BPE, and the same text would match different words under different models.
Punctuation is no word, so that a "." attending to the other sentence's "." (Clark's
punctuation heads, measured by `surface`) does not pass for an identical-word head.

Each statistic has a chance level beside it: the share a uniform row over the example's real
tokens would give (its number of targets over the real length), averaged the same way. Heads
are labelled by `BEHAVIOURS`, and per declared pair the change of every statistic per head
and the heads whose labels changed are kept. ``pair_items`` counts the inputs that were pairs
of texts: none on a single-sentence task, where the other sentence is not defined (a pair task
whose sentences share no word has pairs, and no rows for it).

Each checkpoint also keeps, per dev example and head, its share of attention to identical
words in the other sentence and whether it has such rows (``units``, the share's numerator and
denominator): the sample the changes of the strongest head and of the mean over heads are
resampled over (`harness.views.evidence`), on a task of pairs whose sentences share words.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

import numpy as np
import torch
from transformers.tokenization_utils_base import PreTrainedTokenizerBase

from harness.analyses.base import Analysis, AnalysisContext, best_head, changed_heads, register_analysis
from harness.inputs.batches import AttentionBatch, EncodedBatch, real_tokens
from harness.inputs.encoding import token_spans
from harness.views.base import BestHead, HeadValue, pair_name
from harness.views.evidence import Change, UnitSums, best_of_many_change, head_names, paired_change
from harness.views.vig import CROSS, STATISTICS, UNIT, VigComparison, VigResult, VigView, change_of

WORD = re.compile(r"\w+")
NO_ROLE = -1  # a token's segment, word or spelling where it has none (delimiters, punctuation, padding)

# Behaviour labels, each named as its statistic: label -> (share above, times its chance level above). Vig
# (2019) names the behaviours but gives no thresholds, so these are ours. Next, previous and the delimiters take
# Clark et al.'s thresholds, without a chance term as theirs: 0.5 for the previous and the next token, 0.6 (their
# [CLS] and [SEP] heads') for the delimiters. The word-matching ones have targets in few rows and compete with
# the delimiters, which take most of the attention in the middle layers: a head counts when at least 0.3 of its
# rows' attention goes to the matches (the share at which Gu et al. call a token a sink, `sinks`) and at least 5
# times what a uniform row would give, so that matches making up much of a short input do not pass by their number.
BEHAVIOURS = {
    "same_segment_identical": (0.3, 5.0),
    "other_segment_identical": (0.3, 5.0),
    "same_word_pieces": (0.3, 5.0),
    "next": (0.5, 0.0),
    "previous": (0.5, 0.0),
    "delimiters": (0.6, 0.0),
}


@dataclass(frozen=True)
class TokenRoles:
    """What each token of a batch is, as (batch, seq) tensors: ``segment`` (0: the first text,
    1: the second), ``word`` (an id per word occurrence of the example), ``spelling`` (an id per
    lower-cased word of the example: two occurrences of a word share it), each `NO_ROLE` where
    the token has none; ``delimiter`` (bool: a template token) and ``real`` (bool: not padding)."""

    segment: torch.Tensor
    word: torch.Tensor
    spelling: torch.Tensor
    delimiter: torch.Tensor
    real: torch.Tensor


def word_at(words: list[re.Match], ends: list[int], start: int, end: int) -> int | None:
    """The index of the first of ``words`` (ordered, with their ``ends``) that the span [start, end) overlaps."""
    index = bisect.bisect_right(ends, start)
    return index if index < len(words) and words[index].start() < end else None


def example_roles(spans: list[tuple[int, int, int] | None], texts: tuple[str, str]) -> list[tuple[int, int, int]]:
    """Per token of one example (``spans`` from `token_spans`): its segment, word occurrence and
    spelling ids (`TokenRoles`), `NO_ROLE` where it has none; a template token has none at all."""
    words = [list(WORD.finditer(text)) for text in texts]
    ends = [[match.end() for match in matches] for matches in words]
    spellings: dict[str, int] = {}
    roles = []
    for span in spans:
        segment, start, end = span if span is not None else (NO_ROLE, 0, 0)
        index = None if span is None else word_at(words[segment], ends[segment], start, end)
        if index is None:
            roles.append((segment, NO_ROLE, NO_ROLE))
            continue
        spelling = spellings.setdefault(words[segment][index].group().lower(), len(spellings))
        roles.append((segment, index + segment * len(words[0]), spelling))  # occurrences of both texts numbered apart
    return roles


def token_roles(tokenizer: PreTrainedTokenizerBase, encoded: EncodedBatch, max_length: int) -> TokenRoles:
    """The `TokenRoles` of a batch of task examples, read from the tokenizer's offsets on the
    examples' texts (the same encoding, truncated at ``max_length``)."""
    pair = encoded.second_text is not None  # `encode_examples` marks the second text of every pair input
    spans = token_spans(tokenizer, encoded.items, max_length, pair)
    lengths = encoded.lengths.tolist()
    if [len(example) for example in spans] != lengths:
        raise ValueError(
            f"the examples re-encoded at max_length {max_length} have other lengths than the batch's "
            f"({lengths}): the batch was encoded with another truncation"
        )
    table = torch.full((*encoded.input_ids.shape, 3), NO_ROLE, dtype=torch.long)
    for row, (item, example) in enumerate(zip(encoded.items, spans)):
        table[row, : len(example)] = torch.tensor(example_roles(example, (item.text_a, item.text_b or "")))
    real = real_tokens(encoded.lengths, encoded.input_ids.shape[1])
    segment, word, spelling = table.unbind(dim=-1)
    return TokenRoles(segment, word, spelling, real & (segment == NO_ROLE), real)


def behaviour_targets(roles: TokenRoles) -> torch.Tensor:
    """(batch, statistics, seq, seq) bool, statistics in `STATISTICS` order: which tokens (columns)
    are each row's targets for each behaviour; rows and columns of padding have none."""

    def pairwise(values: torch.Tensor) -> torch.Tensor:
        return (values[:, :, None] == values[:, None, :]) & (values != NO_ROLE)[:, :, None]

    real = roles.real[:, :, None] & roles.real[:, None, :]
    positions = torch.arange(roles.real.shape[1])
    step = positions[None, :] - positions[:, None]  # column minus row
    same_word, same_segment = pairwise(roles.word), pairwise(roles.segment)
    identical = pairwise(roles.spelling) & ~same_word
    targets = {
        "same_segment_identical": identical & same_segment,
        "other_segment_identical": identical & ~same_segment,
        "same_word_pieces": same_word & (step != 0),
        "next": real & (step == 1),
        "previous": real & (step == -1),
        "delimiters": roles.real[:, :, None] & roles.delimiter[:, None, :],
    }
    return torch.stack([targets[name] for name in STATISTICS], dim=1)


def target_rows(targets: torch.Tensor) -> torch.Tensor:
    """(batch, statistics): how many rows of each example have a target (``targets`` from `behaviour_targets`)."""
    return targets.amax(dim=-1).sum(dim=-1)


def behaviour_shares(attention: torch.Tensor, targets: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """(batch, layers, heads, statistics): per example and head, the mean over the rows that have
    a target of the attention they give their targets.

    ``attention``: (batch, layers, heads, seq, seq), rows attend to columns; ``targets``: float
    `behaviour_targets`; ``rows``: `target_rows`. A row without a target gives 0, so the mean is
    the sum over every row and target over the rows that have one: one product over rows and
    columns at once, with no map-sized temporary.
    """
    return torch.einsum("blhij,bkij->blhk", attention, targets) / rows.clamp(min=1)[:, None, None, :]


def chance_levels(targets: torch.Tensor, rows: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """(batch, statistics): `behaviour_shares` of uniform rows over each example's real tokens
    (each row gives its number of targets over the real length)."""
    return targets.sum(dim=(-2, -1)) / lengths[:, None] / rows.clamp(min=1)


def head_value(best: BestHead) -> HeadValue:
    """A best head without its leading positions: a behaviour's strongest head, as stored."""
    return {"layer": best["layer"], "head": best["head"], "value": best["value"]}


def behaviour_labels(per_head: dict[str, list[list[float]]], chance: dict[str, float]) -> list[list[list[str]]]:
    """The labels of every head (layers x heads lists of labels) from per-head means and chance levels."""
    layers, heads = len(per_head["next"]), len(per_head["next"][0])
    return [
        [
            [
                label
                for label, (above, times) in BEHAVIOURS.items()
                if per_head[label][layer][head] > max(above, times * chance[label])
            ]
            for head in range(heads)
        ]
        for layer in range(layers)
    ]


@register_analysis
class VigBehaviours(Analysis):
    """Vig's six behaviours per head with their chance levels and labels, per checkpoint."""

    view = VigView
    source = "task"
    reference = {
        "thresholds": {
            label: {"statistic": label, "above": above, "times_chance_above": times}
            for label, (above, times) in BEHAVIOURS.items()
        },
        "vig_2019": "six behaviours named from visualisations of BERT-base, neither counted nor thresholded",
    }

    def __init__(self, context: AnalysisContext) -> None:
        super().__init__(context)
        shape = (len(context.checkpoints), len(STATISTICS), context.num_layers, context.num_heads)
        self.totals = torch.zeros(shape, dtype=torch.float64, device=context.device)
        self.chance_totals = torch.zeros(len(STATISTICS), dtype=torch.float64, device=context.device)
        self.counts = torch.zeros(len(STATISTICS), dtype=torch.float64, device=context.device)
        self.num_items = 0
        self.pair_items = 0
        # per batch: each checkpoint's (examples, layers * heads) shares to identical words in the other
        # sentence where an example has such rows, and whether it has (the units of a change)
        self.cross_shares: list[list[torch.Tensor]] = [[] for _ in context.checkpoints]
        self.cross_examples: list[torch.Tensor] = []

    def update(self, batch: AttentionBatch) -> None:
        roles = token_roles(self.context.run_tokenizer, batch.encoded, self.context.max_length)
        targets = behaviour_targets(roles).to(batch.device, torch.float32)
        rows = target_rows(targets)
        valid = (rows > 0).float()  # (batch, statistics): the examples that have rows with such targets
        cross = list(STATISTICS).index(CROSS)
        for index, checkpoint in enumerate(self.context.checkpoints):
            shares = behaviour_shares(batch.attentions[checkpoint].float(), targets, rows) * valid[:, None, None, :]
            self.totals[index] += shares.sum(dim=0).permute(2, 0, 1).double()
            self.cross_shares[index].append(shares[..., cross].flatten(1))
        self.cross_examples.append(valid[:, cross])
        self.chance_totals += (chance_levels(targets, rows, batch.lengths) * valid).sum(dim=0).double()
        self.counts += valid.sum(dim=0).double()
        self.num_items += len(batch.items)
        self.pair_items += len(batch.items) if batch.encoded.second_text is not None else 0

    def result(self) -> dict[str, VigResult]:
        counts = self.counts.clamp(min=1)
        means = (self.totals / counts[None, :, None, None]).cpu()
        chance = dict(zip(STATISTICS, (self.chance_totals / counts).tolist()))
        examples = dict(zip(STATISTICS, map(int, self.counts.tolist())))
        results: dict[str, VigResult] = {}
        for index, checkpoint in enumerate(self.context.checkpoints):
            per_head = {name: means[index, position].tolist() for position, name in enumerate(STATISTICS)}
            labels = behaviour_labels(per_head, chance)
            results[checkpoint] = {
                "per_head": per_head,
                "per_layer": {
                    name: means[index, position].mean(dim=1).tolist() for position, name in enumerate(STATISTICS)
                },
                "strongest": {
                    name: head_value(best_head(means[index, position])) for position, name in enumerate(STATISTICS)
                },
                "chance": chance,
                "examples": examples,
                "labels": labels,
                "label_counts": {label: sum(label in cell for row in labels for cell in row) for label in BEHAVIOURS},
                "num_items": self.num_items,
                "pair_items": self.pair_items,
                "units": self.units(index).stored(),
            }
        return results

    def units(self, index: int) -> UnitSums:
        """Checkpoint ``index``'s share of attention to identical words in the other sentence per example and
        head (examples, layers * heads), over whether the example has rows for it (1 or 0)."""
        heads = self.context.num_layers * self.context.num_heads
        shares = torch.cat(self.cross_shares[index]).cpu().numpy() if self.num_items else np.zeros((0, heads))
        examples = torch.cat(self.cross_examples).cpu().numpy() if self.num_items else np.zeros(0)
        return UnitSums.of(shares, examples, UNIT)

    @classmethod
    def compare(cls, per_checkpoint: dict[str, VigResult], pairs: list[tuple[str, str]]) -> dict[str, VigComparison]:
        """Per pair (a, b): b minus a of every statistic per head, the heads whose labels changed,
        and the evidence of the changes of the strongest head's (cross-fitted: chosen on one half
        of the examples, scored on the other) and of the mean share of attention to identical
        words in the other sentence, over the examples; none where no example has such rows (a
        single-sentence task, or pairs whose sentences share no word)."""

        def change(before: list[list[float]], after: list[list[float]]) -> list[list[float]]:
            return [[b - a for a, b in zip(old, new)] for old, new in zip(before, after)]

        def evidence(before: VigResult, after: VigResult) -> dict[str, Change]:
            if not before["examples"][CROSS]:
                return {}
            first, second = (UnitSums.read(stats["units"]) for stats in (before, after))
            layers, heads = np.asarray(before["per_head"][CROSS]).shape
            return {
                change_of(f"{CROSS}_max"): best_of_many_change(first, second, head_names(layers, heads)),
                change_of(f"{CROSS}_mean"): paired_change(first, second, reduce="mean"),
            }

        return {
            pair_name((a, b)): {
                "per_head": {
                    name: change(per_checkpoint[a]["per_head"][name], per_checkpoint[b]["per_head"][name])
                    for name in STATISTICS
                },
                "label_changes": changed_heads(per_checkpoint[a]["labels"], per_checkpoint[b]["labels"]),
                "evidence": evidence(per_checkpoint[a], per_checkpoint[b]),
            }
            for a, b in pairs
        }
