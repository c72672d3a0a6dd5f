"""The CLI's errors: one line, non-zero exit, no traceback."""

from dataclasses import fields

import datasets
import pytest
from huggingface_hub import constants as hub_constants

from harness.cli import GROUPS, LEFT_OUT, build_parser, configs_from, main
from harness.options import flag_of
from tasks import hub_reach
from tests.fixtures import harness_arguments


def run_cli(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.err


def test_unknown_task(capsys, tmp_path):
    code, err = run_cli(capsys, "run", "--task", "nope", "--model", "minilm", "--data-dir", str(tmp_path))
    assert code == 2
    assert err.strip() == (
        "error: unknown task 'nope'; valid tasks: cola, sst2, mrpc, stsb, qqp, mnli, qnli, rte, wnli, upos, "
        "or a task spec file (.toml, .yaml)"
    )


def test_data_folder_without_the_task(capsys, tmp_path):
    code, err = run_cli(capsys, "run", "--task", "rte", "--model", "minilm", "--data-dir", str(tmp_path))
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "RTE/train.tsv not found" in err and "Traceback" not in err


def test_unknown_analysis(capsys, tmp_path):
    (tmp_path / "RTE").mkdir()
    (tmp_path / "RTE" / "dev.tsv").write_text("index\tsentence1\tsentence2\tlabel\n0\ta\tb\tentailment\n")
    code, err = run_cli(
        capsys,
        "run",
        "--task",
        "rte",
        "--data-dir",
        str(tmp_path),
        "--model",
        "minilm",  # a model that can be had: its check comes before the analyses'
        "--analyses",
        "astrology",
        "--tracking-uri",
        f"sqlite:///{tmp_path}/m.db",
    )
    assert (
        code == 2
        and "--analyses: unknown analysis astrology; valid: evaluation, cosine, cka, cosine_padded, clustering" in err
    )


def test_unreachable_model_names_the_offline_alias(capsys, tmp_path):
    (tmp_path / "RTE").mkdir()
    for split in ("train", "dev"):
        (tmp_path / "RTE" / f"{split}.tsv").write_text("index\tsentence1\tsentence2\tlabel\n0\ta\tb\tentailment\n")
    code, err = run_cli(capsys, *harness_arguments("run", str(tmp_path / "no-such-model"), tmp_path, tmp_path))
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "no folder of that name here, and not a hub id" in err and "--model minilm" in err


def test_an_unreachable_hub_is_detected_not_retried(capsys, tmp_path, monkeypatch):
    """A hub id that is not in the local cache, with the hub unreachable (here: an endpoint that
    refuses connections), fails on the first attempt, saying so, before any model library is
    needed (a cached one runs from the cache: test_hub_cache.py)."""
    monkeypatch.setattr(hub_constants, "ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)  # set for the run, restored for later tests
    for name in hub_reach.PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    hub_reach.hub_unreachable.cache_clear()
    (tmp_path / "RTE").mkdir()
    for split in ("train", "dev"):
        (tmp_path / "RTE" / f"{split}.tsv").write_text("index\tsentence1\tsentence2\tlabel\n0\ta\tb\tentailment\n")
    code, err = run_cli(capsys, *harness_arguments("run", "no-such-org/no-such-model", tmp_path, tmp_path))
    hub_reach.hub_unreachable.cache_clear()
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "could not load model id 'no-such-org/no-such-model': the hub is unreachable (127.0.0.1:9" in err
    assert "--model minilm" in err


@pytest.mark.parametrize(
    ("typed", "meant"), [("--modle", "--model"), ("--max-train-exmaples", "--max-train-examples"), ("--bogus", None)]
)
def test_a_misspelled_flag_is_one_line_with_a_suggestion_where_one_is_close(capsys, typed, meant):
    with pytest.raises(SystemExit) as stopped:
        main(["run", "--task", "rte", typed, "1"])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and len(err.strip().splitlines()) == 1
    assert err.startswith(f"harness run: error: unrecognized arguments: {typed} 1")
    assert err.strip().endswith("`harness run --help` lists its flags")
    assert (f"(did you mean {meant} for {typed}?)" in err) if meant else "did you mean" not in err


def test_a_misspelled_required_flag_gets_a_suggestion(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["run", "--tsk", "rte", "--model", "minilm"])
    err = capsys.readouterr().err
    assert stopped.value.code == 2
    assert "required: --task (did you mean --task for --tsk?)" in err and "--model for" not in err


def test_a_path_flag_too_long_for_the_system_is_one_line(capsys, tmp_path):
    code, err = run_cli(
        capsys, "run", "--task", "rte", "--model", "minilm", "--data-dir", str(tmp_path), "--corpus", "a" * 100_000
    )
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("error: --corpus aaa") and "(100,000 characters): cannot be looked up" in err


def test_figures_without_a_run(capsys, tmp_path, tiny_model_dir, tiny_data):
    code, err = run_cli(
        capsys,
        "figures",
        "--task",
        "rte",
        "--model",
        str(tiny_model_dir),
        "--data-dir",
        str(tiny_data / "glue"),
        "--output-dir",
        str(tmp_path),
    )
    assert code == 2 and "summary.json not found: run `harness run` with these flags first" in err


def test_figures_of_a_folder_without_a_run(capsys, tmp_path):
    code, err = run_cli(capsys, "figures", str(tmp_path))
    assert code == 2 and f"{tmp_path / 'summary.json'} not found: the folder holds no finished run" in err
    code, err = run_cli(capsys, "figures", str(tmp_path / "absent"))
    assert code == 2 and err.strip() == f"error: RUN_FOLDER {tmp_path / 'absent'}: no such folder; check the path"


def test_max_length_beyond_the_position_embeddings(capsys, tiny_model_dir, tiny_data):
    code, err = run_cli(
        capsys,
        "run",
        "--task",
        "rte",
        "--model",
        str(tiny_model_dir),
        "--data-dir",
        str(tiny_data / "glue"),
        "--max-length",
        "129",
    )
    assert code == 2 and err.strip().endswith(
        "--max-length 129: " + f"{tiny_model_dir} has 128 position embeddings; use at most 128"
    )


def test_flags_are_generated_from_the_dataclasses_with_help():
    parser = build_parser()
    for command, groups in GROUPS.items():
        text = parser._subparsers._group_actions[0].choices[command].format_help()
        for group in groups:
            for item in fields(group):
                if item.name in LEFT_OUT.get((command, group), ()):
                    continue
                assert flag_of(group, item.name) in text.split(), (command, item.name)
                assert item.metadata.get("help"), item.name
    (config,) = configs_from(
        parser.parse_args(
            [
                "run",
                "--task",
                "RTE",
                "--batch-size",
                "16",
                "--analyses",
                "cosine",
                "surface",
                "--random-order",
                "--max-eval-examples",
                "10",
            ]
        )
    )
    assert (config.task.task, config.finetune.batch_size, config.finetune.random_order) == ("rte", 16, True)
    assert config.analysis.analyses == ["cosine", "surface"] and config.analysis.max_eval_examples == 10


def test_help_shows_the_recipes_and_a_flag_overrides_the_model_preset():
    parser = build_parser()
    help_text = " ".join(parser._subparsers._group_actions[0].choices["run"].format_help().split())
    assert "minilm = 5e-05 x 3 epochs, rte 6" in help_text and "papers = 2e-05 x 3 epochs" in help_text
    (preset,) = configs_from(parser.parse_args(["run", "--task", "rte", "--model", "minilm"]))
    assert (preset.finetune.recipe, preset.finetune.learning_rate, preset.finetune.epochs) == ("minilm", 5e-5, 6.0)
    (overridden,) = configs_from(parser.parse_args(["run", "--task", "rte", "--model", "minilm", "--epochs", "2"]))
    assert (overridden.finetune.learning_rate, overridden.finetune.epochs) == (5e-5, 2.0)
