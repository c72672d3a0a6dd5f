"""No metric name is parsed (issue 62, item 3): a metric is a `harness.views.metrics.Metric` record,
and every name is derived from its fields in one place (`Metric.name`); code that needs a metric's
checkpoint, layer or pre-trained counterpart reads or builds the record, never edits the name.

The scan reads ``harness``, ``tasks`` and ``classifier`` with `ast` and lists the calls that take a
name apart or rewrite it: a string method that splits, replaces or tests a prefix or suffix
(`PARSING`), or a slice from a fixed position, on an expression that names a metric (an identifier
or key with ``metric`` or ``statistic`` in it: ``main_metric``, ``comparison["main_metric"]``,
``metric.statistic``), or with a checkpoint's name or a metric-name fragment among its arguments
(``name.replace(FINETUNED, PRETRAINED)``, ``name.startswith("seconds_")``); and a regular expression
or a substring test applied to a metric's name or a result's key (``LEVEL.sub("", key)``,
``"per_layer" in key``). The trajectory's series, the study's timings and its main score were such
calls and are records now (tests/unit/views/test_trajectory.py checks the records' names); the
evaluation builds its stored score keys from a split and a metric (`harness.views.evaluation.score_key`),
its headline's scores from the splits and metrics scored, and a study keeps each task's main score
as its split and metric, which the dev table names; the trajectory's label takes the main score's
split and metric; the exported tables name the result keys that say their level as each view
declares (`harness.views.base.View.per_head_keys`). None is left.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("harness", "tasks", "classifier")
PARSING = {"split", "rsplit", "replace", "startswith", "endswith", "removeprefix", "removesuffix", "partition"}
FRAGMENTS = (
    "FINETUNED",
    "PRETRAINED",
    "COSINE_LAYER",
    "seconds_",
    "_layer_",
    "_finetuned",
    "_pretrained",
)
METRIC_WORDS = ("metric", "statistic")  # what an expression holding a metric's name is called
KEY_WORDS = (*METRIC_WORDS, "key")  # and one holding a result's key
REGEX = {"sub", "subn", "match", "search", "fullmatch", "findall", "finditer", "split"}


def names(expression: ast.expr, words: tuple[str, ...], held: frozenset[str] = frozenset()) -> bool:
    """Whether ``expression`` is called after one of ``words``, or reads a variable of ``held``."""
    read = {node.id for node in ast.walk(expression) if isinstance(node, ast.Name)}
    return any(word in ast.unparse(expression).lower() for word in words) or bool(read & held)


def holding_metric_names(tree: ast.AST) -> frozenset[str]:
    """The variables that hold a metric's name read under another name (``stem = entry["main_metric"]``,
    ``stem, metrics = entry["main_metric"], entry["metrics"]``): assigned a variable, attribute or key
    named after a metric, not what a call makes of one."""
    pairs = [
        pair
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        for target in node.targets
        for pair in (
            zip(target.elts, node.value.elts)
            if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple)
            else [(target, node.value)]
        )
    ]
    return frozenset(
        target.id
        for target, value in pairs
        if isinstance(target, ast.Name)
        and isinstance(value, (ast.Name, ast.Attribute, ast.Subscript))
        and names(value, METRIC_WORDS)
    )


def is_regex(function: ast.expr) -> bool:
    """Whether ``function`` is a regular expression's: ``re.sub`` or a compiled one's (``LEVEL.sub``)."""
    if not isinstance(function, ast.Attribute) or function.attr not in REGEX:
        return False
    owner = function.value
    return isinstance(owner, ast.Name) and (owner.id == "re" or owner.id.isupper())


def parses(node: ast.AST, held: frozenset[str] = frozenset()) -> bool:
    """Whether ``node`` takes a metric's name or a result's key apart or rewrites it (the rule above);
    ``held``: the variables that hold a metric's name under another name (`holding_metric_names`)."""
    if isinstance(node, ast.Call) and is_regex(node.func):
        return any(names(argument, KEY_WORDS, held) for argument in node.args)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in PARSING:
        arguments = " ".join(ast.unparse(argument) for argument in node.args)
        return names(node.func.value, METRIC_WORDS, held) or any(fragment in arguments for fragment in FRAGMENTS)
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
        fixed = isinstance(node.slice.lower, ast.Constant) and node.slice.lower.value
        return bool(fixed) and names(node.value, METRIC_WORDS, held)
    if isinstance(node, ast.Compare) and isinstance(node.ops[0], (ast.In, ast.NotIn)):
        within = node.comparators[0]  # a string within a name (a name within a collection is no parsing)
        is_text = isinstance(node.left, ast.Constant) and isinstance(node.left.value, str)
        return is_text and isinstance(within, ast.Name) and names(within, KEY_WORDS, held)
    return False


def flagged(source: str, path: str = "<source>") -> list[str]:
    """The calls of ``source`` that parse a metric's name or a result's key, ``path:line: call``."""
    tree = ast.parse(source, path)
    held = holding_metric_names(tree)
    return [f"{path}:{node.lineno}: {ast.unparse(node)}" for node in ast.walk(tree) if parses(node, held)]


def parsed_names() -> dict[str, list[str]]:
    """``{path: the calls that parse a metric name}`` over the scanned packages."""
    found: dict[str, list[str]] = {}
    for folder in SCANNED:
        for file in sorted((ROOT / folder).rglob("*.py")):
            path = str(file.relative_to(ROOT))
            calls = flagged(file.read_text(), path)
            if calls:
                found[path] = calls
    return found


def test_the_rule_finds_each_kind_of_parsing() -> None:
    source = (
        "a = name.replace(FINETUNED, PRETRAINED)\n"
        'b = main_metric.split("/")\n'
        'c = name.startswith("seconds_")\n'
        "d = metric_name[13:]\n"
        'stem, metrics = entry["main_metric"], entry["metrics"]\n'
        'e = stem.removeprefix("dev_")\n'
        'f = metric.statistic.endswith(f"_{LOSS}")\n'
        'g = statistic.startswith((ABOVE_MAJORITY, "above_"))\n'
        'h = LEVEL_IN_KEY.sub("", key)\n'
        'i = re.match(r"per_(head|layer)", key)\n'
        'j = "per_layer" in key\n'
        'k = path.split("/")\n'
        "m = WORD.findall(text)\n"
        'n = "f1" in task.metrics\n'
        'o = split.removeprefix("dev_")\n'
    )
    assert [call.split(": ", 1)[1] for call in flagged(source)] == [
        "name.replace(FINETUNED, PRETRAINED)",
        "main_metric.split('/')",
        "name.startswith('seconds_')",
        "metric_name[13:]",
        "stem.removeprefix('dev_')",
        "metric.statistic.endswith(f'_{LOSS}')",
        "statistic.startswith((ABOVE_MAJORITY, 'above_'))",
        "LEVEL_IN_KEY.sub('', key)",
        "re.match('per_(head|layer)', key)",
        "'per_layer' in key",
    ]


def test_no_metric_name_is_parsed() -> None:
    found = parsed_names()
    assert not found, "metric names parsed:\n" + "\n".join(call for calls in found.values() for call in calls)


if __name__ == "__main__":  # the whole list: python -m tests.unit.test_metric_names_parsed
    listed = [call for calls in parsed_names().values() for call in calls]
    print("\n".join(listed))
    print(f"{len(listed)} metric names parsed")
