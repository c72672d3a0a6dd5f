"""The CLI's errors: one line, non-zero exit, no traceback."""

from harness.cli import main


def run_cli(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.err


def test_unknown_task(capsys, tmp_path):
    code, err = run_cli(capsys, "run", "--task", "nope", "--model", "minilm", "--data-dir", str(tmp_path))
    assert code == 2
    assert err.strip() == ("error: unknown task 'nope'; valid tasks: "
                           "cola, sst2, mrpc, stsb, qqp, mnli, qnli, rte, wnli")


def test_data_folder_without_the_task(capsys, tmp_path):
    code, err = run_cli(capsys, "run", "--task", "rte", "--model", "minilm", "--data-dir", str(tmp_path))
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "RTE/dev.tsv not found" in err and "Traceback" not in err


def test_unknown_analysis(capsys, tmp_path):
    (tmp_path / "RTE").mkdir()
    (tmp_path / "RTE" / "dev.tsv").write_text("index\tsentence1\tsentence2\tlabel\n0\ta\tb\tentailment\n")
    code, err = run_cli(capsys, "run", "--task", "rte", "--data-dir", str(tmp_path), "--analyses", "astrology",
                        "--tracking-uri", f"sqlite:///{tmp_path}/m.db")
    assert code == 2 and "unknown analysis astrology; valid: cosine" in err


def test_unreachable_model_names_the_offline_alias(capsys, tmp_path):
    (tmp_path / "RTE").mkdir()
    for split in ("train", "dev"):
        (tmp_path / "RTE" / f"{split}.tsv").write_text("index\tsentence1\tsentence2\tlabel\n0\ta\tb\tentailment\n")
    code, err = run_cli(capsys, "run", "--task", "rte", "--model", str(tmp_path / "no-such-model"),
                        "--data-dir", str(tmp_path), "--output-dir", str(tmp_path / "out"),
                        "--cache-dir", str(tmp_path / "cache"), "--tracking-uri", f"sqlite:///{tmp_path}/m.db")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "could not load" in err and "--model minilm" in err


def test_figures_without_a_run(capsys, tmp_path):
    code, err = run_cli(capsys, "figures", "--task", "rte", "--model", "minilm", "--output-dir", str(tmp_path))
    assert code == 2 and "summary.json not found; run `python -m harness run --task rte --model minilm`" in err
