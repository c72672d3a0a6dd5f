"""Planning a run, before any model work: the data read, checked and hashed, the analyses
chosen, the default data located, the device and precision resolved, and the run key that
names the run folder ``<output_dir>/<task>-<model>-seed<seed>-<key>/`` (runs with other
settings never overwrite each other). Bad input fails here, in one line.

The default corpora (`tasks.corpora`) are looked up in the order: the analysis's flag, the
data cache, ../shared/data, a download (said on stderr, with a progress bar). Without them
(offline, or the download failed) a default run leaves out the analyses that read them and
records why (`RunPlan.skipped`); an analysis named in ``--analyses`` is a one-line error.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path

import torch
from huggingface_hub import constants as hub_constants
from transformers import PretrainedConfig

from harness.analyses import ANALYSES, Analysis
from harness.analyses.base import INTERVENES
from harness.analyses.evaluation import Evaluation
from harness.config import ALL_ANALYSES, MEASURED_ALONG, AnalysisConfig, RunConfig
from harness.corpus_lookup import corpus_location, default_corpus_path, in_corpus_folder, looked_in
from harness.inputs.sources import SOURCES
from harness.inputs.sources.treebank import train_sibling
from harness.model.finetune import TaskData, cache_key
from harness.model.loading import check_model
from harness.options import flag_of
from harness.results.store import FileHashes, Settings, SourceIdentity, ensure_writable, key_of
from harness.results.summary import SUMMARY
from tasks.corpora import DOWNLOAD_COMMAND, LITBANK, UD_ENGLISH_EWT, Corpus, get_corpus
from tasks.dataset_source import dataset_split
from tasks.download import download_corpus
from tasks.errors import InputError, clipped
from tasks.glue_tsv import split_path
from tasks.loading import load_examples, resolved
from tasks.registry import HUB_DATASET
from tasks.spec import Task

log = logging.getLogger(__name__)
SELECTION = ("analyses", "trajectory_analyses")  # which analyses run: not part of any result's key, nor their switches


@dataclass
class RunPlan:
    """A validated run: its settings (default data filled in), data, analyses and key, and the
    analyses left out because their default corpus is absent (``{analysis: why}``)."""

    config: RunConfig
    data: TaskData
    analyses: list[type[Analysis]]
    hashes: FileHashes
    finetune_key: str
    key: str
    skipped: dict[str, str] = field(default_factory=dict)
    along: list[type[Analysis]] = field(default_factory=list)  # what measures each --trajectory step

    @property
    def run_dir(self) -> Path:
        """``<output_dir>/<task>-<model>-seed<seed>-<key8>``: the run's folder."""
        config = self.config
        name = f"{config.task.name}-{config.model_name}-seed{config.finetune.seed}-{self.key[:8]}"
        return config.environment.output_dir / name


def select_analyses(
    names: list[str] | None, switched_on: Callable[[type[Analysis]], bool] = lambda analysis: False
) -> list[type[Analysis]]:
    """The analyses asked for (by default all but those that run only when named: the
    compatibility protocols, and those with a switch unless ``switched_on`` says it is on, as
    `switch_on` does for a run), always with the dev evaluation: no change of attention is read
    without knowing whether the fine-tuned model learned the task."""
    unknown = [name for name in names or [] if name not in ANALYSES]
    if unknown:
        raise InputError(f"--analyses: unknown analysis {clipped(', '.join(unknown))}; valid: {', '.join(ANALYSES)}")
    chosen = [name for name, analysis in ANALYSES.items() if analysis.on_by_default] if names is None else names
    switched = [name for name, analysis in ANALYSES.items() if analysis.switch and switched_on(analysis)]
    return [ANALYSES[name] for name in dict.fromkeys([Evaluation.name, *chosen, *switched])]


def along_analyses(names: list[str] | None, analyses: list[type[Analysis]]) -> list[type[Analysis]]:
    """The run's analyses that measure each step ``--trajectory`` keeps: the dev evaluation (each
    step's dev score), then ``--trajectory-analyses`` (by default `MEASURED_ALONG`
    that the run has; ``all``: every one); never one that intervenes (the ablation), which scores
    the final model's head under hundreds of masks. A name that is no analysis of the run is an
    `InputError`."""
    ran = {analysis.name: analysis for analysis in analyses if INTERVENES not in analysis.needs}
    if names == [ALL_ANALYSES]:
        return list(ran.values())
    missing = [name for name in names or [] if name not in ran]
    if missing:
        raise InputError(
            f"--trajectory-analyses {clipped(missing[0])}: not an analysis this run measures its kept steps "
            f"with; choose from {', '.join(ran)}, or all"
        )
    chosen = names if names is not None else [name for name in MEASURED_ALONG if name in ran]
    return [ran[name] for name in dict.fromkeys([Evaluation.name, *chosen])]


def switch_on(config: RunConfig, analysis: type[Analysis]) -> bool:
    """Whether the run's setting that switches ``analysis`` on (`Analysis.switch`: ``--ablation``,
    ``--transplant``) is on: ``on``, or ``auto`` where the model runs on a GPU, where a sweep's hundreds
    of dev passes take seconds; on the CPU they take minutes (`harness ablate` runs the ablation then)."""
    choice = getattr(config.analysis, analysis.switch) if analysis.switch else "off"
    return choice == "on" or (choice == "auto" and run_device(config).type == "cuda")


def with_default_data(settings: AnalysisConfig) -> AnalysisConfig:
    """The settings with the default treebank and coreference data (data cache, else ../shared/data)
    filled in where they exist, so what a run used is recorded, hashed and shown, never left as None."""
    syntax = settings.syntax_data or default_corpus_path(UD_ENGLISH_EWT)
    train = settings.syntax_train_data
    if train is None and syntax is not None and train_sibling(Path(syntax)).is_file():
        train = train_sibling(Path(syntax))
    coref = settings.coref_data or default_corpus_path(LITBANK)
    return replace(settings, syntax_data=syntax, syntax_train_data=train, coref_data=coref)


def corpora_wanted(settings: AnalysisConfig, analyses: list[type[Analysis]]) -> dict[Corpus, list[type[Analysis]]]:
    """The default corpora that the chosen analyses read (their data flag not given) and that
    are not found (`default_corpus_path`), with the analyses that read each."""
    wanted: dict[Corpus, list[type[Analysis]]] = {}
    for analysis in analyses:
        source = SOURCES[analysis.source]
        if source.corpus is not None and getattr(settings, source.other_data_flag()) is None:
            if default_corpus_path(source.corpus) is None:
                wanted.setdefault(source.corpus, []).append(analysis)
    return wanted


@dataclass
class Downloads:
    """Whether planning may download a missing default corpus, and why each corpus tried could not
    be downloaded: a study plans every (task, seed) with one `Downloads`, so a corpus whose server
    is unreachable is tried once, not once per run."""

    allowed: bool = True
    failed: dict[str, str] = field(default_factory=dict)  # {corpus name: why it is absent}

    def refusal(self) -> str | None:
        """Why nothing more is tried (offline: ``HF_HUB_OFFLINE``, set by the user or by the
        model's loading when the hub is unreachable; not allowed; a download failed), else None."""
        if not self.allowed:
            return "this command downloads nothing"
        if hub_constants.is_offline_mode():
            return "nothing is downloaded offline (HF_HUB_OFFLINE is set)"
        if self.failed:
            return f"no download was tried after that of {get_corpus(next(iter(self.failed))).title} failed"
        return None

    def fetch(self, wanted: list[Corpus]) -> dict[Corpus, str]:
        """Each corpus of ``wanted`` downloaded into the data cache; returns why each one that
        could not be is absent."""
        absent = {}
        for corpus in wanted:
            why = self.failed.get(corpus.name) or self.refusal()
            if why is None:
                try:
                    download_corpus(corpus)
                    continue
                except InputError as error:  # its first clause: what failed, without the advice
                    why = self.failed[corpus.name] = f"the download failed ({str(error).split('; ')[0]})"
            absent[corpus] = why
        return absent


def leave_out(settings: AnalysisConfig, analyses: list[type[Analysis]], downloads: Downloads) -> dict[str, str]:
    """The analyses to leave out for want of their default corpus, ``{analysis: why}``, after
    fetching what is missing; an analysis named in ``--analyses`` that cannot run is an `InputError`."""
    wanted = corpora_wanted(settings, analyses)
    skipped = {}
    for corpus, why in downloads.fetch(list(wanted)).items():
        absent = f"no {corpus.title} {corpus.version} {looked_in()}, and {why}"
        readers = wanted[corpus]
        named = [analysis.name for analysis in readers if analysis.name in (settings.analyses or [])]
        if named:
            flag = flag_of(AnalysisConfig, SOURCES[readers[0].source].other_data_flag())
            raise InputError(
                f"--analyses {named[0]}: {absent}; run `{DOWNLOAD_COMMAND} {corpus.name}` where the "
                f"network is reachable, or pass {flag}"
            )
        skipped.update(
            dict.fromkeys(
                [analysis.name for analysis in readers], f"{absent}; `{DOWNLOAD_COMMAND} {corpus.name}` fetches it"
            )
        )
    return skipped


def unsupported(config: RunConfig, model: PretrainedConfig, analyses: list[type[Analysis]]) -> dict[str, str]:
    """The analyses that cannot run on the model (`Analysis.cannot_run_on`) or the task (one scoring
    predictions per input, on a tagging task), ``{analysis: why}``;
    one named in ``--analyses`` is an `InputError`."""
    found = {
        analysis.name: f"{config.task.model}: {why}"
        for analysis in analyses
        if (why := analysis.cannot_run_on(model)) is not None
    }
    if config.task.definition.is_tagging:
        found |= {
            analysis.name: f"{config.task.name}: it scores a prediction per input, and a tagging task's are per word"
            for analysis in analyses
            if analysis.per_input_scores
        }
    named = [name for name in found if name in (config.analysis.analyses or [])]
    if named:
        raise InputError(f"--analyses {named[0]}: {found[named[0]]}; leave it out")
    return found


def skipped_line(skipped: dict[str, str]) -> str | None:
    """One line naming the analyses a run left out, why, and the command that fetches their data."""
    if not skipped:
        return None
    by_reason: dict[str, list[str]] = {}
    for name, why in skipped.items():
        by_reason.setdefault(why, []).append(name)
    return "skipped " + "; ".join(f"{', '.join(names)}: {why}" for why, names in by_reason.items())


def located(task: Task, downloads: Downloads) -> Task:
    """``task`` with the data files of its corpus (``corpus`` in its spec) in the folder the corpus
    is found in, fetched into the data cache where it is missing and downloads are allowed."""
    if task.corpus is None:
        return task
    corpus = get_corpus(task.corpus)
    if corpus_location(corpus) is None:
        why = downloads.fetch([corpus]).get(corpus)
        if why is not None:
            raise InputError(
                f"{task.source}: no {corpus.title} {corpus.version} {looked_in()}, and {why}; "
                f"run `{DOWNLOAD_COMMAND} {corpus.name}` where the network is reachable"
            )
    return in_corpus_folder(task, corpus_location(corpus).folder)  # type: ignore[union-attr]


def load_task_data(config: RunConfig, hashes: FileHashes, downloads: Downloads | None = None) -> TaskData:
    """Train and dev examples of the task, read (and so checked) now, with their identity: for
    GLUE its files' hashes or the hub config; for another task its spec and each split's data
    (`datasets`' fingerprint of the files' content, or the hub dataset's)."""
    task, data_dir = resolved(located(config.task.definition, downloads or Downloads())), config.task.data_dir
    splits = (task.train_split, *task.eval_splits)
    examples = {split: load_examples(task, split, data_dir) for split in splits}
    if task.glue is None:
        identity: SourceIdentity = own_data_identity(task, splits, hashes)
    elif data_dir is None:
        identity = {"hub": HUB_DATASET, "config": task.config}
    else:
        identity = {split: hashes.describe(split_path(data_dir, task, split)) for split in splits}
    return TaskData(task, examples[task.train_split], {split: examples[split] for split in task.eval_splits}, identity)


def own_data_identity(task: Task, splits: tuple[str, ...], hashes: FileHashes) -> SourceIdentity:
    """What a spec's task is: the spec without where its files lie (a local folder's are named
    by split, `tasks.dataset_source.with_folder_files`: the spec and the --dataset flags that say
    the same are one task), and each split's data: its files' content hashes, or the hub
    dataset's `datasets` fingerprint."""
    spec = task.as_spec()
    files = dict(task.data_files)
    spec["data_files"] = {split: [Path(path).name for path in paths] for split, paths in files.items()}
    data = {
        split: [hashes.describe(Path(path)) for path in files[split]]
        if files
        else dataset_split(task, split)._fingerprint
        for split in splits
    }
    return {"spec": spec, **data}


def settings_identity(settings: AnalysisConfig, hashes: FileHashes) -> Settings:
    """Every analysis setting but the selection, with files and folders replaced by their content hashes."""
    selection = {*SELECTION, *(analysis.switch for analysis in ANALYSES.values() if analysis.switch)}
    values = {name: value for name, value in asdict(settings).items() if name not in selection}
    return {name: hashes.describe(value) if isinstance(value, Path) else value for name, value in values.items()}


def check_inputs(config: RunConfig, analyses: list[type[Analysis]]) -> None:
    """The folders the run writes and every file the chosen analyses read, checked before any model work."""
    ensure_writable(config.environment.output_dir, "--output-dir")
    ensure_writable(config.environment.cache_dir, "--cache-dir")
    for source in dict.fromkeys(analysis.source for analysis in analyses):
        SOURCES[source].check(config.analysis)


def plan_run(config: RunConfig, downloads: Downloads | None = None) -> RunPlan:
    """Validate and describe a run without touching a model: data read and hashed, analyses
    chosen, default data located (missing corpora downloaded as ``downloads`` allows, by
    default, saying so, or the analyses that read them left out), the run key computed."""
    analyses = select_analyses(config.analysis.analyses, partial(switch_on, config))
    given = config.analysis  # the data flags as typed, before the default data is filled in
    hashes = FileHashes()
    data = load_task_data(config, hashes, downloads)  # the task's data first: its errors before the model's
    model = check_model(
        config.task.model, {"--max-length": config.task.max_length, "--max-tokens": config.analysis.max_tokens}
    )
    if config.finetune.reinit_layers > model.num_hidden_layers:
        raise InputError(
            f"--reinit-layers {config.finetune.reinit_layers}: {config.task.model} has "
            f"{model.num_hidden_layers} layers; re-initialise at most that many"
        )
    skipped = {**unsupported(config, model, analyses), **leave_out(config.analysis, analyses, downloads or Downloads())}
    analyses = [analysis for analysis in analyses if analysis.name not in skipped]
    config = resolve_precision(replace(config, analysis=with_default_data(config.analysis)))
    check_inputs(config, analyses)
    finetune_key = cache_key(config, data)
    identity = {"finetune": finetune_key, "analysis": settings_identity(config.analysis, hashes)}
    key = key_of({**identity, "baselines": True} if config.finetune.baselines else identity)
    along = along_analyses(config.analysis.trajectory_analyses, analyses) if config.finetune.trajectory else []
    for flag, value, readers in unread_data(given, analyses):
        log.warning(
            "%s %s: no analysis of this run reads it (%s do); it goes into the run's key but into no result",
            flag,
            value,
            ", ".join(readers),
        )
    return RunPlan(config, data, analyses, hashes, finetune_key, key, skipped, along)


DATA_FLAGS = ("corpus", "syntax_data", "coref_data")  # the `AnalysisConfig` fields that name a source's data


def unread_data(settings: AnalysisConfig, analyses: list[type[Analysis]]) -> list[tuple[str, Path, list[str]]]:
    """The data flags given that none of ``analyses`` reads (``--corpus`` with ``--analyses surface``,
    which reads the task's dev sample), each with its value and the analyses that would read it."""
    read = {SOURCES[analysis.source].data_flag for analysis in analyses}
    return [
        (
            flag_of(AnalysisConfig, name),
            getattr(settings, name),
            [analysis.name for analysis in ANALYSES.values() if SOURCES[analysis.source].data_flag == name],
        )
        for name in DATA_FLAGS
        if getattr(settings, name) is not None and name not in read
    ]


def run_device(config: RunConfig) -> torch.device:
    """``--device``, else a GPU when there is one, else the CPU."""
    if config.environment.device:
        return torch.device(config.environment.device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def native_bf16(device: torch.device) -> bool:
    """Whether ``device`` computes in bf16 natively (else bf16 autocast is emulated, and slower)."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    return torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()


def resolve_precision(config: RunConfig) -> RunConfig:
    """The run with ``--precision auto`` made concrete for its device (it is part of the
    fine-tune key, so checkpoints trained in different precisions are never mixed)."""
    device = run_device(config)
    precision = config.environment.precision
    if precision == "auto":
        precision = "bf16" if native_bf16(device) else "fp32"
    if precision == "fp16" and device.type != "cuda":
        raise InputError("--precision fp16 needs a GPU (the CPU has no fp16 training); use bf16 or fp32")
    return replace(config, environment=replace(config.environment, precision=precision))


def find_run(config: RunConfig) -> Path:
    """The folder of the finished run of ``config`` (for ``harness figures``), or a clear error
    listing the runs with other settings there are; nothing is downloaded to find it."""
    plan = plan_run(config, Downloads(allowed=False))
    if not (plan.run_dir / SUMMARY).is_file():
        pattern = f"{config.task.name}-{config.model_name}-seed{config.finetune.seed}-*"
        others = sorted(p.name for p in config.environment.output_dir.glob(pattern))
        hint = f"; runs with other settings: {', '.join(others)} (pass the flags they were run with)" if others else ""
        raise InputError(f"{plan.run_dir / SUMMARY} not found: run `harness run` with these flags first{hint}")
    return plan.run_dir
