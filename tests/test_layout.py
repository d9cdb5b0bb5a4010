"""The house size limits (docs/architecture.md): no module over 400 lines, no function over 60.

ruff's statement and complexity limits (pyproject.toml) keep functions simple; this keeps them
short, counting the lines of a function from its signature to its end, its docstring left out.
"""

import ast
import re
from pathlib import Path

import yaml

from attnkit.families import FAMILIES
from attnkit.viz.attention_view import SUMMARY_KINDS, TRANSFORMER_KINDS

SRC = Path(__file__).resolve().parents[1] / "src" / "attnkit"
MAX_MODULE, MAX_FUNCTION = 400, 60


def _modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def _core(path: Path) -> bool:
    """Outside every family's own package (`families/__init__.py`, the table, counts as one)."""
    rel = path.relative_to(SRC)
    return not (rel.parts[0] == "families" and (len(rel.parts) > 2 or rel.name == "__init__.py"))


def family_words() -> set[str]:
    """What names a family, read from the family table: its name, the last part of its pages' and
    endpoints' paths (`/classify`, `/v1/translate`) and its metrics (`RunBase.METRICS`)."""
    words = set(FAMILIES)
    for family in FAMILIES.values():
        words |= {path.rsplit("/", 1)[-1] for path in (*family.api.pages, *(e.path for e in family.api.endpoints))} - {""}
        words |= {metric.key for metric in family.run_schema.METRICS}
    return words


def named_families(text: str, words: set[str]) -> list[str]:
    """The family words in `text`: whole words, case-insensitive (`JSON.parse`, a method, is no name),
    or capitalised inside a camel-case name (`renderTranslation`)."""
    whole = r"(?<![\w.])(" + "|".join(map(re.escape, words)) + r")(?!\w)"
    camel = r"(?<=[a-z0-9_])(" + "|".join(re.escape(w.capitalize()) for w in words) + r")(?![a-z])"
    return sorted({m.group(0).lower() for pattern, flags in ((whole, re.I), (camel, 0)) for m in re.finditer(pattern, text, flags)})


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


def test_core_templates_and_scripts_name_no_family():
    """The core's pages, report template, scripts and styles draw any family's records the same way:
    a family adds its view and its renderer from its own package (docs/architecture.md)."""
    words = family_words()
    found = [f"{p.relative_to(SRC)}: {', '.join(hits)}" for p in sorted(SRC.rglob("*"))
             if p.suffix in (".html", ".js", ".css") and _core(p) and (hits := named_families(p.read_text(encoding="utf-8"), words))]  # fmt: skip
    assert not found, found


def _shared_sections(tree: dict) -> str:
    """The keys and values of a config's shared sections (`train`, `decode`), as one text."""
    return yaml.safe_dump({key: tree.get(key) for key in ("train", "decode")})


def test_presets_shared_sections_name_no_family():
    """A preset's `train` and `decode` sections hold no family's metric or name: a family declares its
    early-stopping metric (`RunBase.EARLY_STOPPING`), and the shared keys have neutral names."""
    words = family_words()
    presets = [p for p in sorted((SRC / "presets").rglob("*.yaml")) if "train" in (yaml.safe_load(p.read_text(encoding="utf-8")) or {})]
    assert len(presets) > 10
    found = {str(p.relative_to(SRC)): hits for p in presets if (hits := named_families(_shared_sections(yaml.safe_load(p.read_text(encoding="utf-8"))), words))}
    assert not found, found


def test_family_words_catch_a_planted_name():
    """The searches above can fail: each family's words are found in a page, a script and a preset."""
    words = family_words()
    assert {"translation", "classification", "parsing", "captioning", "translate", "classify", "bleu", "f1"} <= words
    assert named_families('<nav><a href="/classify">Classify</a></nav>', words) == ["classify"]
    assert named_families("if (record.label) AttnView.renderCaption(main); JSON.parse(text)", words) == ["caption"]
    assert named_families("AttnView.render(main, record); JSON.parse(text); parser.parseArgs()", words) == []
    assert named_families("AttnView.render(main, record, 'parsing')", words) == ["parsing"]
    assert named_families(_shared_sections({"train": {"eval_decode": True, "early_stopping": "bleu4"}}), words) == ["bleu4"]


def _family_kinds() -> set[str]:
    """The attention kinds families declare beyond the core's (`viz.attention_view`)."""
    core = {k.name for k in (*TRANSFORMER_KINDS, *SUMMARY_KINDS)}
    own = {k.name for family in FAMILIES.values() for k in family.attention_kinds} - core
    assert {"hops", "hops2"} <= own
    return own


def _strings(path: Path) -> list[str]:
    """The string literals of a Python module (docstrings left out), or the quoted strings and object keys of a page,
    script or style."""
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".py":
        return [a or b or c for a, b, c in re.findall(r"\"([^\"\n]*)\"|'([^'\n]*)'|\b(\w+)\s*:(?!:)", text)]
    tree = ast.parse(text)
    docs = {id(n.body[0].value) for n in ast.walk(tree) if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}  # fmt: skip
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs]


def _names_a_kind(strings: list[str], kinds: set[str]) -> list[str]:
    return [t for t in strings if t in kinds or t.split("/")[0] in kinds]


def test_the_core_keeps_no_list_of_a_familys_attention_kinds():
    """The pages, the serializer, the sources and the commands draw any kind the same way (an unknown one under its
    name): a kind a family makes is named in its own package only. (`viz/views.py`'s "hops" is a picture, Lin et
    al.'s Fig. 2, that draws any map, not a kind.)"""
    kinds = _family_kinds()
    assert _names_a_kind(["encoder", "hops2", "hops/layer1", "shops"], kinds) == ["hops2", "hops/layer1"]
    files = [p for p in sorted(SRC.rglob("*")) if p.suffix in (".py", ".js", ".html", ".css") and _core(p) and p != SRC / "viz" / "views.py"]
    found = [f"{p.relative_to(SRC)}: {t}" for p in files for t in _names_a_kind(_strings(p), kinds)]
    assert not found, found


def test_the_core_imports_no_family_package():
    """Core modules reach a family only through the table (`attnkit.families`), never its package."""
    pattern = re.compile(r"^\s*(?:from|import) attnkit\.families\.(" + "|".join(FAMILIES) + r")\b", re.M)
    found = [str(p.relative_to(SRC)) for p in _modules() if _core(p) and pattern.search(p.read_text(encoding="utf-8"))]
    assert not found, found


def test_the_chart_parser_is_a_subpackage():
    flat = sorted(p.name for p in (SRC / "families" / "parse").glob("chart*.py"))
    assert not flat, f"families/parse/chart/ holds the chart parser, not {flat}"


def test_no_type_checking_import_cycle():
    """A TYPE_CHECKING import (which import-linter leaves out) of a module that imports this one back."""
    found = []
    for path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        name = ".".join(("attnkit", *path.relative_to(SRC).with_suffix("").parts)).removesuffix(".__init__")
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                for imp in (n for n in ast.walk(node) if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("attnkit.")):
                    target = SRC.joinpath(*imp.module.split(".")[1:])
                    target = target.with_suffix(".py") if target.with_suffix(".py").exists() else target / "__init__.py"
                    if target.exists() and re.search(rf"^\s*from {re.escape(name)} import", target.read_text(encoding="utf-8"), re.M):
                        found.append(f"{name} <-> {imp.module}")
    assert not found, found
