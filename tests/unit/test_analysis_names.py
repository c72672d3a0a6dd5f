"""No analysis is named outside its own files (issue 62, item 3).

What shared code needs from an analysis is a method or class attribute of its registered
classes, so a new analysis is two files and shared code never learns a name. This test reads
``harness``, ``tasks`` and ``classifier`` with `ast` and lists every string constant that is a
registered analysis's name (`harness.analyses.ANALYSES`) outside that analysis's files.

The rule, decided here:

- **An analysis's files**: the modules of its registered `Analysis` and `View` classes, taken at
  their member of ``harness.analyses`` / ``harness.views`` (``harness.views.ablation`` is the
  file ``views/ablation.py`` or, once a package, the folder ``views/ablation/``), and the
  helper modules beside them named ``<module>_*.py`` that no registered class lives in
  (``analyses/ablation_masks.py`` and ``ablation_statistics.py`` are the ablation's;
  ``cosine_padded.py`` is its own analysis's, not the cosine's).
- **Not a literal in code**: docstrings (the first statement of a module, class or function).
- **Another registry's name**: the sources (`harness.inputs.sources.SOURCES`) share three
  names with analyses (``syntax``, ``coreference``, ``ablation``). A source's ``name = ...``
  in its own class and an analysis's ``source = ...`` class attribute name a source; anything
  else that compares or lists those names is flagged (a switch over source names, as
  ``harness/present/redraw.py`` had, is the leak it looks like).
- **Ordinary words** (`ORDINARY`): a few names are also what a result's key says (``examples``:
  a count or list of inputs; ``cosine``: the statistic; ``evaluation``: a classifier's record;
  ``gradients``: what an analysis needs). Those are flagged only where they name an
  analysis: compared (``==``, ``in``), listed in a tuple, list or set, or used as the key of a
  container of analyses' entries (an expression mentioning ``analyses``, ``entries``, ``units``,
  ``related``, ``ANALYSES`` or ``VIEWS``: ``entries["cosine"]``, ``point["units"]["cosine"]``).
  Every other name is flagged wherever it appears as a literal.

Naming another analysis through its class (``CosineView.name``) is an import the layering
test (tests/unit/test_imports.py) sees; a literal is not, which is why literals are what count.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from harness.analyses import ANALYSES
from harness.inputs.sources import SOURCES

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("harness", "tasks", "classifier")
ORDINARY = {
    "examples": "a count or list of inputs",
    "cosine": "the statistic, a key of a result",
    "evaluation": "a classifier's evaluation record",
    "gradients": "what an analysis needs (harness.analyses.base.GRADIENTS)",
}
ANALYSIS_CONTAINERS = ("analyses", "entries", "units", "related", "ANALYSES", "VIEWS")
REGISTRY_FOLDERS = ("harness.analyses", "harness.views")


@dataclass(frozen=True, order=True)
class Use:
    path: str
    line: int
    name: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.name!r}"


def owned_paths() -> dict[str, set[str]]:
    """``{path relative to the root: the analyses it belongs to}``: files and folders (ending in /)."""
    owners: dict[str, set[str]] = {}
    class_modules = {cls.__module__ for analysis in ANALYSES.values() for cls in (analysis, analysis.view)}
    stems = {tuple(module.split(".")[:3]) for module in class_modules}
    for name, analysis in ANALYSES.items():
        for cls in (analysis, analysis.view):
            parts = cls.__module__.split(".")
            folder, member = ".".join(parts[:2]), parts[2]
            assert folder in REGISTRY_FOLDERS, f"{cls.__name__} lives outside harness.analyses and harness.views"
            base = ROOT / folder.replace(".", "/")
            owners.setdefault(f"{folder.replace('.', '/')}/{member}.py", set()).add(name)
            owners.setdefault(f"{folder.replace('.', '/')}/{member}/", set()).add(name)
            for helper in base.glob(f"{member}_*.py"):
                if (*parts[:2], helper.stem) not in stems:
                    owners.setdefault(str(helper.relative_to(ROOT)), set()).add(name)
    return owners


def owners_of(path: str, owners: dict[str, set[str]]) -> set[str]:
    return set().union(
        *(names for owned, names in owners.items() if path == owned or path.startswith(owned) and owned.endswith("/"))
    )


def docstrings(tree: ast.Module) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def parents(tree: ast.Module) -> dict[int, ast.AST]:
    return {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def names_a_source(node: ast.Constant, parent: ast.AST, path: str) -> bool:
    """``source = "syntax"`` (an analysis's class attribute), or ``name = "syntax"`` in that source's own module."""
    if node.value not in SOURCES or not isinstance(parent, ast.Assign) or len(parent.targets) != 1:
        return False
    target = parent.targets[0]
    if not isinstance(target, ast.Name):
        return False
    own_module = SOURCES[node.value].__module__.replace(".", "/") + ".py"
    return target.id == "source" or (target.id == "name" and path == own_module)


def container_word(expression: ast.expr) -> str:
    """What a container is called: its variable or attribute, the key it was read under
    (``point["units"]``, ``entry.get("related")``), the first operand of ``x or {}``."""
    if isinstance(expression, ast.Name):
        return expression.id
    if isinstance(expression, ast.Attribute):
        return expression.attr
    if isinstance(expression, ast.Subscript) and isinstance(expression.slice, ast.Constant):
        return str(expression.slice.value)
    if isinstance(expression, ast.Call) and isinstance(expression.func, ast.Attribute) and expression.args:
        first = expression.args[0]
        return str(first.value) if isinstance(first, ast.Constant) else ""
    if isinstance(expression, ast.BoolOp):
        return container_word(expression.values[0])
    return ""


def of_analyses(container: ast.expr) -> bool:
    return any(word in container_word(container) for word in ANALYSIS_CONTAINERS)


def names_an_analysis(node: ast.Constant, parent: ast.AST) -> bool:
    """Where an ordinary word is used as an analysis's name: compared, listed, or the key of a container of entries."""
    if isinstance(parent, (ast.Compare, ast.Tuple, ast.List, ast.Set)):
        return True
    if isinstance(parent, ast.Subscript) and parent.slice is node:
        return of_analyses(parent.value)
    if isinstance(parent, ast.Call) and node in parent.args and isinstance(parent.func, ast.Attribute):
        return parent.func.attr in ("get", "setdefault", "pop") and of_analyses(parent.func.value)
    return False


def analysis_names_outside() -> list[Use]:
    """Every string constant naming an analysis outside that analysis's files (the rule above)."""
    owners = owned_paths()
    found = []
    for folder in SCANNED:
        for file in sorted((ROOT / folder).rglob("*.py")):
            path = str(file.relative_to(ROOT))
            tree = ast.parse(file.read_text(), path)
            skipped, up, own = docstrings(tree), parents(tree), owners_of(path, owners)
            for node in ast.walk(tree):
                if not isinstance(node, ast.Constant) or node.value not in ANALYSES or node.value in own:
                    continue
                if id(node) in skipped:
                    continue
                parent = up[id(node)]
                if names_a_source(node, parent, path):
                    continue
                if node.value in ORDINARY and not names_an_analysis(node, parent):
                    continue
                found.append(Use(path, node.lineno, node.value))
    return sorted(found)


def test_the_rule_finds_a_name_in_each_kind_of_use() -> None:
    """The scan is not vacuous: each kind of use it must flag, it flags, in a module written here."""
    # A small module as shared code could write it, parsed as if it lay in harness/run.
    source = (
        "def f(entries, name, point):\n"
        '    a = entries["cosine"]\n'
        '    b = name == "ablation"\n'
        '    c = ("patterns", "sinks")\n'
        '    d = point["units"]["cosine"]\n'
        '    e = {"examples": 3}["examples"]\n'
    )
    tree = ast.parse(source)
    up = parents(tree)
    flagged = [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and node.value in ANALYSES
        and (node.value not in ORDINARY or names_an_analysis(node, up[id(node)]))
    ]
    assert sorted(flagged) == ["ablation", "cosine", "cosine", "patterns", "sinks"]


def test_an_analysis_owns_its_two_modules_and_its_helpers() -> None:
    owners = owned_paths()
    assert owners_of("harness/analyses/dependency.py", owners) == {"syntax"}
    assert owners_of("harness/analyses/ablation_masks.py", owners) == {"ablation"}
    assert owners_of("harness/views/cka.py", owners) == {"cka", "cka_text"}
    assert owners_of("harness/views/cosine_padded.py", owners) == {"cosine_padded"}


def test_no_analysis_is_named_outside_its_files() -> None:
    found = analysis_names_outside()
    assert not found, f"{len(found)} analysis names outside their files:\n" + "\n".join(map(str, found))


if __name__ == "__main__":  # the whole list: python -m tests.unit.test_analysis_names
    listed = analysis_names_outside()
    print("\n".join(map(str, listed)))
    print(f"{len(listed)} analysis names outside their files")
