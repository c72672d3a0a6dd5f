"""What an analysis says from its stored result, and the registry of those views.

An analysis (`harness.analyses`) measures; its view reads what the analysis stored in a
run's summary (never live tensors) and says it every way the harness shows results: MLflow
metrics and the headline among them, figures, Markdown tables, rows of the README's overview
table, lines printed after a run, series a study averages over seeds, and findings a study
judges on every run. The study, the README tables, the report and ``harness figures`` only
iterate over what views declare, so a new analysis adds its outputs here without editing
them. Nothing here imports torch: the commands that only draw or report load no model code.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Generic, TypedDict, TypeVar

from harness.config import measured_along
from harness.registry import registrar
from harness.results.checkpoints import MAIN_PAIR
from harness.results.entries import AnyEntry, Compared, Entry, Pairs, PerCheckpoint, Result, Stored, decoded
from harness.results.run_record import Analysed, RunSection
from harness.results.shapes import declare
from harness.results.study_record import StudyRecord
from harness.views.evidence import Change, StoredUnits, Verdict
from harness.views.metrics import Metric
from harness.views.samples import Sampler, dev_sample

Row = tuple[str, ...]  # a row of the overview table: what, pre-trained, fine-tuned, the paper's number
Failures = dict[str, str]  # {what a study could not aggregate or draw: the error}, written to its study.json
Value = TypeVar("Value")
Members = list[list[float]] | list[float]  # a family of tests' values: layers x heads (every head) or per layer


class HeadValue(TypedDict):
    """A head (1-indexed) and its value: the strongest, or the most changed."""

    layer: int
    head: int
    value: float


class BestHead(HeadValue):
    """The largest entry of a grid (`harness.analyses.base.best_head`), with its 0-indexed positions
    along the dimensions before the layers and heads."""

    leading: list[int]


class ChangedHead(TypedDict, Generic[Value]):
    """A head (1-indexed) whose label, class (``Value``: str) or label set (list[str]) differs between
    two checkpoints."""

    layer: int
    head: int
    before: Value
    after: Value


def attempt(failures: Failures, what: str, compute: Callable[[], Value], otherwise: Value) -> Value:
    """``compute()``, or ``otherwise`` with the error recorded under ``what``: one view whose code
    fails on a study (a bug, a summary of an unexpected shape) must not cost the study the other
    views' results, nor its runs' work."""
    try:
        return compute()
    except Exception as error:  # whatever one view's code raises: named in study.json and printed
        failures[what] = f"{type(error).__name__}: {str(error)[:500]}"
        return otherwise


def pair_name(pair: tuple[str, str]) -> str:
    """``"pretrained->finetuned"``: what changed going from the first checkpoint to the second."""
    return f"{pair[0]}->{pair[1]}"


def per_checkpoint_results(entry: Entry[PerCheckpoint[Stored, Compared]]) -> dict[str, Stored]:
    """The ``{checkpoint: statistics}`` of a per-checkpoint analysis's summary entry."""
    return entry["result"]["per_checkpoint"]


def per_pair_results(entry: Entry[Pairs[Compared]]) -> Mapping[str, Compared]:
    """The ``{pair name: comparison}`` of any analysis's summary entry."""
    return entry["result"].get("per_pair", {})


# Any: any per-checkpoint view's stored and compared types, of which only the units are read
def checkpoint_units(entry: Entry[PerCheckpoint[Any, Any]]) -> dict[str, StoredUnits]:
    """``{checkpoint: its per-unit sums}`` of a per-checkpoint entry whose results keep them
    (``units``, `harness.views.evidence.StoredUnits`): a view's part in a trajectory point."""
    return {
        checkpoint: stats["units"] for checkpoint, stats in per_checkpoint_results(entry).items() if "units" in stats
    }


@dataclass(frozen=True)
class Claim:
    """A yes/no statement judged on each run's summary entry of its analysis: ``judge`` returns
    its evidence (`harness.views.evidence`: a ``verdict`` of ``holds``, ``fails`` or
    ``unclear``, from resampling the units the analysis sampled or from an interval, and the
    statistic it read), or None where the run cannot judge it; a study reports on how many
    seeds and tasks it holds clearly, fails clearly, or is unclear."""

    text: str
    judge: Callable[[AnyEntry], Verdict | None]


@dataclass(frozen=True)
class PaperPoint:
    """What a paper found on the point a study finding checks: ``source`` (paper and figure),
    ``says`` (its finding, with its numbers), ``expects``: ``"holds"`` for a claim the paper
    found true, ``"rises"`` or ``"falls"`` for the direction of a change it found, either per
    task where the paper's tasks differ (``{"rte": "falls"}``; a task it lacks is not compared),
    None where the paper measured no such thing (the finding is shown beside it, not judged)."""

    source: str
    says: str
    expects: str | Mapping[str, str] | None = None

    def expectation(self, task: str) -> str | None:
        """What the paper expects on ``task``: holds, rises, falls, or None (not compared)."""
        if isinstance(self.expects, Mapping):
            return self.expects.get(task)
        return self.expects


class View(Generic[Result]):
    """The outputs of one analysis, read from its stored summary entry (`Entry` of the view's
    ``Result``: `PerCheckpoint` of its ``stored`` and ``compared`` TypedDicts, or a joint
    analysis's ``stored`` one), so that mypy checks every key a view reads against what the
    analysis stores.

    Class attributes: ``name`` and ``version`` (the analysis's: an entry of another version
    is not shown), ``claims`` (`Claim`s judged per run, by name), ``signed_changes``
    (``{metric: what it measures}``: metrics whose direction over every run is a finding, each
    one a name `metrics` gives), ``papers`` (``{claim or signed change: PaperPoint}``: what
    the papers found on it, set beside the study's finding), ``left_out`` (heavy result keys no
    table reads, dropped from the results the docs keep; never what a shown interval is computed
    from, such as the per-unit sums: a reader recomputes every interval from the snapshot),
    ``overview_reads`` (other analyses whose entries its `overview_rows` read), ``stored`` (the
    TypedDict of one result the analysis stores: a checkpoint's, or the joint one; the results
    store refuses a result of other keys: `harness.results.shapes`) and ``compared`` (that of
    one pair's comparison, `Analysis.compare`); ``to_final`` (a comparison of two checkpoints that
    says how far a point of a run's trajectory still is from the fine-tuned model: the point is
    compared with it too, `harness.run.trajectory`); ``per_head_parts`` (result keys whose value per
    head is a list of named parts, such as the pattern classifier's count of each class, with the
    parts' names: the exported tables' metric of each part, `harness.present.frames`);
    ``per_head_keys`` and ``per_layer_keys`` (result keys that say their level, whose value is one number
    per head or per layer, with what the exported tables call the value: ``{"accuracy_per_head":
    "accuracy"}``; a key that is only the level, such as ``per_layer``, is said by none);
    ``along_by_default`` (its analysis measures each step ``--trajectory`` keeps unless
    ``--trajectory-analyses`` says otherwise: `harness.config.measured_along`); ``timed_apart`` (the
    source its analysis reads only to intervene, whose seconds a study sets apart from the analyses':
    a column of its time table, shown where no seed ran it too); ``samples`` (the samples its analysis's
    source draws, read from what the source stored: `harness.views.samples`; by default a task's dev
    sample, the default source's).
    """

    name: ClassVar[str]
    version: ClassVar[int] = 1
    claims: ClassVar[dict[str, Claim]] = {}
    signed_changes: ClassVar[dict[str, str]] = {}
    papers: ClassVar[dict[str, PaperPoint]] = {}
    left_out: ClassVar[tuple[str, ...]] = ()
    overview_reads: ClassVar[tuple[str, ...]] = ()
    order: ClassVar[int]  # where its overview rows come, and its analysis in a run's list: ascending
    stored: ClassVar[type | None] = None
    compared: ClassVar[type | None] = None
    to_final: ClassVar[bool] = False
    per_head_parts: ClassVar[dict[str, tuple[str, ...]]] = {}
    per_head_keys: ClassVar[dict[str, str]] = {}
    per_layer_keys: ClassVar[dict[str, str]] = {}
    along_by_default: ClassVar[bool] = False
    timed_apart: ClassVar[str | None] = None
    samples: ClassVar[Sampler] = dev_sample

    def __init_subclass__(cls, **kwargs: Any) -> None:  # Any: passed on to `object`'s, as Python gives them
        """A view that names its analysis and declares what it stores gives the store that shape to check."""
        super().__init_subclass__(**kwargs)
        if "name" in vars(cls) and cls.stored is not None:
            declare(cls.name, cls.stored)

    @classmethod
    def change_evidence(cls, entry: AnyEntry) -> dict[str, Change]:
        """Each signed change's evidence on this run (`harness.views.evidence.paired_change`: its
        value, 95% interval over the units sampled, and direction, ``rises``, ``falls`` or ``no
        clear change``), by metric name; a change the run does not define is absent. What the
        analysis's comparison stored for the main pair (any view's entry: each compared TypedDict
        that has evidence keeps it under the same key)."""
        return per_pair_results(entry).get(MAIN_PAIR, {}).get("evidence", {})

    @classmethod
    def description(cls) -> str:
        """What the analysis measures: the first paragraph of its view module's docstring."""
        return " ".join((sys.modules[cls.__module__].__doc__ or "").strip().split("\n\n")[0].split())

    @classmethod
    def metrics(cls, entry: Entry[Result]) -> list[Metric]:
        """Scalars of a stored summary entry (`harness.views.metrics.Metric`), logged as MLflow metrics."""
        return []

    @classmethod
    def headline(cls, entry: Entry[Result], metrics: list[Metric]) -> list[Metric]:
        """The few of its ``metrics`` of ``entry`` (its own and their fine-tuned minus pre-trained changes)
        that answer the run's question at a glance: logged again under ``headline/``, the short list
        MLflow's compare view lines up across runs; chosen on the records, or built from the entry
        (`harness.views.metrics.chosen`)."""
        return []

    @classmethod
    def draw(cls, entry: Entry[Result], run: RunSection, out_dir: Path) -> list[Path]:
        """Figures from a stored summary entry and the run's description; the files written."""
        return []

    @classmethod
    def tables(cls, entry: Entry[Result], run: RunSection) -> dict[str, str]:
        """Markdown tables from a stored summary entry, by file stem (``{"syntax_table1": "# ...\\n..."}``),
        each opening with a ``# title`` line: written beside the figures, and embedded in the
        README and docs by ``harness docs``."""
        return {}

    @classmethod
    def overview_rows(cls, entries: dict[str, AnyEntry], run: RunSection) -> list[Row]:
        """Its rows of a run's overview table (what, pre-trained, fine-tuned, the papers'
        number), from the run's entries by analysis name (a row may say what another analysis
        adds); called only when the run has this analysis's entry."""
        return []

    @classmethod
    def in_overview(cls) -> bool:
        """Whether it adds rows to the overview table."""
        return vars(View)["overview_rows"] is not next(
            vars(klass)["overview_rows"] for klass in cls.__mro__ if "overview_rows" in vars(klass)
        )

    @classmethod
    def printed(cls, entry: Entry[Result]) -> list[str]:
        """Lines printed in the terminal at the end of a run."""
        return []

    @classmethod
    def draw_study(cls, study: StudyRecord, out_dir: Path) -> list[Path]:
        """A study's cross-task figures of this analysis (PNG, each with a PDF beside it), from
        ``study.json`` (what `across_seeds` and the metrics' spreads kept); the PNGs written."""
        return []

    @classmethod
    def study_tables(cls, study: StudyRecord) -> dict[str, str]:
        """A study's cross-task Markdown tables of this analysis, by file stem."""
        return {}

    @classmethod
    def timed_units(cls, entry: Entry[Result]) -> object | None:
        """Its part in a point of a run's trajectory (`harness.run.trajectory`): what the point keeps
        of its entry there (said as a run's: the point's checkpoint as the fine-tuned one) for a
        study's findings on when things change, which resample it; None: nothing."""
        return None

    @classmethod
    def along_layers(cls, metric: Metric) -> bool:
        """Whether ``metric``, one of its own, is a per-layer metric that a run with ``--trajectory``
        logs at each kept step (`harness.run.trajectory.trajectory_metrics`: MLflow charts it over the steps)."""
        return False

    @classmethod
    def across_seeds(cls, entries: list[Entry[Result]]) -> Mapping[str, object]:
        """What a study keeps of this analysis over one task's seeds (one entry per seed),
        besides the spread of every metric: ``{key in the task's aggregate: value}``. A view that
        keeps something declares its type (a TypedDict of its keys) and reads it back from a task's
        aggregate through that type (`harness.results.study_record.view_part`)."""
        return {}


# Any analysis's view, where code loops over the registry: each view's own Result, its methods called
# with the entry it declares.
ViewClass = type[View[Any]]
VIEWS: dict[str, ViewClass] = {}
AnyView = TypeVar("AnyView", bound=View[Any])  # a view class of any Result, returned as given
registered_view = registrar(VIEWS, "view")


def register_view(view: type[AnyView]) -> type[AnyView]:
    """Class decorator: adds a view to `VIEWS` under its name, and its analysis to those measured
    along a run's trajectory by default where it says so (``along_by_default``)."""
    registered_view(view)
    if view.along_by_default:
        measured_along(view.name, view.order)
    return view


def current_entries(summary: Analysed) -> dict[str, tuple[ViewClass, AnyEntry]]:
    """``{name: (view, entry)}`` of the summary's analysis entries whose version is the view's."""
    return {
        name: (VIEWS[name], decoded(entry))
        for name, entry in summary["analyses"].items()
        if name in VIEWS and entry.get("version") == VIEWS[name].version
    }
