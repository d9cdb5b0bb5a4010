"""Every figure from one source: what the README and the docs quote agrees with benchmarks/results/.

docs/figures.yaml lists each quoted figure with the result file and field it comes from, the machine
and the date; each count a page states in words (tour pages, model families) with the files it
counts; each list a page must hold in full (the presets); and the text that later measurements
superseded. Besides the registry:

- every figure in the README, and every figure in `attnkit doctor`'s messages, must be in the
  registry (a decimal number, or a number with a unit such as BLEU, %, GB or tokens/s);
- every repository path a page or a docstring cites in backticks (`tests/...py`) must exist.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
REGISTRY = yaml.safe_load((REPO / "docs" / "figures.yaml").read_text(encoding="utf-8"))
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
NUMBER_WORDS = {w: n for n, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen".split())}
# A figure: a decimal number, or a number followed by a unit of measurement.
FIGURE = re.compile(r"(?<![\w.,])\d[\d,]*(?:\.\d+(?![\w.])|(?=\s*(?:%|BLEU|F1|GB|MB|ms|tokens/s|sentences/s|requests/s|req/s)))")
NOT_A_FIGURE = re.compile(r"(?:Python|>=|torch|version|v)\s*$")  # "Python >= 3.10" names a version
CITED_PATH = re.compile(r"`((?:src|tests|benchmarks|configs|scripts|docs)/[\w./-]+\.(?:py|md|yaml|json|jsonl|png|txt|csv))`")


def _id(entry: dict) -> str:
    return f"{entry['page']}:{entry.get('number') or entry.get('says') or entry.get('glob')}"


def result_value(entry: dict) -> float:
    """The field `key` of the result file (the first .jsonl line whose fields equal `where`)."""
    path = REPO / entry["file"]
    if path.suffix == ".jsonl":
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        matching = [row for row in rows if all(row.get(k) == v for k, v in entry.get("where", {}).items())]
        assert matching, f"{entry['file']}: no line with {entry.get('where')}"
        value = matching[0]
    else:
        value = json.loads(path.read_text(encoding="utf-8"))
    for part in entry["key"].split("."):
        value = value[part]
    return float(value) * entry.get("scale", 1)


def find(text: str, quote: str) -> int:
    """Where `quote` starts in `text`, a line break matching any space (-1: nowhere)."""
    match = re.search(r"\s+".join(map(re.escape, quote.split())), text)
    return match.start() if match else -1


def section_of(text: str, quote: str) -> str:
    """The text from the heading above `quote` to the next heading."""
    at = find(text, quote)
    start = max(text.rfind("\n#", 0, at), 0)
    end = text.find("\n#", at)
    return text[start : end if end >= 0 else len(text)]


@pytest.mark.parametrize("entry", REGISTRY["figures"], ids=_id)
def test_a_quoted_figure_equals_its_result_file(entry):
    text = (REPO / entry["page"]).read_text(encoding="utf-8")
    assert find(text, entry["quote"]) >= 0, f"{entry['page']} no longer says {entry['quote']!r}: update docs/figures.yaml"
    assert entry["number"] in entry["quote"]
    decimals = len(entry["number"].partition(".")[2])
    found = f"{result_value(entry):,.{decimals}f}"
    shown = entry["number"] if "," in entry["number"] else found.replace(",", "")
    assert shown == entry["number"], f"{entry['page']} quotes {entry['number']}, {entry['file']} {entry['key']} says {found}"
    section = section_of(text, entry["quote"])
    for named in (entry["machine"], str(entry["date"])):
        assert find(section, named) >= 0, f"{entry['page']}: the section quoting {entry['number']} does not name {named!r}"


@pytest.mark.parametrize("entry", REGISTRY["counts"], ids=_id)
def test_a_count_in_words_equals_what_it_counts(entry):
    text = (REPO / entry["page"]).read_text(encoding="utf-8")
    assert find(text, entry["quote"]) >= 0 and entry["says"] in entry["quote"]
    counted = len(list(REPO.glob(entry["glob"])))
    assert NUMBER_WORDS[entry["says"].lower()] == counted, f"{entry['page']} says {entry['says']}; {entry['glob']} has {counted}"


@pytest.mark.parametrize("entry", REGISTRY["names"], ids=_id)
def test_a_page_names_every_one(entry):
    text = (REPO / entry["page"]).read_text(encoding="utf-8")
    missing = [path.stem for path in sorted(REPO.glob(entry["glob"])) if f"`{path.stem}`" not in text]
    assert not missing, f"{entry['page']} does not name {missing}"


def test_no_page_quotes_a_superseded_figure():
    sources = [p for p in PAGES if "notes" not in p.relative_to(REPO).parts] + sorted((REPO / "src").rglob("*.py"))
    stale = [(str(p.relative_to(REPO)), s) for p in sources for s in REGISTRY["superseded"] if s in p.read_text(encoding="utf-8")]
    assert not stale, f"superseded text still quoted: {stale}"


def _figures(text: str) -> list[str]:
    return [m.group(0) for m in FIGURE.finditer(text) if not NOT_A_FIGURE.search(text[: m.start()])]


def _registered(page: str) -> set[str]:
    return {e["number"] for e in REGISTRY["figures"] if e["page"] == page}


def test_every_figure_in_the_readme_is_registered():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    prose = re.sub(r"`[^`\n]*`", "", re.sub(r"^```.*?^```", "", text, flags=re.S | re.M))
    unchecked = sorted(set(_figures(prose)) - _registered("README.md"))
    assert not unchecked, f"README.md quotes {unchecked} without a result file in docs/figures.yaml"


def test_attnkit_doctor_quotes_no_unregistered_figure():
    page = "src/attnkit/commands/doctor.py"
    tree = ast.parse((REPO / page).read_text(encoding="utf-8"))
    strings = [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)]
    unchecked = sorted({f for s in strings for f in _figures(s)} - _registered(page))
    assert not unchecked, f"{page} quotes {unchecked} without a result file in docs/figures.yaml"


def test_every_cited_repository_path_exists():
    sources = PAGES + sorted((REPO / "src").rglob("*.py"))
    missing = [(str(p.relative_to(REPO)), m) for p in sources for m in CITED_PATH.findall(p.read_text(encoding="utf-8")) if not (REPO / m).exists()]
    assert not missing, f"cited paths that are not in the repository: {missing}"


def test_the_checks_catch_what_they_are_for():
    """The figure rule finds figures and passes versions, addresses and dates by."""
    assert _figures("**38.78** test BLEU, 2,347 tokens/s, 47.38% and 40 minutes for 35 BLEU") == ["38.78", "2,347", "47.38", "35"]
    assert _figures("Python >= 3.10, http://127.0.0.1:8001, 2026-12-02, torch==2.13.0, 16 bits") == []
    assert section_of("# a\nx\n## b\ny 1.5 z\n## c\n", "1.5") == "\n## b\ny 1.5 z"
