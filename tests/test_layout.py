"""The house size limits (docs/architecture.md): no module over 400 lines, no function over 60.

ruff's statement and complexity limits (pyproject.toml) keep functions simple; this keeps them
short, counting the lines of a function from its signature to its end, its docstring left out.
"""

import argparse
import ast
import re
from pathlib import Path

import yaml

from attnkit.cli import GROUPS, build_parser
from attnkit.config.schema import Decode
from attnkit.families import FAMILIES
from attnkit.families import presets as PRESETS
from attnkit.serve.schemas import ModelInfo
from attnkit.viz.attention_view import SUMMARY_KINDS, TRANSFORMER_KINDS

SRC = Path(__file__).resolve().parents[1] / "src" / "attnkit"
CONFIGS = SRC.parents[1] / "configs"
TESTS = SRC.parents[1] / "tests"
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


def test_core_styles_are_for_core_pages():
    """Every class the core's stylesheets style is drawn by a core script or template: the styles of a
    family's card (its class probabilities, tree, image panels) are in the family's `Api.renderer_style`."""
    core = [p for p in sorted(SRC.rglob("*")) if p.suffix in (".html", ".js", ".py") and _core(p)]
    drawn = "\n".join(p.read_text(encoding="utf-8") for p in core)
    found = [f"{p.relative_to(SRC)}: .{name}" for p in sorted(SRC.rglob("*.css")) if _core(p)
             for name in sorted(set(re.findall(r"\.([a-zA-Z][\w-]*)", re.sub(r"/\*.*?\*/", "", p.read_text(encoding="utf-8"), flags=re.S))))
             if not re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", drawn)]  # fmt: skip
    assert not found, f"styles only a family's pages use belong in its renderer_style: {found}"


def _shared_sections(tree: dict) -> str:
    """The keys and values of a config's shared sections (`train`, `decode`), as one text."""
    return yaml.safe_dump({key: tree.get(key) for key in ("train", "decode")})


def test_presets_shared_sections_name_no_family():
    """A preset's `train` and `decode` sections hold no family's metric or name: a family declares its
    early-stopping metric (`RunBase.EARLY_STOPPING`), and the shared keys have neutral names."""
    words = family_words()
    presets = [p for p in PRESETS().values() if "train" in (yaml.safe_load(p.read_text(encoding="utf-8")) or {})]
    assert len(presets) > 10
    found = {str(p.relative_to(SRC)): hits for p in presets if (hits := named_families(_shared_sections(yaml.safe_load(p.read_text(encoding="utf-8"))), words))}
    assert not found, found


def test_presets_live_in_their_families():
    """Every YAML file in the package is a family's preset (`families/<family>/presets/`, sweeps in
    `presets/sweeps/`), and the family table finds each one: none in the core."""
    files = sorted(SRC.rglob("*.y*ml"))
    outside = [str(p.relative_to(SRC)) for p in files if not _preset_place(p.relative_to(SRC).parts)]
    assert not outside, f"presets belong to a family (families/<family>/presets/): {outside}"
    assert sorted(PRESETS().values()) == files


def test_configs_links_every_preset():
    """`configs/NAME.yaml` (the repository's short path, docs/training.md) is a link to each preset, and nothing else."""
    links = {p.relative_to(CONFIGS).with_suffix("").as_posix(): p for p in CONFIGS.rglob("*.yaml")}
    assert all(p.is_symlink() for p in links.values()), "configs/ holds links to the families' presets, not files"
    assert {name: p.resolve() for name, p in links.items()} == {name: p.resolve() for name, p in PRESETS().items()}


def _preset_place(parts: tuple[str, ...]) -> bool:
    """`families/<family>/presets/NAME.yaml` or `families/<family>/presets/sweeps/NAME.yaml`, of a family in the table."""
    head, tail = parts[:3], parts[3:]
    family_dirs = {family.presets.parent.name for family in FAMILIES.values() if family.presets}
    return (
        head[:1] == ("families",)
        and len(head) == 3
        and head[1] in family_dirs
        and head[2] == "presets"
        and len(tail) in (1, 2)
        and tail[:-1] in ((), ("sweeps",))
    )


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
    flat = sorted(p.name for p in (SRC / "families" / "parsing").glob("chart*.py"))
    assert not flat, f"families/parsing/chart/ holds the chart parser, not {flat}"


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


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


def test_data_tools_are_under_data_only():
    """A family's data tools are `attnkit data TOOL`, never a top-level verb."""
    root = build_parser()
    top, data = _subcommands(root), _subcommands(_subcommands(root)["data"])
    assert "caption-shapes" in data and data.keys() >= {"fetch", "check"}
    both = sorted(set(top) & set(data))
    assert not both, f"data tools that are also top-level verbs (put them under `attnkit data` only): {both}"


def test_core_verbs_name_no_family():
    """The verbs the core adds (`attnkit.commands`) are generic: no family's name, page, metric or engine;
    a family's own verbs (`translate`, `parse`) come from its package (`Family.commands`)."""
    words = family_words() | {engine for family in FAMILIES.values() for engine in family.engines}
    found = []
    for path, parser in _walk(build_parser()):
        func = parser.get_default("func")
        if parser.get_default("moved_to") or (func is not None and func.__module__.startswith("attnkit.families.")) or path[-1] in FAMILIES:
            continue  # a family's verb or data tool, the hidden old spelling of one, or one per family from the table (`init NAME`)
        if hits := named_families(" ".join(path), words):
            found.append(f"attnkit {' '.join(path)}: {', '.join(hits)}")
    grouped = " ".join(name for names in GROUPS.values() for name in names)  # --help's groups: a family's verb names its own
    assert not found and not named_families(grouped, words), (found, named_families(grouped, words))
    assert named_families("caption-shapes", words) == ["caption"]


def _walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield (*path, name), child
                yield from _walk(child, (*path, name))


def test_serve_schemas_name_no_family():
    """The shared bodies of `attnkit serve` (`serve/schemas.py`) hold no family's decoding settings or
    engines: what a family adds to `GET /v1/models` comes from `Family.info`."""
    words = family_words() | {engine for family in FAMILIES.values() for engine in family.engines}
    text = (SRC / "serve" / "schemas.py").read_text(encoding="utf-8")
    assert not named_families(text, words)
    decoding = set(ModelInfo.model_fields) & {*Decode.model_fields, "engine"}
    assert not decoding, f"GET /v1/models: {sorted(decoding)} are a family's (Family.info)"


PLUMBING = ("attnkit", "attnkit.cli", "attnkit.errors", "attnkit.families", "attnkit.families.protocol")  # and attnkit.config.*


def _attnkit_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    names |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    return {name for name in names if name.split(".")[0] == "attnkit"}


def family_only(imports: set[str]) -> str | None:
    """The family a test file is about when it reaches only that family's package and the plumbing
    (the CLI, errors, the family table, configs): None when it also tests a core module."""
    own = {name for name in imports if name.startswith("attnkit.families.") and name.split(".")[2] in _family_dirs()}
    families = {name.split(".")[2] for name in own}
    plumbing = all(name in PLUMBING or name.startswith("attnkit.config.") for name in imports - own)
    return families.pop() if len(families) == 1 and plumbing else None


def _family_dirs() -> set[str]:
    return {family.presets.parent.name for family in FAMILIES.values() if family.presets}


def test_family_only_tests_live_with_their_family():
    """A test file that tests one family's package alone belongs in tests/families/<family>/ (end-to-end
    runs of the CLI, tests/e2e/, use a family as users do and stay there)."""
    found = {}
    for path in sorted(TESTS.rglob("test_*.py")):
        rel = path.relative_to(TESTS)
        if rel.parts[0] in ("families", "e2e"):
            continue
        if family := family_only(_attnkit_imports(path)):
            found[str(rel)] = f"tests/families/{family}/"
    assert not found, found
    assert family_only({"attnkit.cli", "attnkit.families.translation.translate", "attnkit.config.schema"}) == "translation"
    assert family_only({"attnkit.families.translation.translate", "attnkit.attention.packed"}) is None


def test_every_family_validates_with_the_shared_loop():
    """A task's `validate` runs the one validation loop (`families/validation.py`, directly or through
    `forced.validation_loss`), not a loop of its own over the held-out split."""
    found, tasks = [], 0
    for path in _modules():
        if _core(path):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                for method in (m for m in node.body if isinstance(m, ast.FunctionDef) and m.name == "validate"):
                    tasks += 1
                    calls = {c.func.id if isinstance(c.func, ast.Name) else getattr(c.func, "attr", "") for c in ast.walk(method) if isinstance(c, ast.Call)}
                    if not calls & {"validation_sums", "validation_loss"}:
                        found.append(f"{path.relative_to(SRC)}: {node.name}.validate")
    assert tasks >= 5 and not found, found


def test_each_familys_package_is_named_as_in_the_table():
    """`attnkit/families/<name>/` holds the family `FAMILIES["<name>"]`, named `<name>` (the CLI's word for it)."""
    import importlib

    packages = sorted(p.parent.name for p in (SRC / "families").glob("*/__init__.py"))
    assert packages == sorted(FAMILIES)
    for name in packages:
        family = importlib.import_module(f"attnkit.families.{name}").FAMILY
        assert family.name == name and FAMILIES[name] is family


def public_classes(paths: list[Path]) -> dict[str, list[str]]:
    """Each public class name (module level, no leading underscore) -> the modules that define one."""
    found: dict[str, list[str]] = {}
    for path in paths:
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                found.setdefault(node.name, []).append(str(path.relative_to(SRC)))
    return found


def test_no_two_public_classes_share_a_name():
    """One meaning per name (docs/architecture.md, "Glossary"): two unrelated classes are never named alike."""
    twice = {name: where for name, where in public_classes(_modules()).items() if len(where) > 1}
    assert not twice, twice
    planted = SRC / "viz" / "attention_view.py"
    assert public_classes([planted, planted])["ExplainedInput"] == ["viz/attention_view.py"] * 2  # the check sees a second one
