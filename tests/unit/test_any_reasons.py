"""`Any` only at the boundaries, each with a reason (issue 62, item 2): every statement of
``harness``, ``tasks`` and ``classifier`` that names `typing.Any` says why, in a comment on that
statement (a signature's lines included) or just above it, or in the docstring of the function
or class it sits in, which then names ``Any``. The boundaries are JSON as read or written, third-party objects and
options passed through, and the loops over any analysis's entry or view (`AnyEntry`, `AnyView`:
aliases that say why where they are defined).

The scan reads the source with `tokenize` (the comments) and `ast` (the statements and docstrings);
an import of `Any` needs no reason. Adding ``def f(x: Any) -> None:`` with neither fails it.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("harness", "tasks", "classifier")
ANY_WORD = re.compile(r"\bAny\b")  # `Any` in a type written as a string (a cast's, a forward reference)


def commented_lines(source: str) -> set[int]:
    """The lines with a comment, and the line after each comment of a line of its own (the
    statement it explains)."""
    lines = source.splitlines()
    found: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            row = token.start[0]
            found.add(row)
            if lines[row - 1].lstrip().startswith("#"):
                found.add(row + 1)
    return found


def names_any(node: ast.AST) -> bool:
    return any(
        (isinstance(inner, ast.Name) and inner.id == "Any")
        or (isinstance(inner, ast.Attribute) and inner.attr == "Any")
        or (
            isinstance(inner, ast.Constant)
            and isinstance(inner.value, str)
            and ANY_WORD.search(inner.value) is not None
        )
        for inner in ast.walk(node)
    )


def is_text(statement: ast.stmt) -> bool:
    """A string standing alone (a docstring): prose, where "Any" is a word, not a type."""
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )


def header_parts(statement: ast.stmt) -> list[ast.AST]:
    """What a statement itself names: a definition's signature, bases and decorators, not its body."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return [statement.args, *statement.decorator_list, *([statement.returns] if statement.returns else [])]
    if isinstance(statement, ast.ClassDef):
        return [*statement.bases, *statement.keywords, *statement.decorator_list]
    if isinstance(statement, (ast.If, ast.For, ast.While, ast.With, ast.Try)):
        return [statement.test] if isinstance(statement, (ast.If, ast.While)) else []
    return [statement]


def header_span(statement: ast.stmt) -> range:
    """The lines of a statement, or of a definition's header (up to its body's first line)."""
    end = statement.end_lineno or statement.lineno
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        end = statement.body[0].lineno - 1
    elif hasattr(statement, "body") and isinstance(statement.body, list) and statement.body:
        end = statement.body[0].lineno - 1
    start = min([statement.lineno, *(decorator.lineno for decorator in getattr(statement, "decorator_list", []))])
    return range(start, max(start, end) + 1)


def unexplained(tree: ast.Module, comments: set[int]) -> list[int]:
    """The first line of each statement naming `Any` with no reason on it or in its enclosing docstrings."""
    found: list[int] = []

    def visit(body: list[ast.stmt], explained: bool) -> None:
        for statement in body:
            if isinstance(statement, (ast.Import, ast.ImportFrom)) or is_text(statement):
                continue
            docstring = (
                ast.get_docstring(statement)
                if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                else None
            )
            here = explained or bool(docstring and "Any" in docstring)
            span = header_span(statement)
            if any(names_any(part) for part in header_parts(statement)) and not here and not comments & set(span):
                found.append(statement.lineno)
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(statement, field, None)
                if isinstance(inner, list):
                    visit([item for item in inner if isinstance(item, ast.stmt)], here)
            for handler in getattr(statement, "handlers", []):
                visit(handler.body, here)

    visit(tree.body, False)
    return found


def every_unexplained_any() -> list[str]:
    lines = []
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            source = path.read_text()
            for line in unexplained(ast.parse(source), commented_lines(source)):
                lines.append(f"{path.relative_to(ROOT)}:{line}: {source.splitlines()[line - 1].strip()}")
    return lines


def test_every_any_in_the_package_says_why() -> None:
    left = every_unexplained_any()
    assert not left, "`Any` without a reason on its statement or in its docstring:\n" + "\n".join(left)


def test_the_scan_finds_a_bare_any_and_accepts_a_reason() -> None:
    """The scan can fail: a bare `Any` is found in a signature, a body and an assignment; a comment on
    the statement, or a docstring naming Any, explains it."""
    bare = "def f(x: Any) -> None:\n    pass\n\ny: Any = 1\n\ndef g() -> None:\n    z: list[Any] = []  \n"
    assert unexplained(ast.parse(bare), commented_lines(bare)) == [1, 4, 7]
    quoted = '"""Any word in prose."""\nz = cast("Entry[Any]", y)\n'
    assert unexplained(ast.parse(quoted), commented_lines(quoted)) == [2]
    apart = "# a reason two lines above is not this statement's\n\nx: Any = 1\n"
    assert unexplained(ast.parse(apart), commented_lines(apart)) == [3]
    explained = (
        "def f(\n    x: Any,  # JSON of any shape\n) -> None:\n    pass\n\n"
        'def g() -> None:\n    """Any: a third-party object."""\n    z: list[Any] = []\n\n'
        "# JSON as read\ny: dict[str, Any] = {}\n"
    )
    assert unexplained(ast.parse(explained), commented_lines(explained)) == []
