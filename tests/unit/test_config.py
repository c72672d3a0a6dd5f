"""The configuration dataclasses: validated once, each bad value a one-line error naming its flag."""

import argparse
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import pytest

from harness.arguments import add_arguments
from harness.config import (
    ANALYSIS_SETTINGS,
    AnalysisConfig,
    AnnotationConfig,
    DataConfig,
    DocsConfig,
    EnvironmentConfig,
    ExportConfig,
    FiguresConfig,
    FineTuneConfig,
    ReportConfig,
    RunConfig,
    Settings,
    StudyConfig,
    TaskConfig,
    analysis_settings,
)
from harness.options import flag_of, option
from harness.results.store import key_of
from harness.views import VIEWS
from tasks.errors import InputError

FLAGS = (
    TaskConfig,
    FineTuneConfig,
    AnalysisConfig,
    EnvironmentConfig,
    AnnotationConfig,
    StudyConfig,
    DocsConfig,
    FiguresConfig,
    ReportConfig,
    ExportConfig,
    DataConfig,
)
REQUIRED = {TaskConfig: {"task": "rte"}, AnnotationConfig: {"out": "pool"}}


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: FineTuneConfig(batch_size=0), "--batch-size 0: must be at least 1"),
        (lambda: FineTuneConfig(epochs=0), "--epochs 0: must be in \\(0, 10000\\)"),
        (lambda: FineTuneConfig(epochs=1e308), "--epochs 1e\\+308: must be in \\(0, 10000\\)"),
        (lambda: FineTuneConfig(epochs=float("inf")), "--epochs inf: must be a finite number"),
        (lambda: FineTuneConfig(learning_rate=float("nan")), "--learning-rate nan: must be a finite number"),
        (lambda: FineTuneConfig(trajectory=[0.5, float("nan")]), "--trajectory nan: must be a finite number"),
        (lambda: FineTuneConfig(seed=2**32), "--seed 4294967296: must be in \\[0, 4294967296\\) \\(NumPy's seeds\\)"),
        (lambda: AnnotationConfig(out="pool", sample_seed=-1), "--sample-seed -1: must be in \\[0, 4294967296\\)"),
        (lambda: FineTuneConfig(max_train_examples=-1), "--max-train-examples -1: must be at least 1"),
        (lambda: AnalysisConfig(max_eval_examples=-5), "--max-eval-examples -5"),
        (lambda: AnalysisConfig(eval_batch_size=0), "--eval-batch-size 0"),
        (lambda: AnalysisConfig(word_attention_from="last"), "--word-attention-from last: must be one of mean, first"),
        (lambda: AnalysisConfig(max_tokens=2), "--max-tokens 2: must be at least 5"),
        (
            lambda: AnalysisConfig(probe_train_sentences=-1),
            "--probe-train-sentences -1: must be 0 or more \\(0: the whole training treebank\\)",
        ),
        (lambda: FineTuneConfig(warmup_ratio=1.0), "--warmup-ratio 1: must be in \\[0, 1\\)"),
        (lambda: AnnotationConfig(out="pool", checkpoint="midway"), "--checkpoint midway: must be one of pretrained, "),
        (lambda: TaskConfig(task="nope"), "unknown task 'nope'"),
        (lambda: TaskConfig(task=None), "--task is required"),
        (lambda: TaskConfig(task="rte", max_length=4), "--max-length 4"),
        (lambda: EnvironmentConfig(precision="fp8"), "--precision fp8: must be one of"),
        (lambda: EnvironmentConfig(device="tpu"), "--device tpu"),
        (lambda: EnvironmentConfig(vector_formats=["pdf", "eps"]), "--vector-formats eps: must be one of pdf"),
        (lambda: EnvironmentConfig(vector_formats=["none", "pdf"]), "--vector-formats none pdf: none leaves every"),
        (lambda: ReportConfig(out="page.txt"), "--out page.txt: must end in .html"),
        (lambda: StudyConfig(tasks=["rte"], name=".."), "--name '..': is not a name; a study's name is one plain name"),
        (lambda: StudyConfig(tasks=["rte"], name="a/b"), "--name 'a/b': holds a path separator"),
        (lambda: StudyConfig(tasks=["rte"], name="two\nlines"), "--name 'two\\\\nlines': holds a control character"),
        (lambda: DocsConfig(run=["../rte=runs/x"]), "--run ../rte=runs/x: the label holds a path separator"),
    ],
)
def test_bad_values_are_one_line_errors_naming_the_flag(build, message):
    with pytest.raises(InputError, match=message) as error:
        build()
    assert "\n" not in str(error.value)


def test_missing_files_are_refused_before_any_work(tmp_path):
    with pytest.raises(InputError, match=f"--syntax-data {tmp_path / 'absent.conllu'}: no such file"):
        AnalysisConfig(syntax_data=tmp_path / "absent.conllu")
    with pytest.raises(InputError, match="--data-dir .*: no such folder"):
        TaskConfig(task="rte", data_dir=tmp_path / "nowhere")


def test_good_values_are_normalised():
    task = TaskConfig(task="SST-2")
    assert task.task == "sst2"
    assert str(EnvironmentConfig(output_dir="out").output_dir) == "out"


def test_the_minilm_preset_fills_what_is_not_given_and_every_flag_wins():
    minilm = RunConfig(TaskConfig(task="rte", model="minilm")).finetune
    assert (minilm.recipe, minilm.learning_rate, minilm.epochs) == ("minilm", 5e-5, 6.0)
    assert RunConfig(TaskConfig(task="mrpc", model="minilm")).finetune.epochs == 3.0
    other = RunConfig(TaskConfig(task="rte", model="bert-base-uncased")).finetune
    assert (other.recipe, other.learning_rate, other.epochs) == ("papers", 2e-5, 3.0)
    given = RunConfig(TaskConfig(task="rte", model="minilm"), FineTuneConfig(learning_rate=1e-4)).finetune
    assert (given.recipe, given.learning_rate, given.epochs) == ("minilm", 1e-4, 6.0)
    asked = RunConfig(TaskConfig(task="rte", model="minilm"), FineTuneConfig(recipe="papers")).finetune
    assert (asked.learning_rate, asked.epochs) == (2e-5, 3.0)
    with pytest.raises(InputError, match="--recipe fast: must be one of auto, papers, minilm"):
        FineTuneConfig(recipe="fast")


def test_the_page_and_the_tables_go_under_the_output_folder_unless_out_says_where():
    assert ReportConfig().out_under(Path("runs")) == Path("runs/report/index.html")
    assert ExportConfig().out_under(Path("runs")) == Path("runs/export")
    assert ReportConfig(out="elsewhere/page.html").out_under(Path("runs")) == Path("elsewhere/page.html")
    assert ExportConfig(out="tables").out_under(Path("runs")) == Path("tables")


def declaring(kind: str) -> list:
    """A pytest parameter per field of the configuration classes that declares ``kind`` (bounds, choices)."""
    return [
        pytest.param(cls, item, id=f"{cls.__name__}.{item.name}")
        for cls in FLAGS
        for item in fields(cls)
        if item.metadata.get(kind) is not None
    ]


def help_of(cls: type) -> str:
    """The help of ``cls``'s flags as generated for the CLI, on one line."""
    parser = argparse.ArgumentParser()
    add_arguments(parser, cls)
    return " ".join(parser.format_help().split())


@pytest.mark.parametrize("cls, item", declaring("bounds"))
def test_each_declared_range_is_checked_and_shown_in_the_help(cls, item):
    bounds, flag = item.metadata["bounds"], flag_of(cls, item.name)
    outside = [bounds.above if bounds.above is not None else bounds.minimum - 1]
    outside += [bounds.below] if bounds.below is not None else []
    for value in outside:
        with pytest.raises(InputError) as error:
            cls(**REQUIRED.get(cls, {}), **{item.name: value})
        typed = value if isinstance(value, int) else f"{value:g}"  # a whole number as typed: 4294967296
        assert str(error.value) == f"{flag} {typed}: {bounds.requirement}"
    if bounds.minimum is not None:
        assert getattr(cls(**REQUIRED.get(cls, {}), **{item.name: bounds.minimum}), item.name) == bounds.minimum
    assert f"({bounds.words}" in help_of(cls)


@pytest.mark.parametrize("cls, item", declaring("choices"))
def test_each_declared_choice_list_is_checked_by_the_dataclass_too(cls, item):
    choices, flag = item.metadata["choices"], flag_of(cls, item.name)
    with pytest.raises(InputError) as error:
        cls(**REQUIRED.get(cls, {}), **{item.name: "none-of-these"})
    assert str(error.value) == f"{flag} none-of-these: must be one of {', '.join(choices)}"
    assert all(getattr(cls(**REQUIRED.get(cls, {}), **{item.name: choice}), item.name) == choice for choice in choices)


@pytest.mark.parametrize("flag", ["corpus", "syntax_data", "coref_data", "pattern_weights"])
def test_a_path_too_long_for_the_system_is_one_line_naming_the_flag(flag):
    with pytest.raises(InputError) as error:
        AnalysisConfig(**{flag: "a" * 100_000})
    message = str(error.value)
    assert message.startswith(
        f"{flag_of(AnalysisConfig, flag)} {'a' * 200}... (100,000 characters): cannot be looked up (file name too long)"
    )
    assert message.endswith("check the path") and len(message) < 400


def test_the_analyses_own_settings_are_flags_and_keys_as_when_this_module_declared_them():
    assert VIEWS  # the views' modules, imported, declare their analyses' settings
    own = {item.name for part in ANALYSIS_SETTINGS.values() for item in fields(part)}
    assert {"clustering_tokens_per_example", "syntax_min_count", "probe_init", "pattern_weights"} <= own
    # those only one analysis or its source reads, and the switches (issue 62, item 4)
    assert {"probe_train_sentences", "coref_windows", "max_dev_examples", "ablation", "transplant"} <= own
    assert own <= {item.name for item in fields(AnalysisConfig)} and fields(AnalysisConfig)[-1].name == "quick"
    assert "syntax_min_count 20" in fields(AnalysisConfig)[-1].metadata["help"]  # --quick names every cap
    assert AnalysisConfig(quick=True).syntax_min_count == 20
    assert AnalysisConfig(quick=True, probe_train_sentences=0).probe_train_sentences == 200  # 0: unbounded
    # the keys these settings had while AnalysisConfig declared them all: run keys and stored results depend on them
    assert key_of(asdict(AnalysisConfig())) == "cc068709bc1a7a49"
    assert key_of(asdict(AnalysisConfig(quick=True))) == "b3284f9a48205097"
    changed = AnalysisConfig(probe_init="glorot", syntax_min_count=7, clustering_tokens_per_example=3)
    assert key_of(asdict(changed)) == "4cbfe43172155dfc"


def test_a_setting_named_as_one_declared_already_is_refused():
    @dataclass
    class Again(Settings):
        probe_init: str = option("zeros", "the probes' setting, declared a second time")

    before = dict(ANALYSIS_SETTINGS)
    with pytest.raises(TypeError, match="probe_init: .*ProbeSettings has this name"):
        analysis_settings(Again)
    assert ANALYSIS_SETTINGS == before


@pytest.mark.parametrize(
    "place, says",
    [
        ({"after": "syntax_min_count"}, "after='syntax_min_count' names no shared setting"),
        ({"before": "quick"}, "before='quick' names no shared setting"),
        ({"after": "corpus", "before": "max_tokens"}, "give after= or before=, not both"),
        ({"quick": 3, "quick_after": "max_tokens"}, "quick_after='max_tokens' names a setting --quick does not cap"),
    ],
)
def test_a_setting_placed_beside_no_shared_setting_is_refused(place, says):
    @dataclass
    class Placed(Settings):
        placed_setting: int = option(1, "a setting asking for a place", **place)

    before = dict(ANALYSIS_SETTINGS)
    with pytest.raises(TypeError, match=f"Placed.placed_setting: {says}"):
        analysis_settings(Placed)
    assert ANALYSIS_SETTINGS == before
