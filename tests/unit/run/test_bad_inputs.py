"""Bad input: one line naming the file (and line) and the fix, exit code 2, before any model work.

Each case runs the real CLI on a tiny model; none may fine-tune, create an MLflow store,
leave a lock file, or print a traceback.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import datasets
import pytest
import torch

from harness.cli import build_parser, configs_from, main
from harness.run.plan import plan_run
from tests.fixtures import assert_one_line_and_no_work, harness_arguments, tiny_bert

CONLLU = "1\tthe\t_\tDET\tDT\t_\t2\tdet\t_\t_\n2\tcat\t_\tNOUN\tNN\t_\t{head}\t{rel}\t_\t_\n"


def glue_copy(tiny_data: Path, root: Path) -> Path:
    target = root / "glue"
    shutil.copytree(tiny_data / "glue", target)
    return target


def case_dev_not_utf8(data, root):
    (data / "RTE" / "dev.tsv").write_bytes(b"index\tsentence1\tsentence2\tlabel\n0\tcaf\xe9\tb\tentailment\n")
    return [], "RTE/dev.tsv:2: not UTF-8 text"


def case_dev_header_only(data, root):
    (data / "RTE" / "dev.tsv").write_text("index\tsentence1\tsentence2\tlabel\n")
    return [], "RTE/dev.tsv has no examples below its header"


def case_train_empty(data, root):
    (data / "RTE" / "train.tsv").write_text("")
    return [], "RTE/train.tsv has no examples"


def case_treebank_not_utf8(data, root):
    path = root / "tb.conllu"
    path.write_bytes(CONLLU.format(head=0, rel="root").encode().replace(b"cat", b"c\xe4t"))
    return ["--syntax-data", str(path)], "tb.conllu:2: not UTF-8 text"


def case_treebank_cycle(data, root):
    path = root / "tb.conllu"
    path.write_text("1\ta\t_\tX\tX\t_\t2\tdep\t_\t_\n2\tb\t_\tX\tX\t_\t1\tdep\t_\t_\n3\tc\t_\tX\tX\t_\t0\troot\t_\t_\n")
    return [
        "--syntax-data",
        str(path),
    ], "tb.conllu:1: the heads of sentence 1 do not form a tree (word 1 is on a cycle)"


def case_treebank_two_roots(data, root):
    path = root / "tb.conllu"
    path.write_text(CONLLU.format(head=0, rel="root").replace("\t2\tdet", "\t0\troot"))
    return ["--syntax-data", str(path)], "do not form a tree (2 roots)"


def case_jsonlines_bad_clusters(data, root):
    path = root / "dev.jsonlines"
    path.write_text('{"sentences": [["a", "b"]], "clusters": [0, 1]}\n')
    return ["--coref-data", str(path)], "dev.jsonlines:1: 'clusters' must be a list of clusters"


def case_jsonlines_not_utf8(data, root):
    path = root / "dev.jsonlines"
    path.write_bytes('{"sentences": [["caf\u00e9"]], "clusters": []}\n'.encode("latin-1"))
    return ["--coref-data", str(path)], "dev.jsonlines:1: not UTF-8 text"


def jsonlines(root: Path, record: dict) -> Path:
    path = root / "dev.jsonlines"
    path.write_text(json.dumps(record) + "\n")
    return path


def case_jsonlines_float_span(data, root):
    path = jsonlines(root, {"sentences": [["the", "cat", "sat"], ["it"]], "clusters": [[[0.0, 0.5], [2, 2]]]})
    return ["--coref-data", str(path)], (
        "dev.jsonlines:1: cluster 0 has span [0.0, 0.5]; spans are [start, end] pairs of integer word indices"
    )


def case_jsonlines_bool_span(data, root):
    path = jsonlines(root, {"sentences": [["the", "cat"]], "clusters": [[[True, 1]]]})
    return ["--coref-data", str(path)], "dev.jsonlines:1: cluster 0 has span [True, 1]; spans are [start, end]"


def case_jsonlines_span_reversed(data, root):
    path = jsonlines(root, {"sentences": [["the", "cat"]], "clusters": [[[1, 0]]]})
    return ["--coref-data", str(path)], "dev.jsonlines:1: cluster 0 has span [1, 0] outside the document's 2 words"


def case_jsonlines_no_sentences(data, root):
    path = jsonlines(root, {"sentences": [], "clusters": []})
    return ["--coref-data", str(path)], "dev.jsonlines:1: 'sentences' must be a non-empty list of sentences, not []"


def case_jsonlines_word_not_text(data, root):
    path = jsonlines(root, {"sentences": [["the", 3]], "clusters": []})
    return ["--coref-data", str(path)], (
        "dev.jsonlines:1: 'sentences' must be a list of lists of words (strings); sentence 0 is ['the', 3]"
    )


def case_jsonlines_pos_not_a_list(data, root):
    path = jsonlines(root, {"sentences": [["the", "cat"]], "clusters": [], "pos": 5})
    return ["--coref-data", str(path)], "dev.jsonlines:1: 'pos' of document 'dev.jsonlines:1' is 5, not a list of tags"


def case_jsonlines_pos_tag_not_text(data, root):
    path = jsonlines(
        root, {"sentences": [["he", "sat", "it", "ran"]], "clusters": [], "pos": [["PRP", "VBD", "PRP", 7]]}
    )
    return ["--coref-data", str(path)], (
        "dev.jsonlines:1: 'pos' of document 'dev.jsonlines:1', sentence 0, is ['PRP', 'VBD', 'PRP', 7]; tags are"
    )


def case_jsonlines_pos_tags_short(data, root):
    path = jsonlines(
        root, {"sentences": [["the", "cat"], ["it", "ran"]], "clusters": [], "pos_tags": [["DT", "NN"], ["PRP"]]}
    )
    return ["--coref-data", str(path)], (
        "dev.jsonlines:1: 'pos_tags' of document 'dev.jsonlines:1', sentence 1, has 1 tags for its 2 words"
    )


def case_jsonlines_flat_pos_tags_short(data, root):
    record = {"doc_key": "nw/wsj/00/wsj_0001_0", "sentences": [["the", "cat"], ["it", "ran"]], "clusters": []}
    path = jsonlines(root, {**record, "pos_tags": ["DT", "NN", "PRP"]})
    return ["--coref-data", str(path)], (
        "dev.jsonlines:1: 'pos_tags' of document 'nw/wsj/00/wsj_0001_0' has 3 tags for its 4 words in 2 sentences"
    )


def case_conll_too_few_columns(data, root):
    path = root / "story.conll"
    path.write_text("#begin document (d); part 0\nd\t0\t0\tthe\t_\t(0)\nd\t0\tcat\n#end document\n")
    return ["--coref-data", str(path)], "story.conll:3: 3 columns, expected at least 5"


def case_conll_not_utf8(data, root):
    path = root / "story.conll"
    path.write_bytes(b"#begin document (d); part 0\nd\t0\t0\tc\xe4t\t_\t(0)\n#end document\n")
    return ["--coref-data", str(path)], "story.conll:2: not UTF-8 text (byte b'\\xe4')"


def case_conll_unterminated(data, root):
    path = root / "story.conll"
    path.write_text("#begin document (d); part 0\nd\t0\t0\tthe\t_\t(0)\n")
    return ["--coref-data", str(path)], "story.conll:1: document 'd/part 0' has no #end document line"


def case_treebank_head_not_an_ascii_number(data, root):
    path = root / "tb.conllu"
    path.write_text(CONLLU.format(head="\u00b2", rel="root"))
    return ["--syntax-data", str(path)], "tb.conllu:2: head '\u00b2' is not a word index"


def case_corpus_empty(data, root):
    path = root / "corpus.txt"
    path.write_text("\n  \n")
    return ["--corpus", str(path)], "corpus.txt: no text (the file is empty or blank)"


def case_corpus_without_two_paragraphs(data, root):
    path = root / "corpus.txt"
    path.write_text("one paragraph .\n\nanother document .\n")
    return ["--corpus", str(path)], "corpus.txt: none of its 2 documents has two paragraphs"


def case_corpus_utf16(data, root):
    path = root / "corpus.txt"
    path.write_bytes("one paragraph .\nanother one .\n".encode("utf-16-le"))
    return ["--corpus", str(path)], "corpus.txt:1: not text (a NUL byte: a binary or UTF-16 file?)"


def case_corpus_not_utf8(data, root):
    path = root / "corpus.txt"
    path.write_bytes(b"one paragraph .\nanother \xff one .\n")
    return ["--corpus", str(path)], "corpus.txt:2: not UTF-8 text"


def case_output_dir_under_a_file(data, root):
    blocker = root / "a-file"
    blocker.write_text("")
    return ["--output-dir", str(blocker / "out")], "--output-dir " + str(blocker / "out") + ": cannot write there"


def case_max_length_beyond_positions(data, root):
    return ["--max-length", "4096"], "--max-length 4096: "


def case_reinit_beyond_layers(data, root):
    return ["--reinit-layers", "9"], "--reinit-layers 9: "  # the tiny model has 2 layers


def case_zero_eval_examples(data, root):
    return ["--max-eval-examples", "0"], "--max-eval-examples 0"


def case_zero_batch(data, root):
    return ["--batch-size", "0"], "--batch-size 0: must be at least 1"


def case_zero_epochs(data, root):
    return ["--epochs", "0"], "--epochs 0: must be in (0, 10000)"


def case_corpus_typo(data, root):
    return ["--corpus", str(root / "corpsu.txt")], "corpsu.txt"


def case_syntax_data_typo(data, root):
    return ["--syntax-data", str(root / "ud-dev.conlu")], "ud-dev.conlu"


def case_coref_data_typo(data, root):
    return ["--coref-data", str(root / "litbnak")], "litbnak"


def case_negative_eval_examples(data, root):
    return ["--max-eval-examples", "-5"], "--max-eval-examples -5"


def case_model_folder_without_weights(data, root):
    folder = root / "model"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "bert"}')
    return ["--model", str(folder)], f"{folder}: no weights (model.safetensors or pytorch_model.bin)"


def case_model_folder_without_config(data, root):
    folder = root / "model"
    folder.mkdir()
    return ["--model", str(folder)], f"{folder}: no config.json"


def case_model_neither_folder_nor_hub_id(data, root):
    missing = root / "no-such-model"  # a mistyped path: no folder, and no hub id (a hub id has no '/' at its start)
    return ["--model", str(missing)], f"--model {missing}: no folder of that name here, and not a hub id"


def saved_model(root: Path) -> Path:
    folder = root / "model"
    tiny_bert(0).save_pretrained(folder)
    return folder


def cut_in_half(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def case_model_safetensors_cut_short(data, root):
    weights = saved_model(root) / "model.safetensors"
    cut_in_half(weights)
    return ["--model", str(weights.parent)], f"{weights}: cut short or damaged (Error while deserializing header"


def case_model_bin_cut_short(data, root):
    folder = saved_model(root)
    weights = folder / "pytorch_model.bin"
    torch.save(tiny_bert(0).state_dict(), weights)
    (folder / "model.safetensors").unlink()
    cut_in_half(weights)
    return ["--model", str(folder)], f"{weights}: cut short or damaged (File is not a zip file); download the model"


def case_model_config_not_json(data, root):
    folder = saved_model(root)
    (folder / "config.json").write_text('{"model_type": "bert",')
    return ["--model", str(folder)], f"{folder / 'config.json'}: not valid JSON (Expecting property name"


def own_task(root: Path, train: str, dev: str, spec: str = "", suffix: str = ".csv") -> list[str]:
    """A task spec of one's own in ``root/own`` (text and label), its splits ``train`` and ``dev``
    as written (CSV, or JSON lines for ``suffix=".jsonl"``), more keys in ``spec``."""
    folder = root / "own"
    folder.mkdir(exist_ok=True)
    (folder / f"train{suffix}").write_text(train)
    (folder / f"dev{suffix}").write_text(dev)
    path = folder / "own.yaml"
    path.write_text(f"data_files: {{train: train{suffix}, validation: dev{suffix}}}\ntext_fields: text\n{spec}")
    return ["--task", str(path)]


LABELLED = "text,label\nthe cat sat,pos\nthe dog ran,neg\n"


def case_label_empty_in_a_csv(data, root):
    task = own_task(root, "text,label\nthe cat sat,pos\nthe dog ran,\nhe is happy,neg\n", LABELLED)
    return task, (
        "own (csv files): split 'train', train.csv line 3 has no label (an empty cell, NaN or null); fill it, "
        "or add missing_labels: drop to the spec to leave such rows out"
    )


def case_labels_nan_in_a_csv(data, root):
    task = own_task(root, LABELLED, "text,label\nthe cat sat,nan\nthe dog ran,neg\nhe sat,NaN\n")
    return task, "split 'validation', dev.csv line 2 has no label (an empty cell, NaN or null) (and 1 more row);"


def case_score_nan_in_a_csv(data, root):
    task = own_task(root, "text,label\nthe cat sat,1.5\nthe dog ran,nan\n", LABELLED, "label_kind: score\n")
    return task, "split 'train', train.csv line 3 has no label (an empty cell, NaN or null)"


def case_label_null_in_json_lines(data, root):
    rows = '{"text": "the cat sat", "label": "pos"}\n{"text": "he ran", "label": null}\n'
    task = own_task(root, rows + '{"text": "she sat", "label": "neg"}\n', rows, suffix=".jsonl")
    return task, "split 'train', train.jsonl line 2 has no label"


def case_spec_name_out_of_its_folder(data, root):
    task = own_task(root, LABELLED, LABELLED, "name: ../../../escaped/run\n")
    return task, "own.yaml: name '../../../escaped/run' holds a path separator; give the task one plain name"


def case_spec_name_with_a_newline(data, root):
    return own_task(root, LABELLED, LABELLED, 'name: "two\\nlines"\n'), "name 'two\\nlines' holds a control character"


def case_spec_data_file_outside_its_folder(data, root):
    (root / "elsewhere.csv").write_text(LABELLED)
    task = own_task(root, LABELLED, LABELLED)
    spec = Path(task[1])
    spec.write_text(spec.read_text().replace("train: train.csv", "train: ../elsewhere.csv"))
    return task, f"own.yaml: data file 'train' {spec.parent}/../elsewhere.csv lies outside the spec's folder"


def case_spec_data_file_linked_out_of_its_folder(data, root):
    (root / "secret.txt").write_text("not,data\n")
    task = own_task(root, LABELLED, LABELLED)
    (root / "own" / "train.csv").unlink()
    (root / "own" / "train.csv").symlink_to(root / "secret.txt")
    return task, f"data file 'train' {root}/own/train.csv (a link to {root}/secret.txt) lies outside the spec's folder"


def case_spec_naming_its_format_and_a_file_outside(data, root):
    task = own_task(root, LABELLED, LABELLED, "dataset: csv\n")
    spec = Path(task[1])
    spec.write_text(spec.read_text().replace("train: train.csv", "train: ../../../../../../etc/passwd"))
    return task, "data file 'train' " + f"{spec.parent}/../../../../../../etc/passwd lies outside the spec's folder"


def case_spec_nested_past_the_limit(data, root):
    path = root / "deep.toml"
    path.write_text('text_fields = ["text"]\nx = ' + "[" * 3000 + "]" * 3000 + "\n")
    return ["--task", str(path)], "deep.toml: nested more than 8 tables or lists deep"


def case_spec_not_utf8(data, root):
    path = root / "latin.yaml"
    path.write_bytes(b"text_fields: text\nname: caf\xe9\n")
    return ["--task", str(path)], "latin.yaml:2: not UTF-8 text (byte b'\\xe9' at offset 27); re-save it as UTF-8"


def settings(root: Path, text: str) -> list[str]:
    path = root / "settings.yaml"
    path.write_text(text)
    return ["--config", str(path)]


def case_config_epochs_past_any_float(data, root):
    return settings(root, "epochs: 1e308\n"), "--epochs 1e+308: must be in (0, 10000)"


def case_config_epochs_infinite(data, root):
    return settings(root, "epochs: .inf\n"), "--epochs inf: must be a finite number"


def case_learning_rate_nan(data, root):
    return ["--learning-rate", "nan"], "--learning-rate nan: must be a finite number"


CASES = {name[len("case_") :]: function for name, function in list(globals().items()) if name.startswith("case_")}


@pytest.fixture
def datasets_cache(tmp_path_factory, monkeypatch) -> None:
    """`datasets`' cache of the own tasks' files, outside the folder that must stay untouched."""
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path_factory.mktemp("hf-datasets")))


@pytest.mark.parametrize("name", CASES)
def test_bad_input_is_one_line_before_any_work(
    name, tiny_model_dir, tiny_data, tmp_path, capsys, caplog, datasets_cache
):
    data = glue_copy(tiny_data, tmp_path)
    extra, message = CASES[name](data, tmp_path)
    argv = arguments("run", tiny_model_dir, data, tiny_data, tmp_path, *extra)
    assert_one_line_and_no_work(main(argv), message, tmp_path, capsys, caplog)


def arguments(command: str, tiny_model_dir: Path, data: Path, tiny_data: Path, root: Path, *extra: str) -> list[str]:
    return harness_arguments(
        command,
        tiny_model_dir,
        data,
        root,
        *("--syntax-data", str(tiny_data / "tiny-dev.conllu"), "--coref-data", str(tiny_data / "coref"), *extra),
    )


SUMMARIES = {"empty": "", "truncated": '{"schema": 2, "run": {"task": "rte"', "incomplete": '{"schema": 2, "run": {}}'}


@pytest.mark.parametrize("command", ["figures", "figures RUN_FOLDER", "report", "export"])
@pytest.mark.parametrize("damage", SUMMARIES)
def test_a_summary_that_is_not_whole_is_one_line_for_every_command_that_reads_it(
    damage, command, tiny_model_dir, tiny_data, capsys, caplog, tmp_path
):
    argv = arguments("figures", tiny_model_dir, tiny_data / "glue", tiny_data, tmp_path)
    out = tmp_path / "out"
    run_dir = plan_run(configs_from(build_parser().parse_args(argv))[0]).run_dir if command == "figures" else None
    run_dir = run_dir or out / "rte-model-seed42-0123abcd"  # the commands given a folder read any run's
    (run_dir / "summary.json").parent.mkdir(parents=True)
    (run_dir / "summary.json").write_text(SUMMARIES[damage])
    argv = {
        "figures": argv,
        "figures RUN_FOLDER": ["figures", str(run_dir)],
        "report": ["report", "--output-dir", str(out)],
        "export": ["export", "--output-dir", str(out)],
    }[command]
    assert_one_line_and_no_work(
        main(argv), f"{run_dir / 'summary.json'}: empty, truncated or incomplete; run", tmp_path, capsys, caplog
    )
