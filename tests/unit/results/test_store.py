import json
import os

import pytest

from harness.results.store import FileHashes, ResultIdentity, ResultStore, atomic_write_bytes, read_json, write_json
from tasks.errors import InputError


def identity(version: int = 1, **settings) -> ResultIdentity:
    return ResultIdentity("toy", version, ({"model": "m", "sha256": "abc"},), {"file": "dev.tsv"}, settings)


def test_results_round_trip_under_their_identity_and_no_other(tmp_path):
    store = ResultStore(tmp_path)
    path = store.save(identity(), {"x": [1.5, None]})
    assert path.parent.name == "toy" and store.load(identity()) == {"x": [1.5, None]}
    stored = json.loads(path.read_text())
    assert stored["identity"]["version"] == 1 and stored["identity"]["checkpoints"][0]["model"] == "m"
    assert store.load(identity(version=2)) is None  # an older version is never reused
    assert store.load(identity(seed=1)) is None
    assert identity().key != identity(version=2).key != identity(seed=1).key


def test_a_damaged_or_foreign_file_reads_as_missing(tmp_path):
    store = ResultStore(tmp_path)
    path = store.save(identity(), {"x": 1})
    path.write_text('{"identity": ')  # cut short by a crash before atomic writes
    assert store.load(identity()) is None
    path.write_text(json.dumps({"identity": identity(seed=3).as_dict(), "result": {"x": 2}}))  # a key collision
    assert store.load(identity()) is None


def test_a_result_edited_after_it_was_stored_is_one_line_naming_the_file(tmp_path):
    store = ResultStore(tmp_path)
    path = store.save(identity(), {"accuracy": 0.5508, "per_head": [[0.25, 0.75]]})
    written = json.loads(path.read_text())
    path.write_text(json.dumps(written, indent=4, sort_keys=True))  # reformatted, reordered: the same content
    assert store.load(identity()) == {"accuracy": 0.5508, "per_head": [[0.25, 0.75]]}
    written["result"]["accuracy"] = 0.9508  # still valid JSON, still its identity
    path.write_text(json.dumps(written))
    with pytest.raises(InputError) as refused:
        store.load(identity())
    assert str(refused.value) == (
        f"{path}: not what the harness wrote (its content differs from the SHA-256 stored in it); "
        "delete it and run the same command again: it alone is recomputed"
    )
    del written["sha256"]  # written before files were sealed: read as it is
    path.write_text(json.dumps(written))
    assert store.load(identity())["accuracy"] == 0.9508


def test_writes_are_atomic_and_leave_no_temporary_files(tmp_path, monkeypatch):
    target = tmp_path / "a.json"
    write_json(target, {"old": True})

    def crash(*args):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        atomic_write_bytes(target, b'{"new": tru')
    assert read_json(target) == {"old": True}
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]
    assert oct(target.stat().st_mode & 0o777) != oct(0o600)  # the usual mode, not mkstemp's


def test_nan_is_refused_rather_than_written_as_invalid_json(tmp_path):
    with pytest.raises(ValueError):
        write_json(tmp_path / "nan.json", {"x": float("nan")})


def test_folders_and_files_are_identified_by_content(tmp_path):
    hashes = FileHashes()
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "one.txt").write_text("a")
    first = hashes.describe(tmp_path / "d")
    (tmp_path / "d" / "one.txt").write_text("b")
    assert hashes.describe(tmp_path / "d") != first
    assert hashes.describe(tmp_path / "d" / "one.txt")["file"] == "one.txt"


def test_a_verdicts_read_only_keys_are_checked_as_the_keys_they_wrap():
    """`Verdict`'s ``value``/``interval`` are read-only for the type checker alone (its module imports
    the qualifier only then): the store still checks them, optional in a `Verdict`, required in an
    `IntervalVerdict`, and a misspelt key is refused."""
    from harness.results.shapes import ShapeError, check_value
    from harness.views.evidence import IntervalVerdict, Verdict

    plain = {"verdict": "holds", "unit": "examples", "n": 8, "statistic": "share"}
    check_value(plain, Verdict, "plain")
    check_value({**plain, "value": 0.3, "interval": [0.1, 0.5]}, Verdict, "with its effect")
    check_value({**plain, "interval": [0.1, 0.5]}, IntervalVerdict, "with its interval")
    with pytest.raises(ShapeError, match="no key 'interval'"):
        check_value(plain, IntervalVerdict, "without its interval")
    with pytest.raises(ShapeError, match="'intervals' is not one of"):
        check_value({**plain, "intervals": [0.1, 0.5]}, Verdict, "misspelt")
