"""The base of the analyses over word-level attention (treebanks, coreference)."""

from __future__ import annotations

from abc import abstractmethod

from harness.analyses.base import Analysis, AnalysisContext
from harness.inputs.batches import AttentionBatch
from harness.inputs.words import single_threaded


class WordLevelAnalysis(Analysis):
    """An analysis of word-level attention (`word_maps`).

    It knows how attention *from* a split word is taken (``--word-attention-from``) and
    folds each batch in on one thread (see `single_threaded`).
    """

    def __init__(self, context: AnalysisContext) -> None:
        super().__init__(context)
        self.from_mode: str = context.settings.word_attention_from

    def update(self, batch: AttentionBatch) -> None:
        with single_threaded():
            self.update_words(batch)

    @abstractmethod
    def update_words(self, batch: AttentionBatch) -> None:
        """Fold one batch of word-aligned items into running statistics."""
