"""Kovaleva et al.'s feature attention as their code computed it (§4.4), and her §5.

§4.4 on the task's own dev inputs (the run's dev sample, riding on the task source's forward
pass), at token level, tagged by spaCy's ``en_core_web_sm``: for an input and a head, the
attention a token receives averaged over all rows of the map (normalised by the input's
length); a feature's value is the maximum over the word pieces of the words that carry it,
and an input without the feature counts as 0 (negation aside: inputs without a negation
word are skipped, as her code does). spaCy splits "don't" into "do" + "n't", so "n't" counts
as a negation word beside her list. [CLS] is column 0, [SEP] the maximum over the [SEP]
columns. §5: the last layer's [CLS] row, attention to the same tokens of interest (the
maximum over their word pieces), per head.

The ``features`` analysis keeps the treebank variant (gold tags, word level, inputs without
the feature skipped), as a check of the tagger's effect.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable

import torch

from harness.analyses.base import Analysis, AnalysisContext, register_analysis
from harness.analyses.features import (
    NAMES,
    NEGATION_WORDS,
    OBJECT_RELATIONS,
    SUBJECT_RELATIONS,
    feature_changes,
    feature_statistics,
)
from harness.config import AnalysisConfig
from harness.inputs.batches import AttentionBatch, real_tokens
from harness.inputs.encoding import token_spans
from harness.results.store import FileHashes
from harness.results.store import Settings as StoredSettings
from harness.views.features import FeatureChanges
from harness.views.features_task import TaskFeaturesResult, TaskFeaturesView
from tasks.tagging import TaggedToken, tag, tagger_identity, tagger_package

TOKEN_FEATURES: dict[str, Callable[[TaggedToken], bool]] = {
    "nouns": lambda token: token.tag.startswith("NN"),
    "verbs": lambda token: token.tag.startswith("VB"),
    "pronouns": lambda token: token.tag in ("PRP", "PRP$"),
    "subjects": lambda token: token.relation in SUBJECT_RELATIONS,
    "objects": lambda token: token.relation in OBJECT_RELATIONS,
    "negation": lambda token: token.text.lower().replace("\u2019", "'") in NEGATION_WORDS,
}
SKIPPED_WITHOUT = ("negation",)  # the one feature whose absent inputs her code skips instead of counting 0


def feature_membership(
    spans: list[tuple[int, int, int] | None], tagged: tuple[list[TaggedToken], ...], seq_len: int
) -> torch.Tensor:
    """(features, seq) bool, features in `NAMES` order: which word pieces belong to a word
    with each linguistic feature (``spans`` from `token_spans`; ``tagged``: the tokens of
    ``text_a`` and ``text_b``, in text order); the [CLS] and [SEP] rows are left for the caller."""
    flags = [[[test(token) for test in TOKEN_FEATURES.values()] for token in tokens] for tokens in tagged]
    ends = [[token.end for token in tokens] for tokens in tagged]
    membership = [[False] * seq_len for _ in NAMES]
    for position, span in enumerate(spans):
        if span is None:
            continue
        segment, start, end = span
        word = bisect.bisect_right(ends[segment], start)  # the first word ending after the piece starts
        while word < len(ends[segment]) and tagged[segment][word].start < end:  # every word the piece overlaps
            for feature, flag in enumerate(flags[segment][word]):
                membership[feature][position] |= flag
            word += 1
    return torch.tensor(membership)


@register_analysis
class TaskFeatures(Analysis):
    """Per checkpoint: feature statistics (as ``features``) over the task's dev inputs, the
    inputs that have each feature, and §5's last-layer [CLS] attention per feature and head."""

    view = TaskFeaturesView
    on_by_default = tagger_package() is not None
    reference = {
        "kovaleva": "spaCy tags on each task's dev inputs, token level, max over a word's pieces, "
        "0 for inputs without the feature (negation: skipped); §5: last layer's [CLS] row",
        "finding": "early layers attend to [CLS], later ones to [SEP]; feature weights are small next to [CLS]/[SEP]",
    }

    def __init__(self, context: AnalysisContext) -> None:
        super().__init__(context)
        checkpoints, features = len(context.checkpoints), len(NAMES)
        device = context.device
        self.totals = torch.zeros(
            checkpoints, features, context.num_layers, context.num_heads, dtype=torch.float64, device=device
        )
        self.cls_totals = torch.zeros(checkpoints, features, context.num_heads, dtype=torch.float64, device=device)
        self.counted = torch.zeros(features, dtype=torch.float64, device=device)
        self.present = torch.zeros(features, dtype=torch.float64, device=device)
        self.examples = 0
        self.skipped = torch.tensor([name in SKIPPED_WITHOUT for name in NAMES], device=device)

    @classmethod
    def settings_identity(cls, settings: AnalysisConfig, hashes: FileHashes) -> StoredSettings:
        """The settings used, and which POS tagger tags the inputs (`tasks.tagging.tagger_identity`)."""
        return {**super().settings_identity(settings, hashes), **tagger_identity()}

    def membership(self, batch: AttentionBatch) -> torch.Tensor:
        """(batch, features, seq) bool on the attention's device: the word pieces of each feature."""
        items, pair = batch.encoded.items, self.context.run_task.is_pair
        spans = token_spans(self.context.run_tokenizer, items, self.context.max_length, pair)
        texts_a = tag([item.text_a for item in items])
        texts_b = tag([item.text_b for item in items]) if pair else [[] for _ in items]
        seq_len = batch.encoded.input_ids.shape[1]
        membership = torch.stack(
            [feature_membership(example, (a, b), seq_len) for example, a, b in zip(spans, texts_a, texts_b)]
        )
        membership[:, NAMES.index("[CLS]"), 0] = True
        membership[:, NAMES.index("[SEP]")] = batch.encoded.input_ids == self.context.run_tokenizer.sep_token_id
        return membership.to(batch.device)

    def update(self, batch: AttentionBatch) -> None:
        membership = self.membership(batch)  # (batch, features, seq)
        counted = membership.any(dim=-1) | ~self.skipped  # (batch, features): inputs that count
        rows = real_tokens(batch.lengths, membership.shape[-1]).float()[:, None, None, :, None]
        chosen = membership[:, :, None, None, :].float()
        for index, name in enumerate(self.context.checkpoints):
            maps = batch.attentions[name].float()  # (batch, layers, heads, seq, seq)
            received = (maps * rows).sum(dim=-2) / batch.lengths[:, None, None, None]  # (batch, layers, heads, seq)
            values = (received[:, None] * chosen).amax(dim=-1)  # (batch, features, layers, heads)
            self.totals[index] += (values * counted[:, :, None, None]).sum(dim=0).double()
            from_cls = maps[:, -1, :, 0, :]  # (batch, heads, seq): the last layer's [CLS] row
            focus = (from_cls[:, None] * chosen[:, :, 0]).amax(dim=-1)  # (batch, features, heads)
            self.cls_totals[index] += (focus * counted[:, :, None]).sum(dim=0).double()
        self.counted += counted.sum(dim=0)
        self.present += membership.any(dim=-1).sum(dim=0)
        self.examples += len(batch.items)

    def result(self) -> dict[str, TaskFeaturesResult]:
        counts = self.counted.clamp(min=1).cpu()
        means, cls_means = (
            self.totals.cpu() / counts[None, :, None, None],
            self.cls_totals.cpu() / counts[None, :, None],
        )
        present = {name: int(value) for name, value in zip(NAMES, self.present.tolist())}
        return {
            checkpoint: {
                **feature_statistics(means[index]),
                "inputs_with_feature": present,
                "inputs_counted": dict(zip(NAMES, map(int, self.counted.tolist()))),
                "examples": self.examples,
                "cls_last_layer": {name: cls_means[index, position].tolist() for position, name in enumerate(NAMES)},
            }
            for index, checkpoint in enumerate(self.context.checkpoints)
        }

    @classmethod
    def compare(
        cls, per_checkpoint: dict[str, TaskFeaturesResult], pairs: list[tuple[str, str]]
    ) -> dict[str, FeatureChanges]:
        return feature_changes(per_checkpoint, pairs)
