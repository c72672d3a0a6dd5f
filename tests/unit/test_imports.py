"""The import structure: no cycles between modules or packages, no imports hidden in functions.

The graph is read from the source with `ast`, so the test fails on a cycle before Python's
partial-initialisation rules would hide it. Layers, bottom up: ``tasks`` (data), then
``classifier`` (the pattern classifier), then ``harness``; a package never imports one above
it. Inside ``harness`` the folders are layered too (`HARNESS_LAYERS`), so that what reads
stored results (``results``, ``views``, ``present``) never needs torch or a model.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("tasks", "classifier", "harness")
LAYER = {package: index for index, package in enumerate(PACKAGES)}
CHECKED = (*PACKAGES, "benchmarks")
# Bottom up; a module may import its own layer and those below. The configuration layer imports no torch.
CONFIGURATION = (
    "harness.config",
    "harness.options",
    "harness.recipes",
    "harness.corpus_lookup",
    "harness.config_files",
    "harness.registry",
    "harness.arguments",
)
HARNESS_LAYERS = (
    CONFIGURATION,
    ("harness.results",),
    ("harness.views",),
    ("harness.present",),
    ("harness.inputs",),
    ("harness.model",),
    ("harness.analyses",),
    ("harness.run",),
    ("harness.study",),
    ("harness.commands", "harness.cli", "harness.__main__", "harness"),
)
TORCH_FREE = (
    *CONFIGURATION,
    "harness.results",
    "harness.views",
    "harness.present",
    "harness.commands.stored",
    "harness.commands.data",
    "harness.cli",
)


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache  # parsed once for every test here (each parse of the package takes about a second); no test changes a tree
def project_modules() -> dict[str, ast.Module]:
    return {
        module_name(path): ast.parse(path.read_text(), str(path))
        for folder in CHECKED
        for path in sorted((ROOT / folder).rglob("*.py"))
    }


def imported(node: ast.Import | ast.ImportFrom, modules: dict[str, ast.Module]) -> list[str]:
    """Project modules named by an import statement (``from a.b import c`` names a.b.c if it is a module)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
    return [name for name in names if name in modules]


def top_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Imports at module level, including inside top-level ``try``/``if`` blocks."""
    found = []
    stack: list[ast.stmt] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif isinstance(node, (ast.Try, ast.If)):
            stack.extend(
                [
                    *node.body,
                    *node.orelse,
                    *getattr(node, "finalbody", []),
                    *(statement for handler in getattr(node, "handlers", []) for statement in handler.body),
                ]
            )
    return found


def graph(modules: dict[str, ast.Module]) -> dict[str, set[str]]:
    return {
        name: {target for node in top_level_imports(tree) for target in imported(node, modules)} - {name}
        for name, tree in modules.items()
    }


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in edges.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in edges:
        if node not in index:
            visit(node)
    return found


def test_no_module_imports_itself_through_others():
    assert cycles(graph(project_modules())) == []


def test_packages_only_import_layers_below_them():
    upward = sorted(
        f"{source} -> {target}"
        for source, targets in graph(project_modules()).items()
        for target in targets
        if source.split(".")[0] in LAYER and LAYER[target.split(".")[0]] > LAYER[source.split(".")[0]]
    )
    assert upward == []


def harness_layer(module: str) -> int:
    for index, prefixes in enumerate(HARNESS_LAYERS):
        if any(module == prefix or module.startswith(prefix + ".") for prefix in prefixes):
            return index
    raise AssertionError(f"{module} is in no layer of HARNESS_LAYERS: add its folder")


def test_harness_folders_only_import_layers_below_them():
    edges = graph(project_modules())
    upward = sorted(
        f"{source} -> {target}"
        for source, targets in edges.items()
        if source.startswith("harness")
        for target in targets
        if target.startswith("harness") and harness_layer(target) > harness_layer(source)
    )
    assert upward == []


def test_what_reads_stored_results_loads_no_torch():
    """Every module reachable from the torch-free layers is itself torch-free: none imports
    torch, transformers or a module of the layers that do."""
    modules = project_modules()
    edges = graph(modules)
    reached, stack = set(), [name for name in modules if name.startswith(TORCH_FREE)]
    while stack:
        name = stack.pop()
        if name not in reached:
            reached.add(name)
            stack.extend(edges[name])
    heavy = sorted(
        f"{name} imports {node.module if isinstance(node, ast.ImportFrom) else alias.name}"
        for name in reached
        for node in top_level_imports(modules[name])
        for alias in node.names
        if (node.module if isinstance(node, ast.ImportFrom) else alias.name).split(".")[0]
        in ("torch", "transformers", "accelerate", "datasets", "mlflow", "sklearn")
    )
    assert heavy == []


def test_no_import_inside_a_function_or_class():
    hidden = []
    for name, tree in project_modules().items():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                hidden += [
                    f"{name}:{inner.lineno}"
                    for inner in ast.walk(node)
                    if isinstance(inner, (ast.Import, ast.ImportFrom))
                ]
    assert hidden == []


def test_the_checker_sees_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
