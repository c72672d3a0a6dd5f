"""No metric name is parsed (issue 62, item 3): a metric is a `harness.views.metrics.Metric` record,
and every name is derived from its fields in one place (`Metric.name`); code that needs a metric's
checkpoint, layer or pre-trained counterpart reads or builds the record, never edits the name.

The scan reads ``harness``, ``tasks`` and ``classifier`` with `ast` and lists the calls that take a
name apart or rewrite it: a string method that splits, replaces or tests a prefix or suffix
(`PARSING`), or a slice from a fixed position, on an expression that names a metric (an identifier
or key with ``metric`` in it: ``main_metric``, ``comparison["main_metric"]``), or with a
checkpoint's name or a metric-name fragment among its arguments (``name.replace(FINETUNED,
PRETRAINED)``, ``name.startswith("seconds_")``). The trajectory's series, the study's timings and
its main score were such calls and are records now (tests/unit/views/test_trajectory.py checks the
records' names); the evaluation builds its stored score keys from a split and a metric
(`harness.views.evaluation.score_key`), and the trajectory's label takes the main score's split and
metric. None is left.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("harness", "tasks", "classifier")
PARSING = {"split", "rsplit", "replace", "startswith", "endswith", "removeprefix", "removesuffix", "partition"}
FRAGMENTS = ("FINETUNED", "PRETRAINED", "COSINE_LAYER", "seconds_", "_layer_", "_finetuned", "_pretrained")


def names_a_metric(expression: ast.expr) -> bool:
    return "metric" in ast.unparse(expression).lower()


def parses(node: ast.AST) -> bool:
    """Whether ``node`` takes a metric's name apart or rewrites it (the rule above)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in PARSING:
        arguments = " ".join(ast.unparse(argument) for argument in node.args)
        return names_a_metric(node.func.value) or any(fragment in arguments for fragment in FRAGMENTS)
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
        fixed = isinstance(node.slice.lower, ast.Constant) and node.slice.lower.value
        return bool(fixed) and names_a_metric(node.value)
    return False


def parsed_names() -> dict[str, list[str]]:
    """``{path: the calls that parse a metric name}`` over the scanned packages."""
    found: dict[str, list[str]] = {}
    for folder in SCANNED:
        for file in sorted((ROOT / folder).rglob("*.py")):
            path = str(file.relative_to(ROOT))
            for node in ast.walk(ast.parse(file.read_text(), path)):
                if parses(node):
                    found.setdefault(path, []).append(f"{path}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_the_rule_finds_each_kind_of_parsing() -> None:
    source = (
        "a = name.replace(FINETUNED, PRETRAINED)\n"
        'b = main_metric.split("/")\n'
        'c = name.startswith("seconds_")\n'
        "d = metric_name[13:]\n"
        'e = path.split("/")\n'
    )
    flagged = [node for node in ast.walk(ast.parse(source)) if parses(node)]
    assert len(flagged) == 4


def test_no_metric_name_is_parsed() -> None:
    found = parsed_names()
    assert not found, "metric names parsed:\n" + "\n".join(call for calls in found.values() for call in calls)


if __name__ == "__main__":  # the whole list: python -m tests.unit.test_metric_names_parsed
    listed = [call for calls in parsed_names().values() for call in calls]
    print("\n".join(listed))
    print(f"{len(listed)} metric names parsed")
