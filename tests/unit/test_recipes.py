"""docs/architecture.md's four recipes, each walked through with a toy: an analysis (with its view),
a source and an encoder family, each in a package of its own outside the harness (a temporary
folder on ``sys.path`` with a ``.dist-info`` naming its modules under the harness's entry-point
groups, as ``pip install`` leaves one), found by the registries' own discovery and used on the
tiny model; and a task, one spec file of its own, run end to end. After each test the
registries, transformers' Auto classes and ``sys.modules`` are restored, so no other test sees a toy."""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from string import Template

import datasets
import pytest
import torch
from transformers import AutoConfig, AutoModelForMaskedLM, BertConfig, BertForSequenceClassification
from transformers.models.auto.configuration_auto import CONFIG_MAPPING
from transformers.models.auto.modeling_auto import (
    MODEL_FOR_MASKED_LM_MAPPING,
    MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING,
)

from harness.analyses import ANALYSES, discover_analyses
from harness.cli import build_parser, main, subcommands
from harness.config import ANALYSIS_SETTINGS, AnalysisConfig, assemble_analysis_config
from harness.inputs.encoding import encode_examples
from harness.inputs.sources import SOURCES, SourceContext, discover_sources
from harness.model.forward import Capture, Interventions, forward, harness_attention
from harness.model.loading import check_model, load_sequence_classifier, load_tokenizer, prepare
from harness.registry import extensions
from harness.results.checkpoints import FINETUNED, PRETRAINED
from harness.results.store import FileHashes, ResultStore
from harness.run.engine import analyse, renamed_entry
from harness.run.plan import select_analyses
from harness.run.trajectory import point, step_name, trajectory_metrics
from harness.views import VIEWS, discover_views
from harness.views.base import per_checkpoint_results
from harness.views.metrics import values
from tasks.errors import InputError
from tasks.loading import load_examples
from tasks.registry import get_task
from tests.fixtures import PAIRS, as_checkpoints, sentiment_sentences, tiny_bert, tiny_run_arguments

Install = Callable[[str, dict[str, str], dict[str, dict[str, str]]], None]

# The toy analysis of the recipe: each head's mean attention to the first token, over every real row.
TOY_VIEW = Template('''"""Each head's mean attention to the first token of its input (a toy analysis)."""

import statistics
from dataclasses import dataclass
from typing import TypedDict

from harness.config import Settings, analysis_settings
from harness.options import option
from harness.views.base import View, per_checkpoint_results, register_view
from harness.views.metrics import Metric


class FirstTokenResult(TypedDict):
    per_head: list[list[float]]


@analysis_settings
@dataclass
class FirstTokenSettings(Settings):
    first_token_rows: int | None = option(
        None, "the rows of each input the first-token analysis averages: its first N tokens' (default: all)",
        minimum=1, quick=3,
    )


@register_view
class FirstTokenView(View):
    name = "$name"
    order = $order
    stored = FirstTokenResult

    @classmethod
    def metrics(cls, entry):  # each checkpoint's mean, and each layer's
        return [Metric(cls.name, "$metric", checkpoint=checkpoint, layer=layer, value=statistics.fmean(heads))
                for checkpoint, stats in per_checkpoint_results(entry).items()
                for layer, heads in [(None, sum(stats["per_head"], [])), *enumerate(stats["per_head"], 1)]]

    @classmethod
    def along_layers(cls, metric):  # with --trajectory, the per-layer metrics are logged at each kept step
        return metric.layer is not None


class MaskedLayersResult(TypedDict):
    logit_change: list[float]


@register_view
class MaskedLayersView(View):
    name = "$name-masked"
    order = 175
    stored = MaskedLayersResult

    @classmethod
    def metrics(cls, entry):
        return [Metric(cls.name, "masked_logit_change", checkpoint=checkpoint, layer=layer, value=value)
                for checkpoint, stats in per_checkpoint_results(entry).items()
                for layer, value in enumerate(stats["logit_change"], 1)]
''')
TOY_ANALYSIS = Template('''"""What FirstTokenView and MaskedLayersView say, measured."""

import torch

from harness.analyses.base import INTERVENES, Analysis, register_analysis
from harness.inputs.batches import real_tokens
from harness.model.forward import Interventions
from $package.first_token_view import FirstTokenSettings, FirstTokenView, MaskedLayersView


@register_analysis
class FirstTokenAttention(Analysis):
    view = FirstTokenView
    source = "$source"
    settings = FirstTokenSettings

    def __init__(self, context):
        super().__init__(context)
        self.total = torch.zeros(len(context.checkpoints), context.num_layers, context.num_heads,
                                 dtype=torch.float64, device=context.device)
        self.rows = 0
        self.first_rows = FirstTokenSettings.of(context.settings).first_token_rows

    def update(self, batch):
        real = real_tokens(batch.lengths, batch.input_ids.shape[1])  # padding rows left out
        if self.first_rows is not None:  # and those after the first N
            real[:, self.first_rows :] = False
        for index, name in enumerate(self.context.checkpoints):
            to_first = batch.attentions[name][..., 0]  # (batch, layers, heads, rows): each row's weight on token 0
            self.total[index] += (to_first * real[:, None, None, :]).sum(dim=(0, 3)).double()
        self.rows += int(real.sum())

    def result(self):
        return {name: {"per_head": (self.total[index] / self.rows).tolist()}
                for index, name in enumerate(self.context.checkpoints)}


@register_analysis
class MaskedLayers(Analysis):
    view = MaskedLayersView
    source = "$source"
    needs = frozenset({INTERVENES})  # no attention: the source again, under interventions
    on_by_default = False  # a pass per checkpoint more: only when --analyses names it

    def update(self, batch):
        pass

    def result(self):
        layers, heads = self.context.num_layers, self.context.num_heads
        gates = torch.ones(layers + 1, layers, heads)  # variant 0: intact; variant l: layer l's heads masked
        for layer in range(layers):
            gates[layer + 1, layer] = 0
        results = {}
        for name in self.context.checkpoints:
            logits = self.context.variant_scorer(name, Interventions(head_gates=gates))  # (variants, items, labels)
            results[name] = {"logit_change": (logits[1:] - logits[0]).abs().sum(-1).mean(-1).tolist()}
        return results
''')
TOY_SOURCE = '''"""The run's task sample with the words of each text in reverse order (a toy source)."""

from dataclasses import replace

from harness.inputs.encoding import batched
from harness.inputs.sources.base import Source, SourceStream, register_source


def reverse(text):
    return " ".join(reversed(text.split())) if text else text


@register_source
class ReversedText(Source):
    name = "reversed-text"

    def identity(self):
        return {"source": self.name, **self.context.task_identity, "max_length": self.context.max_length}

    def stream(self):
        context = self.context
        examples = [replace(example, text_a=reverse(example.text_a), text_b=reverse(example.text_b))
                    for example in context.task_examples]
        batches = batched(context.tokenizer, examples, context.settings.eval_batch_size, context.max_length,
                          context.task.is_pair)
        return SourceStream(batches, len(examples), {"examples": len(examples)})
'''
TOY_ENCODER = '''"""A toy encoder family: BERT's modules under a model type of its own, registered with
transformers' Auto classes (what an encoder family from outside transformers does)."""

from transformers import (AutoConfig, AutoModelForMaskedLM, AutoModelForSequenceClassification, BertConfig,
                          BertForMaskedLM, BertForSequenceClassification)


class ToyBertConfig(BertConfig):
    model_type = "toy-bert"


class ToyBertForMaskedLM(BertForMaskedLM):
    config_class = ToyBertConfig


class ToyBertForSequenceClassification(BertForSequenceClassification):
    config_class = ToyBertConfig


AutoConfig.register(ToyBertConfig.model_type, ToyBertConfig)
AutoModelForMaskedLM.register(ToyBertConfig, ToyBertForMaskedLM)
AutoModelForSequenceClassification.register(ToyBertConfig, ToyBertForSequenceClassification)
'''
# A single-sentence task of TSV files: its spec, the whole recipe for adding a task.
TOY_SPEC = """name = "toy"
text_fields = ["sentence"]
labels = ["0", "1"]
eval_splits = ["dev"]
[data_files]
train = "train.tsv"
dev = "dev.tsv"
"""


def first_token_modules(package: str, name: str, order: int, source: str) -> dict[str, str]:
    """The toy analysis's two modules: its view ``name`` at ``order``, the analysis reading ``source``."""
    return {
        "first_token_view": TOY_VIEW.substitute(name=name, order=order, metric=name.replace("-", "_")),
        "first_token": TOY_ANALYSIS.substitute(package=package, source=source),
    }


def first_token_groups(package: str) -> dict[str, dict[str, str]]:
    """The entry points of the toy analysis's modules: the view's torch-free, apart from the analysis."""
    return {
        "harness.views": {"first-token": f"{package}.first_token_view"},
        "harness.analyses": {"first-token": f"{package}.first_token"},
    }


@pytest.fixture
def install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Install]:
    """``install(package, {module: code}, {group: {entry name: module}})`` lays a package out as pip
    installs one (the package beside its ``.dist-info`` with ``entry_points.txt``), puts it on
    ``sys.path`` and runs each registry's discovery again, as a new process would on import."""
    site = tmp_path / "site"
    registries = (ANALYSES, VIEWS, SOURCES, ANALYSIS_SETTINGS)
    kept = [dict(registry) for registry in registries]
    for mapping in (CONFIG_MAPPING, MODEL_FOR_MASKED_LM_MAPPING, MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING):
        monkeypatch.setattr(mapping, "_extra_content", dict(mapping._extra_content))  # what the toy registers
    installed: list[str] = []

    def install_package(package: str, modules: dict[str, str], groups: dict[str, dict[str, str]]) -> None:
        (site / package).mkdir(parents=True)
        (site / package / "__init__.py").write_text("")
        for module, code in modules.items():
            (site / package / f"{module}.py").write_text(code)
        metadata = site / f"{package}-0.1.dist-info"
        metadata.mkdir()
        (metadata / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 0.1\n")
        (metadata / "entry_points.txt").write_text(
            "".join(
                f"[{group}]\n" + "".join(f"{name} = {module}\n" for name, module in entries.items())
                for group, entries in groups.items()
            )
        )
        monkeypatch.syspath_prepend(str(site))
        installed.append(package)
        discover_views()
        discover_sources()
        discover_analyses()
        extensions("harness.model")

    yield install_package
    for registry, before in zip(registries, kept):
        registry.clear()
        registry.update(before)  # type: ignore[arg-type]
    assemble_analysis_config()  # AnalysisConfig without the toy's settings
    for name in [name for name in sys.modules if name.split(".")[0] in installed]:
        del sys.modules[name]


@pytest.fixture
def task_sample(tiny_tokenizer, tiny_data) -> SourceContext:
    """What the sources read: the tiny RTE dev set as the run's task sample."""
    rte = get_task("rte")
    examples = load_examples(rte, "dev", tiny_data / "glue")
    return SourceContext(
        tiny_tokenizer,
        AnalysisConfig(eval_batch_size=4),
        tokenizer_name="tiny",
        max_length=64,
        task=rte,
        task_examples=examples,
        task_identity={"split": "dev", "examples": len(examples)},
    )


def test_an_analysis_is_its_two_modules_found_by_discovery_and_run_by_the_engine(install, task_sample, tmp_path):
    install(
        "toy_analysis",
        first_token_modules("toy_analysis", "first-token", 27, "task"),
        first_token_groups("toy_analysis"),
    )
    # its view's order (27) puts it after cka (25) and before cosine_padded (30), in both registries
    for registry in (list(VIEWS), list(ANALYSES)):
        assert registry[registry.index("first-token") - 1 : registry.index("first-token") + 2] == [
            "cka",
            "first-token",
            "cosine_padded",
        ]
    assert "first-token" in [analysis.name for analysis in select_analyses(None)]  # a default run makes it
    # its setting, declared in its view's module: a flag of the commands that run analyses, checked as
    # declared, capped by --quick, and part of what its stored result is keyed by
    assert "--first-token-rows FIRST_TOKEN_ROWS" in subcommands(build_parser())["run"].format_help()
    with pytest.raises(InputError, match="^--first-token-rows 0: must be at least 1$"):
        AnalysisConfig(first_token_rows=0)
    quick = AnalysisConfig(quick=True, eval_batch_size=4)
    assert quick.first_token_rows == 3
    assert ANALYSES["first-token"].settings_identity(quick, FileHashes()) == {"first_token_rows": 3}
    checkpoints = as_checkpoints({name: tiny_bert(seed) for seed, name in enumerate(PAIRS[0])})
    sample = replace(task_sample, settings=quick)
    entries = analyse([ANALYSES["first-token"]], checkpoints, list(PAIRS), sample, ResultStore(tmp_path))
    measured = per_checkpoint_results(entries["first-token"])
    for checkpoint in checkpoints:  # against each example run alone (no padding): (layers, heads, rows) to token 0
        alone = [
            forward(
                checkpoint.model,
                encode_examples(task_sample.tokenizer, [example], 64, pair=True),
                capture=Capture(attention=True),
            ).attentions[0, ..., :3, 0]  # the first three rows
            for example in task_sample.task_examples
        ]
        expected = sum(rows.sum(-1) for rows in alone) / sum(rows.shape[-1] for rows in alone)
        assert torch.allclose(torch.tensor(measured[checkpoint.name]["per_head"]), expected, atol=1e-6)
    assert measured[PAIRS[0][0]] != measured[PAIRS[0][1]]
    metrics = values(VIEWS["first-token"].metrics(entries["first-token"]))
    assert set(metrics) == {f"first_token_{name}{layer}" for name in PAIRS[0] for layer in ("", "_layer_1", "_layer_2")}
    assert all(0 < value < 1 for value in metrics.values())


def test_an_analysis_joins_a_runs_trajectory_through_its_view(install, task_sample, tmp_path):
    install(
        "toy_analysis",
        first_token_modules("toy_analysis", "first-token", 27, "task"),
        first_token_groups("toy_analysis"),
    )
    # a checkpoint kept at step 4 of 8, measured with the two a run compares, as harness.run.trajectory does
    step = step_name(4)
    checkpoints = as_checkpoints({PRETRAINED: tiny_bert(0), step: tiny_bert(1), FINETUNED: tiny_bert(2)})
    pairs = [(PRETRAINED, FINETUNED), (PRETRAINED, step), (step, FINETUNED)]
    entries = analyse([ANALYSES["first-token"]], checkpoints, pairs, task_sample, ResultStore(tmp_path))
    record = {"step": 4, "fractions": [0.5], "examples_seen": 32}
    summary = {
        "analyses": {
            name: renamed_entry(entry, {PRETRAINED: PRETRAINED, FINETUNED: FINETUNED}, [(PRETRAINED, FINETUNED)])
            for name, entry in entries.items()
        },
        "trajectory": {"of_steps": 8, "points": [point(record, entries, step)]},
    }
    measured = per_checkpoint_results(entries["first-token"])
    logged = {(name, at): value for name, value, at in trajectory_metrics(summary, headline=[])}
    # its per-layer metrics (along_layers) over the steps: the kept checkpoint's at step 4, the final one's at 8
    for layer, heads in enumerate(measured[step]["per_head"], 1):
        name = f"trajectory/first_token_finetuned_layer_{layer}"
        assert logged[name, 4] == pytest.approx(statistics.fmean(heads))
        assert logged[name, 8] == pytest.approx(statistics.fmean(measured[FINETUNED]["per_head"][layer - 1]))
    assert "trajectory/first_token_finetuned" not in {name for name, _ in logged}  # the mean is no layer's


def test_a_source_is_one_module_and_the_analyses_naming_it_read_its_stream(install, task_sample, tmp_path):
    package = "toy_source"
    modules = {**first_token_modules(package, "first-token-reversed", 26, "reversed-text"), "reversed_text": TOY_SOURCE}
    install(
        package,
        modules,
        {**first_token_groups(package), "harness.inputs.sources": {"reversed-text": f"{package}.reversed_text"}},
    )
    assert "reversed-text" in SOURCES
    streamed: list[str] = []
    checkpoints = as_checkpoints({"pretrained": tiny_bert(0)})
    entries = analyse(
        [ANALYSES["first-token-reversed"]],
        checkpoints,
        [],
        task_sample,
        ResultStore(tmp_path),
        on_source_done=lambda source, _: streamed.append(source),
    )
    entry = entries["first-token-reversed"]
    assert streamed == ["reversed-text"]
    assert entry["source"]["identity"]["source"] == "reversed-text"
    assert entry["source"]["notes"] == {"examples": len(task_sample.task_examples)}
    grid = per_checkpoint_results(entry)["pretrained"]["per_head"]
    assert len(grid) == 2 and all(0 < value < 1 for row in grid for value in row)


def test_an_encoder_family_registered_with_the_auto_classes_loads_and_is_analysed(
    install, task_sample, tmp_path, tiny_tokenizer
):
    install("toy_encoder", {"modeling": TOY_ENCODER}, {"harness.model": {"toy-bert": "toy_encoder.modeling"}})
    folder = tmp_path / "toy-bert-tiny"
    config = AutoConfig.for_model(
        "toy-bert",
        vocab_size=len(tiny_tokenizer),
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=32,
        initializer_range=0.5,
    )
    AutoModelForMaskedLM.from_config(config).save_pretrained(folder)
    tiny_tokenizer.save_pretrained(folder)
    assert check_model(str(folder), {"--max-length": 64}).model_type == "toy-bert"  # what planning a run checks
    model = prepare(
        load_sequence_classifier(str(folder), get_task("rte"), head_seed=0), torch.device("cpu"), torch.float32
    )
    assert type(model).__name__ == "ToyBertForSequenceClassification" and harness_attention(model)
    tokenizer = load_tokenizer(str(folder))
    context = SourceContext(
        tokenizer,
        task_sample.settings,
        tokenizer_name=str(folder),
        max_length=64,
        task=task_sample.task,
        task_examples=task_sample.task_examples,
        task_identity=task_sample.task_identity,
    )
    # surface reads the special tokens from the tokenizer, sinks the value and output projections found by tracing
    entries = analyse(
        [ANALYSES["surface"], ANALYSES["sinks"]],
        as_checkpoints({"pretrained": model}),
        [],
        context,
        ResultStore(tmp_path / "store"),
    )
    # the same weights as a plain BERT give the same numbers: the family's own model type changes nothing
    twin = BertForSequenceClassification(BertConfig(**model.config.to_diff_dict()))
    twin.load_state_dict(model.state_dict())
    bert = analyse(
        [ANALYSES["surface"], ANALYSES["sinks"]],
        as_checkpoints({"pretrained": prepare(twin, torch.device("cpu"), torch.float32)}),
        [],
        context,
        ResultStore(tmp_path / "bert-store"),
    )
    for name in ("surface", "sinks"):
        assert per_checkpoint_results(entries[name]) == per_checkpoint_results(bert[name]), name


def write_toy_task(folder: Path) -> Path:
    """The toy task's spec and its train and dev files: the tiny sentiment sentences, every fourth one for dev."""
    folder.mkdir(parents=True)
    rows = sentiment_sentences()
    for split, chosen in (("train", [row for i, row in enumerate(rows) if i % 4]), ("dev", rows[::4])):
        (folder / f"{split}.tsv").write_text(
            "sentence\tlabel\n" + "".join(f"{text}\t{label}\n" for text, label in chosen)
        )
    (folder / "toy.toml").write_text(TOY_SPEC)
    return folder / "toy.toml"


@pytest.mark.slow  # a whole tiny run: fine-tuning, the dev evaluation, MLflow
def test_a_task_is_one_spec_file_and_runs_end_to_end(tiny_model_dir, tiny_data, tmp_path, monkeypatch):
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "hf-datasets"))
    spec = write_toy_task(tmp_path / "toy")
    arguments = tiny_run_arguments(tiny_model_dir, tiny_data, tmp_path, "--analyses", "evaluation", task=str(spec))
    assert main(arguments) == 0
    (summary_path,) = (tmp_path / "out").glob("toy-*/summary.json")
    summary = json.loads(summary_path.read_text())
    assert summary["run"]["task"] == "toy" and set(summary["analyses"]) == {"evaluation"}
    dev = per_checkpoint_results(summary["analyses"]["evaluation"])
    assert set(dev) == set(PAIRS[0])
    for stats in dev.values():
        assert stats["task"] == "toy" and stats["examples"] == {"dev": len(sentiment_sentences()[::4])}
        assert 0 <= stats["metrics"]["dev/accuracy"] <= 1


def test_an_analysis_that_intervenes_scores_its_checkpoints_under_masks(install, task_sample, tmp_path):
    install(
        "toy_analysis",
        first_token_modules("toy_analysis", "first-token", 27, "task"),
        first_token_groups("toy_analysis"),
    )
    assert "first-token-masked" not in [analysis.name for analysis in select_analyses(None)]  # only when named
    assert "first-token-masked" in [analysis.name for analysis in select_analyses(["first-token-masked"])]
    checkpoints = as_checkpoints({name: tiny_bert(seed) for seed, name in enumerate(PAIRS[0])})
    entries = analyse([ANALYSES["first-token-masked"]], checkpoints, list(PAIRS), task_sample, ResultStore(tmp_path))
    measured = per_checkpoint_results(entries["first-token-masked"])
    layers, heads = checkpoints[0].model.config.num_hidden_layers, checkpoints[0].model.config.num_attention_heads
    encoded = [
        encode_examples(task_sample.tokenizer, [example], 64, pair=True) for example in task_sample.task_examples
    ]
    for checkpoint in checkpoints:  # against each example run alone, intact and with one layer's heads gated to 0
        intact = torch.cat([forward(checkpoint.model, one).logits for one in encoded])
        for layer in range(layers):
            gates = torch.ones(1, layers, heads)
            gates[0, layer] = 0
            masked = torch.cat(
                [
                    forward(checkpoint.model, one, interventions=Interventions(head_gates=gates)).logits
                    for one in encoded
                ]
            )
            expected = float((masked - intact).abs().sum(-1).mean())
            assert measured[checkpoint.name]["logit_change"][layer] == pytest.approx(expected, abs=1e-5)
    assert all(value > 0 for stats in measured.values() for value in stats["logit_change"])
    metrics = values(VIEWS["first-token-masked"].metrics(entries["first-token-masked"]))
    assert set(metrics) == {f"masked_logit_change_{name}_layer_{layer}" for name in PAIRS[0] for layer in (1, 2)}
