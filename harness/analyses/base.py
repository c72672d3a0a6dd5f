"""The one small interface every analysis implements, and the registry of analyses.

An analysis consumes `AttentionBatch`es (attention of both checkpoints on the same inputs)
with `update`, then returns a JSON-serialisable `result`: the top-level keys it adds to
``summary.json`` (e.g. ``{"surface": {...}}``). Its `draw` turns the stored summary (never
live tensors) into figures, so ``harness figures`` redraws everything without recomputing.

Analyses that read text other than the task's dev set (a treebank, a coreference corpus,
a plain-text corpus) say so with ``source``; the pipeline streams each source once and
feeds it to every analysis that asked for it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from transformers import PreTrainedModel
from transformers.tokenization_utils_base import PreTrainedTokenizerBase

from harness.attention import AttentionBatch
from harness.config import AnalysisConfig


@dataclass
class AnalysisContext:
    """What an analysis may need besides attention: model shape, tokenizer, the models.

    ``checkpoints`` maps "pretrained"/"finetuned" to the loaded models, for analyses that
    need more than attention (gradients, head ablation). ``options`` carries the run's
    `AnalysisConfig` fields (paths, sample sizes); fields not given take that config's
    defaults, so every analysis can read every option.
    """

    num_layers: int
    num_heads: int
    tokenizer: PreTrainedTokenizerBase
    checkpoints: dict[str, PreTrainedModel]
    task_name: str
    seed: int = 0
    options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.options = {**asdict(AnalysisConfig()), **self.options}


class Analysis(ABC):
    """Streams attention batches in, gives one JSON-serialisable result out."""

    name: ClassVar[str]
    source: ClassVar[str] = "task"

    def __init__(self, context: AnalysisContext) -> None:
        self.context = context

    @abstractmethod
    def update(self, batch: AttentionBatch) -> None:
        """Fold one batch into running statistics; keep nothing that grows with the data."""

    @abstractmethod
    def result(self) -> dict[str, Any]:
        """The finished statistics as summary.json keys (lists, numbers, strings only)."""

    @classmethod
    def stored_in(cls, summary: dict[str, Any]) -> bool:
        """Whether ``summary`` holds this analysis's result (so it can be drawn)."""
        return cls.name in summary

    @staticmethod
    def metrics(summary: dict[str, Any]) -> list[tuple[str, float]]:
        """Headline scalars of the stored result, logged as MLflow metrics (name, value)."""
        return []

    @staticmethod
    def draw(summary: dict[str, Any], out_dir: Path) -> list[Path]:
        """Figures drawn from the stored ``summary``; returns the files written."""
        return []


ANALYSES: dict[str, type[Analysis]] = {}


def register_analysis(cls: type[Analysis]) -> type[Analysis]:
    """Class decorator adding an analysis to the registry under its ``name``."""
    if cls.name in ANALYSES:
        raise ValueError(f"analysis {cls.name!r} registered twice")
    ANALYSES[cls.name] = cls
    return cls
