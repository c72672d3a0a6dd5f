"""Small settings files (task specs, --config) read safely: a hostile file of a few hundred bytes is
one line in a few MB, whatever its aliases, nesting or bytes."""

from __future__ import annotations

import tracemalloc

import pytest

from harness.cli import main
from tasks.registry import find_task
from tasks.settings_files import MAX_DEPTH, SettingsError, depth, parsed
from tests.fixtures import assert_one_line_and_no_work, tiny_run_arguments

# A task spec of 496 bytes whose labels nest aliases nine wide, nine levels deep: 9 ** 9 strings once
# expanded (the loader that expanded such a spec, a level or two less deep, took 22 s and 2.26 GB and
# printed an error of two billion characters).
LEVELS = "abcdefghi"
LAUGHS = (
    "name: laughs\ndata_files: {train: train.csv, validation: dev.csv}\ntext_fields: text\nlabels:\n"
    + f"  - &a [{', '.join(['lol'] * 9)}]\n"
    + "".join(f"  - &{name} [{', '.join([f'*{below}'] * 9)}]\n" for below, name in zip(LEVELS, LEVELS[1:]))
)


def test_a_spec_of_nested_yaml_aliases_is_one_line_in_a_few_mb(tiny_model_dir, tiny_data, tmp_path, capsys, caplog):
    spec = tmp_path / "laughs.yaml"
    spec.write_text(LAUGHS)
    argv = tiny_run_arguments(tiny_model_dir, tiny_data, tmp_path / "run", "--task", str(spec))
    tracemalloc.start()
    try:
        code = main(argv)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 5 * 2**20  # refused at the first anchor: nothing expanded (the test suite times nothing)
    assert_one_line_and_no_work(
        code,
        f"{spec}:5: YAML anchors and aliases (&name, *name) are not taken; write the values out",
        tmp_path / "run",
        capsys,
        caplog,
    )


@pytest.mark.parametrize("kind", ["json", "toml", "yaml"])
def test_nesting_past_the_limit_is_refused_in_every_format_and_the_limit_itself_is_read(kind):
    def nested(levels: int) -> str:
        inner = "[" * levels + "1" + "]" * levels
        return f'{{"x": {inner}}}' if kind == "json" else f"x = {inner}" if kind == "toml" else f"x: {inner}"

    assert depth(parsed(nested(MAX_DEPTH - 1), kind)) == MAX_DEPTH  # the table holding it is one level
    for levels in (MAX_DEPTH, 5000):  # 5000: past Python's recursion limit in tomllib and json
        with pytest.raises(SettingsError, match=f"nested more than {MAX_DEPTH} tables or lists deep"):
            parsed(nested(levels), kind)


def test_a_spec_that_is_not_utf8_or_too_large_names_the_file_and_the_line(tmp_path):
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"text_fields: text\nname: caf\xe9\n")
    with pytest.raises(Exception, match=r"latin.yaml:2: not UTF-8 text \(byte b'\\xe9' at offset 27\)"):
        find_task(str(latin))
    huge = tmp_path / "huge.toml"
    huge.write_text('text_fields = ["text"]\n' + "# padding\n" * 200_000)
    with pytest.raises(Exception, match="huge.toml: larger than 1024 KiB; a task spec is a few lines of keys"):
        find_task(str(huge))
