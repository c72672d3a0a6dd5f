"""Loading a pre-trained encoder with a new head for each kind of GLUE task."""

import re

import pytest
import torch

from harness.model.loading import check_model_folder, load_sequence_classifier
from tasks.errors import InputError
from tasks.registry import get_task
from tests.fixtures import tiny_bert


@pytest.mark.parametrize("random_init", [False, True])
def test_each_task_gets_a_head_of_its_own_size_and_kind(tmp_path, random_init):
    tiny_bert(0).bert.save_pretrained(tmp_path)  # an encoder without a head, as the hub's BERTs and MiniLM
    # STS-B has no label names: passing id2label=None made transformers 5 build a head of size None
    regression = load_sequence_classifier(str(tmp_path), get_task("stsb"), head_seed=0, random_init=random_init)
    assert regression.classifier.out_features == 1 and regression.config.problem_type == "regression"
    mnli = load_sequence_classifier(str(tmp_path), get_task("mnli"), head_seed=0, random_init=random_init)
    assert mnli.classifier.out_features == 3 and mnli.config.id2label[0] == get_task("mnli").label_names[0]


def cut_in_half(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def test_a_whole_model_folder_passes_and_a_cut_safetensors_file_is_one_line(tmp_path):
    tiny_bert(0).save_pretrained(tmp_path)
    check_model_folder(str(tmp_path))
    cut_in_half(tmp_path / "model.safetensors")
    with pytest.raises(
        InputError,
        match=f"^{tmp_path / 'model.safetensors'}: cut short or damaged .*; download the "
        "model again, or save it again with save_pretrained$",
    ):
        check_model_folder(str(tmp_path))


@pytest.mark.parametrize("zip_format", [True, False])
def test_pytorch_weights_are_checked_up_to_their_zip_directory(tmp_path, zip_format):
    tiny_bert(0).config.save_pretrained(tmp_path)
    weights = tmp_path / "pytorch_model.bin"
    torch.save(tiny_bert(0).state_dict(), weights, _use_new_zipfile_serialization=zip_format)
    check_model_folder(str(tmp_path))
    cut_in_half(weights)
    if zip_format:
        with pytest.raises(InputError, match=f"^{weights}: cut short or damaged \\(File is not a zip file\\)"):
            check_model_folder(str(tmp_path))
    else:  # torch's pre-1.6 pickle has no directory to read: taken as it is, as transformers takes it
        check_model_folder(str(tmp_path))


@pytest.mark.parametrize(
    "text, says",
    [('{"model_type": "bert",', "not valid JSON (Expecting property name"), ('["bert"]', "a JSON list, not an object")],
)
def test_a_config_that_is_no_json_object_is_one_line(tmp_path, text, says):
    tiny_bert(0).save_pretrained(tmp_path)
    (tmp_path / "config.json").write_text(text)
    with pytest.raises(InputError, match=f"^{tmp_path / 'config.json'}: {re.escape(says)}"):
        check_model_folder(str(tmp_path))
