"""The one small interface every analysis implements, and the registry of analyses.

An analysis folds `AttentionBatch`es (what N named checkpoints produced on the same inputs,
on their device) into running statistics with `update`, and returns JSON-serialisable
statistics with `result`. Two kinds:

- **per-checkpoint** (the default): the statistics of each checkpoint depend on that
  checkpoint alone, so `result` returns ``{checkpoint: statistics}``, each stored under its
  own key and reused by every run that measures the same checkpoint on the same inputs (the
  pre-trained model on the treebank is measured once per model); `compare` derives what
  changed for each declared pair (a, b) from two stored results, ``b`` minus ``a``;
- **joint** (``joint = True``): the statistics need all checkpoints' attention on the same
  input at once (cosine of maps, distances between heads of different checkpoints), so
  `result` returns one dict, with a ``"per_pair"`` part for the declared pairs.

What it stored is read back by its `view` (`harness.views`): metrics, figures, tables,
findings; the analysis takes its name and version from the view.
An analysis reads the source named by ``source``; the pipeline streams each source once for
all analyses that read it. Adding one: subclass, decorate with `register_analysis`, in a new
module of ``harness/analyses`` (the package imports every module it holds).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass, fields
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar

import torch
from transformers import PretrainedConfig
from transformers.tokenization_utils_base import PreTrainedTokenizerBase

from harness.config import AnalysisConfig, Settings
from harness.inputs.batches import AttentionBatch, EncodedBatch
from harness.model.forward import Interventions
from harness.registry import registrar
from harness.results.entries import AnyEntry
from harness.results.store import FileHashes, JsonObject
from harness.results.store import Settings as StoredSettings
from harness.views.base import BestHead, ChangedHead, View
from tasks.spec import Task

ATTENTION = "attention"
GRADIENTS = "gradients"  # |dL/d attention| of each checkpoint that has a loss on the batch
GATE_GRADIENTS = "gate_gradients"  # dL/d xi_h per example and head (Michel et al.'s importance)
INTERVENES = "intervenes"  # the analysis re-runs the source under interventions (`AnalysisContext.evaluate`)
LOGITS = "logits"  # the classifier's output only: no attention captured for it
VALUE_NORMS = "value_norms"  # ||f_h(x_j)||, each token's transformed vector per head (`AttentionBatch.value_norms`)
HIDDEN_STATES = "hidden_states"  # what each layer returned, per token (`AttentionBatch.hidden_states`)
Units = Callable[[EncodedBatch, torch.Tensor], torch.Tensor]  # a batch's (V, batch, ...) logits -> (V, units, labels)


class VariantScorer(Protocol):
    """`AnalysisContext.score_variants`: the logits of ``checkpoint`` on every item of the source, in
    stream order, under each of V variants (`harness.model.forward.Interventions` of (V, layers,
    heads) masks): (V, items, labels) float32 on the CPU, one more pass over the source. With
    ``donor``, the given heads take that checkpoint's attention on the same batch (one pass of it
    per batch); with ``units``, each batch's logits are cut to the units scored (a tagging task's
    words) before they are joined."""

    def __call__(
        self, checkpoint: str, variants: Interventions, donor: str | None = None, units: Units | None = None
    ) -> torch.Tensor: ...


@dataclass(frozen=True)
class AnalysisContext:
    """What an analysis instance measures and may use besides attention.

    ``checkpoints``: the names of the checkpoints this instance measures (a per-checkpoint
    analysis gets only those whose stored result is missing); ``pairs``: the comparisons the
    pipeline declares, as (before, after) names; ``device``: where the attention lives, so
    running statistics can live there too; ``task``: the run's task (its labels and metrics);
    ``max_length``: the truncation of the task's inputs; ``trained``: the checkpoints whose
    classification head was trained; ``score_variants``: the logits of a checkpoint under V
    variants, one more pass over the source (`VariantScorer`; for analyses that intervene: ``INTERVENES``).
    """

    checkpoints: tuple[str, ...]
    num_layers: int
    num_heads: int
    settings: AnalysisConfig
    _: KW_ONLY  # the rest by name: a context is never built from a dozen positions
    tokenizer: PreTrainedTokenizerBase | None = None
    pairs: tuple[tuple[str, str], ...] = ()
    device: torch.device = torch.device("cpu")
    task: Task | None = None
    max_length: int = 128
    trained: frozenset[str] = frozenset()
    score_variants: VariantScorer | None = None

    @property
    def seed(self) -> int:
        """The run's ``analysis_seed``, from which analyses draw their samples and random starts."""
        return self.settings.analysis_seed

    @property
    def run_tokenizer(self) -> PreTrainedTokenizerBase:
        """The tokenizer of the run, which every run's context has (tests may build one without)."""
        if self.tokenizer is None:
            raise ValueError("this analysis reads the tokenizer, and its context has none")
        return self.tokenizer

    @property
    def run_task(self) -> Task:
        """The run's task, for the analyses that read its labels and metrics."""
        if self.task is None:
            raise ValueError("this analysis reads the run's task, and its context has none")
        return self.task

    @property
    def variant_scorer(self) -> VariantScorer:
        """``score_variants``, which the run gives every analysis that intervenes (``INTERVENES``)."""
        if self.score_variants is None:
            raise ValueError("this analysis scores variants of the model: declare INTERVENES in its needs")
        return self.score_variants


class Analysis(ABC):
    """Streams attention batches in, gives JSON-serialisable statistics out.

    Class attributes: ``view`` (what reads its stored result back; it gives the analysis its
    ``name``, the registry and summary key, and ``version``: bump it when the statistics
    change, and stored results of other versions are recomputed), ``source`` (the
    text it reads), ``needs`` (`ATTENTION`, `GRADIENTS`, `GATE_GRADIENTS`, `INTERVENES`, `LOGITS`,
    `VALUE_NORMS`, `HIDDEN_STATES`), ``joint``, ``uses_head`` (the
    result depends on the classification head, not only the encoder), ``settings`` (its own
    `harness.config.Settings`, declared in its view's module; its result depends on each),
    ``settings_used`` (the shared `AnalysisConfig` fields its result depends on), ``reference`` (the papers' numbers
    and protocol constants shown beside ours, copied into the summary entry),
    ``on_by_default`` (False: it runs only when ``--analyses`` names it), ``switch`` (the
    setting, auto/on/off (`harness.config.SWITCH_CHOICES`), declared with its view's settings, that adds it
    to a run ``--analyses`` leaves it out of: `harness.run.plan.switch_on`; a choice of what runs, kept
    out of the run key), ``per_input_scores`` (it scores one prediction per
    input: a tagging task, with one per word, leaves it out).
    """

    view: ClassVar[type[View]]
    name: ClassVar[str]
    version: ClassVar[int] = 1
    source: ClassVar[str] = "task"
    needs: ClassVar[frozenset[str]] = frozenset({ATTENTION})
    joint: ClassVar[bool] = False
    uses_head: ClassVar[bool] = False
    settings: ClassVar[type[Settings] | None] = None
    settings_used: ClassVar[tuple[str, ...]] = ()
    reference: ClassVar[JsonObject] = {}  # the papers' numbers, as each analysis words them
    on_by_default: ClassVar[bool] = True  # False: a compatibility protocol that runs only when named
    switch: ClassVar[str | None] = None
    per_input_scores: ClassVar[bool] = False  # True: scores one prediction per input, which a tagging task lacks

    def __init_subclass__(cls, **kwargs: object) -> None:
        """An analysis is named and versioned by its view, so what it stores and what reads it never disagree."""
        super().__init_subclass__(**kwargs)
        if "view" in cls.__dict__:
            cls.name, cls.version = cls.view.name, cls.view.version

    def __init__(self, context: AnalysisContext) -> None:
        self.context = context

    @abstractmethod
    def update(self, batch: AttentionBatch) -> None:
        """Fold one batch into running statistics; keep nothing that grows with the data."""

    @abstractmethod
    def result(self) -> Mapping[str, Any]:  # open: each analysis returns its view's own declared shape
        """Per-checkpoint: ``{checkpoint: statistics}``; joint: the statistics (lists, numbers, strings)."""

    @classmethod
    def cannot_run_on(cls, model: PretrainedConfig) -> str | None:
        """Why the analysis cannot run on the model whose config is ``model``, or None. A default
        run leaves it out, says why and records it; naming it in ``--analyses`` is an error."""
        return None

    @classmethod
    def compare(cls, per_checkpoint: JsonObject, pairs: list[tuple[str, str]]) -> JsonObject:
        """Per-checkpoint analyses: ``{pair_name: what changed}`` for each pair, from stored results."""
        return {}

    @classmethod
    def settings_identity(cls, settings: AnalysisConfig, hashes: FileHashes) -> StoredSettings:
        """The settings the result depends on, with files replaced by their content hashes."""
        own = fields(cls.settings) if cls.settings is not None else ()
        used = {*cls.settings_used, *(item.name for item in own)}
        values = {item.name: getattr(settings, item.name) for item in fields(settings) if item.name in used}
        return {name: hashes.describe(value) if isinstance(value, Path) else value for name, value in values.items()}

    @classmethod
    def relate(cls, entry: AnyEntry, entries: Mapping[str, AnyEntry]) -> JsonObject | None:
        """What this entry says together with the run's other entries (``{name: entry}``), kept
        under the entry's ``"related"`` key (e.g. head importance against the cosine of each
        head); None when nothing relates. ``AnyEntry``: any analysis's entry, its result of that
        analysis's own shape."""
        return None


ANALYSES: dict[str, type[Analysis]] = {}
register_analysis = registrar(ANALYSES, "analysis")  # class decorator: adds an analysis to ANALYSES under its name


Label = TypeVar("Label")


def changed_heads(before: list[list[Label]], after: list[list[Label]]) -> list[ChangedHead[Label]]:
    """Heads (1-indexed) whose value (label, class, label set) differs between two (layers x heads) grids."""
    return [
        {"layer": layer + 1, "head": head + 1, "before": old, "after": after[layer][head]}
        for layer, row in enumerate(before)
        for head, old in enumerate(row)
        if old != after[layer][head]
    ]


def best_head(grid: torch.Tensor) -> BestHead:
    """The largest entry of a (..., layers, heads) grid: its 1-indexed ``layer`` and ``head``,
    its ``value``, and its 0-indexed positions along any leading dimensions (``leading``)."""
    flat = int(grid.argmax())
    *leading, layer, head = (int(p) for p in torch.unravel_index(torch.tensor(flat), grid.shape))
    return {"layer": layer + 1, "head": head + 1, "value": float(grid.flatten()[flat]), "leading": leading}
