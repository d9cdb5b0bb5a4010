"""The house size limits (docs/architecture.md): no module over 400 lines, no function over 60.

ruff's statement and complexity limits (pyproject.toml) keep functions simple; this keeps them
short, counting the lines of a function from its signature to its end, its docstring left out.
"""

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "attnkit"
MAX_MODULE, MAX_FUNCTION = 400, 60


def _modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def test_no_module_over_400_lines():
    long = {str(p.relative_to(SRC)): n for p in _modules() if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE}
    assert not long, f"modules over {MAX_MODULE} lines: {long}"


def _code_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    lines = node.end_lineno - node.lineno + 1
    first = node.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        lines -= first.end_lineno - first.lineno + 1
    return lines


def test_no_function_over_60_lines():
    long = {}
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (n := _code_lines(node)) > MAX_FUNCTION:
                long[f"{path.relative_to(SRC)}:{node.lineno} {node.name}"] = n
    assert not long, f"functions over {MAX_FUNCTION} lines: {long}"


def test_the_core_never_names_a_family():
    """Only a family's own package and the table in attnkit/families/__init__.py name families."""
    names = ('"classification"', '"translation"', "SentenceVocabs", "TranslationRun", "SentenceRun", "isinstance(loaded.vocabs")
    found = []
    for path in _modules():
        rel = path.relative_to(SRC)
        if rel.parts[0] == "families" and (len(rel.parts) > 2 or rel.name == "__init__.py"):
            continue
        text = path.read_text(encoding="utf-8")
        found += [f"{rel}: {name}" for name in names if name in text]
    assert not found, found
