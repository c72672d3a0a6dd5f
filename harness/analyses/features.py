"""Kovaleva et al.'s Section 4.4: how much attention each head gives to linguistic features.

For a sentence and a head, the attention a word receives is averaged over all rows of the
word-level map ([CLS] and [SEP] rows included, i.e. normalised by sequence length); a
feature's value is the maximum over the sentence's words that carry it, and sentences
without the feature are skipped. The features come from the treebank's gold annotation
(Kovaleva et al. tagged with spaCy): nouns, verbs, pronouns (Penn tags), subjects and
objects (dependency relations), negation words, plus [CLS] and [SEP] for scale. Each
checkpoint's values are running means over sentences; `compare` gives their change.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Literal

import numpy as np
import torch

from harness.analyses.base import AnalysisContext, best_head, register_analysis
from harness.analyses.word_level import WordLevelAnalysis
from harness.inputs.batches import AttentionBatch
from harness.inputs.words import word_maps
from harness.views.base import pair_name
from harness.views.features import SPECIAL, FeatureChanges, FeaturesResult, FeatureStatistics, FeaturesView
from tasks.treebank import Sentence

# Kovaleva et al.'s spaCy labels and their UD counterparts (UD splits "don't" into "do n't").
SUBJECT_RELATIONS = frozenset({"nsubj", "nsubjpass", "csubj", "csubjpass", "agent", "expl"})
OBJECT_RELATIONS = frozenset({"dobj", "obj", "iobj", "dative", "attr", "oprd"})
NEGATION_WORDS = frozenset(
    {
        "neither",
        "nor",
        "not",
        "never",
        "none",
        "nothing",
        "nowhere",
        "n't",
        "don't",
        "won't",
        "didn't",
        "hadn't",
        "haven't",
        "can't",
        "isn't",
        "wasn't",
        "shouldn't",
        "couldn't",
    }
)
UPOS_FALLBACK = {"nouns": {"NOUN", "PROPN"}, "verbs": {"VERB", "AUX"}, "pronouns": {"PRON"}}


def _tagged(prefixes: tuple[str, ...], exact: frozenset[str], fallback: str) -> Callable[[Sentence, int], bool]:
    """Penn-tag test, falling back to UPOS where the treebank has no Penn tags."""

    def test(sentence: Sentence, i: int) -> bool:
        xpos = sentence.xpos[i]
        if xpos in ("_", ""):
            return sentence.upos[i] in UPOS_FALLBACK[fallback]
        return xpos.startswith(prefixes) or xpos in exact

    return test


def _relation(names: frozenset[str]) -> Callable[[Sentence, int], bool]:
    return lambda sentence, i: sentence.relations[i] in names or sentence.relations[i].split(":")[0] in names


FEATURES: dict[str, Callable[[Sentence, int], bool]] = {
    "nouns": _tagged(("NN",), frozenset(), "nouns"),
    "verbs": _tagged(("VB",), frozenset(), "verbs"),
    "pronouns": _tagged((), frozenset({"PRP", "PRP$"}), "pronouns"),
    "subjects": _relation(SUBJECT_RELATIONS),
    "objects": _relation(OBJECT_RELATIONS),
    "negation": lambda sentence, i: sentence.words[i].lower().replace("\u2019", "'") in NEGATION_WORDS,
}
NAMES = (*FEATURES, *SPECIAL)
NORMALISATION = (
    "attention received, averaged over all rows of the word-level map ([CLS]/[SEP] rows included); "
    "max over the sentence's words with the feature"
)


def feature_positions(sentence: Sentence, num_words: int) -> dict[str, list[int]]:
    """Word positions (among the first ``num_words``) carrying each linguistic feature."""
    return {name: [i for i in range(num_words) if test(sentence, i)] for name, test in FEATURES.items()}


def feature_attention(maps: torch.Tensor, positions: dict[str, list[int]]) -> dict[str, torch.Tensor]:
    """Per feature present, (layers, heads): max over its words of the mean attention they receive.

    ``maps``: (layers, heads, words + 2, words + 2) with [CLS] first and [SEP] last.
    """
    received = maps.mean(dim=-2)  # (layers, heads, words + 2): attention received, averaged over rows
    values = {name: received[..., [1 + i for i in words]].amax(dim=-1) for name, words in positions.items() if words}
    values["[CLS]"] = received[..., 0]
    values["[SEP]"] = received[..., -1]
    return values


@register_analysis
class LinguisticFeatures(WordLevelAnalysis):
    """Mean over sentences of each feature's per-head attention, per checkpoint."""

    view = FeaturesView
    source = "syntax"
    settings_used = ("word_attention_from",)
    reference = {
        "kovaleva": "features tagged with spaCy on GLUE text; here the treebank's gold annotation",
        "normalisation": NORMALISATION,
    }

    def __init__(self, context: AnalysisContext) -> None:
        super().__init__(context)
        shape = (len(context.checkpoints), len(NAMES), context.num_layers, context.num_heads)
        self.totals = torch.zeros(shape, dtype=torch.float64, device=context.device)
        self.sentences = dict.fromkeys(NAMES, 0)
        self.words_cut = 0

    def update_words(self, batch: AttentionBatch) -> None:
        rows = [
            word_maps(batch, checkpoint, self.from_mode, keep_special=True) for checkpoint in self.context.checkpoints
        ]
        for per_checkpoint in zip(*rows):
            aligned = per_checkpoint[0][0]
            self.words_cut += aligned.words_cut
            positions = feature_positions(aligned.item, aligned.num_words)
            for index, (_, maps) in enumerate(per_checkpoint):
                values = feature_attention(maps, positions)
                for name, value in values.items():
                    self.totals[index, NAMES.index(name)] += value.double()
            for name in values:  # only the features this sentence has
                self.sentences[name] += 1

    def result(self) -> dict[str, FeaturesResult]:
        counts = torch.tensor([max(self.sentences[name], 1) for name in NAMES], dtype=torch.float64)
        means = self.totals.cpu() / counts[None, :, None, None]
        return {
            checkpoint: {
                **feature_statistics(means[index]),
                "sentences_with_feature": dict(self.sentences),
                "word_attention_from": self.from_mode,
                "words_cut": self.words_cut,
            }
            for index, checkpoint in enumerate(self.context.checkpoints)
        }

    @classmethod
    def compare(
        cls, per_checkpoint: dict[str, FeaturesResult], pairs: list[tuple[str, str]]
    ) -> dict[str, FeatureChanges]:
        return feature_changes(per_checkpoint, pairs)


def feature_changes(
    per_checkpoint: Mapping[str, FeatureStatistics], pairs: list[tuple[str, str]]
) -> dict[str, FeatureChanges]:
    """Per pair (a, b): b minus a of every feature's per-head and per-layer values."""

    def change(a: str, b: str, part: Literal["per_head", "per_layer"]) -> dict[str, list]:
        return {
            name: (np.asarray(per_checkpoint[b][part][name]) - np.asarray(per_checkpoint[a][part][name])).tolist()
            for name in NAMES
        }

    return {
        pair_name((a, b)): {"change_per_head": change(a, b, "per_head"), "change_per_layer": change(a, b, "per_layer")}
        for a, b in pairs
    }


def feature_statistics(means: torch.Tensor) -> FeatureStatistics:
    """``means`` (features, layers, heads), features in `NAMES` order: per head, per layer and the largest head."""
    return {
        "names": list(NAMES),
        "per_head": {name: means[position].tolist() for position, name in enumerate(NAMES)},
        "per_layer": {name: means[position].mean(dim=1).tolist() for position, name in enumerate(NAMES)},
        "max_head": {name: best_head(means[position]) for position, name in enumerate(NAMES)},
    }
