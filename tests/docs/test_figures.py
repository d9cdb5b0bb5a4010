"""Every figure from one source: what the README and the docs quote agrees with benchmarks/results/.

docs/figures.yaml lists each quoted figure with the result file and field it comes from, the machine
and the date; each count a page states in words (tour pages, model families) with the files it
counts; each list a page must hold in full (the presets); and the text that later measurements
superseded. Besides the registry:

- every figure in the README and on every page of docs/ (a decimal number, or a number with a unit
  such as BLEU, %, GB or tokens/s), and every figure in `attnkit doctor`'s messages, must be in the
  registry or be a setting the registry lists (`settings`); docs/notes/ is exempt, and each of its
  pages says it is a dated lab note, not regenerated;
- each figure names its machine and date, and they are the result file's own (its `date` and
  `cpu`/`doctor_cpu`/`device` fields) or, for a file that holds none, the date of the commit the
  entry names (`commit`), which wrote the file;
- every repository path a page or a docstring cites in backticks (`tests/...py`) must exist.
"""

from __future__ import annotations

import ast
import functools
import json
import re
import subprocess
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]


def _expand(entries: list[dict]) -> list[dict]:
    """An entry with `numbers` ({number: key}) stands for one entry per number, in one quote."""
    return [{**e, "number": str(n), "key": k} for e in entries for n, k in e.pop("numbers", {e.get("number"): e.get("key")}).items()]


REGISTRY = yaml.safe_load((REPO / "docs" / "figures.yaml").read_text(encoding="utf-8"))
REGISTRY["figures"] = _expand(REGISTRY["figures"])
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
NUMBER_WORDS = {w: n for n, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen".split())}
# A figure: a decimal number, or a number followed by a unit of measurement.
FIGURE = re.compile(r"(?<![\w.,])\d[\d,]*(?:\.\d+(?![A-Za-z0-9_.])|(?=\s*(?:%|BLEU|F1|GB|MB|GiB|MiB|ms|tokens/s|sentences/s|requests/s|req/s)))")
NOT_A_FIGURE = re.compile(r"(?:Python|>=|torch|version|v|beam|[Ss]ec\.|§)\s*$")  # a version, a beam size, a paper's section
NOTES = REPO / "docs" / "notes"
GENERIC_DEVICE = {"cpu", "cuda"}  # a `device` field that names no machine
CITED_PATH = re.compile(r"`((?:src|tests|benchmarks|configs|scripts|docs)/[\w./-]+\.(?:py|md|yaml|json|jsonl|png|txt|csv))`")


def _id(entry: dict) -> str:
    return f"{entry['page']}:{entry.get('number') or entry.get('says') or entry.get('glob')}"


def field(entry: dict, where: dict) -> float | str:
    """The field `key` of the result file (the first .jsonl line whose fields equal `where`)."""
    path = REPO / entry["file"]
    if path.suffix == ".jsonl":
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        matching = [row for row in rows if all(row.get(k) == v for k, v in where.items())]
        assert matching, f"{entry['file']}: no line with {where}"
        value = matching[0]
    else:
        value = json.loads(path.read_text(encoding="utf-8"))
    for part in entry["key"].split("."):
        value = value[int(part)] if isinstance(value, list) else value[part]  # points.0.bleu: a list's item
    return value


def result_value(entry: dict) -> float | str:
    """The figure the entry names: its field (or the number `pattern`'s group picks out of a text
    field), divided by the field of the line `over` picks (a ratio), or the mean of the field over
    the lines `mean_of` picks, times `scale`; a text field (a run's description) as it is."""
    if "mean_of" in entry:  # a mean over seeds: one `where` per line, which may name its own `key`
        values = [float(field({**entry, "key": w.get("key", entry["key"])}, {k: v for k, v in w.items() if k != "key"})) for w in entry["mean_of"]]
        return sum(values) / len(values) * entry.get("scale", 1)
    value = field(entry, entry.get("where", {}))
    if entry.get("pattern"):  # a number in what a command printed (benchmarks/results/tour.jsonl's `output`)
        match = re.search(entry["pattern"], value)
        assert match, f"{entry['file']} {entry['key']}: nothing matches {entry['pattern']!r}"
        value = float(match.group(1))
    if isinstance(value, str):
        return value
    if "over" in entry:
        value = float(value) / float(field(entry, entry["over"]))
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
    value = result_value(entry)
    if isinstance(value, str):
        found = shown = entry["number"] if entry["number"] in value else repr(value)
    else:
        decimals = len(entry["number"].partition(".")[2])
        rounded = Decimal(repr(value)).quantize(Decimal(10) ** -decimals, rounding=ROUND_HALF_UP)  # 30.25 -> 30.3
        found = f"{rounded:,.{decimals}f}"
        shown = found if "," in entry["number"] else found.replace(",", "")
    assert shown == entry["number"], f"{entry['page']} quotes {entry['number']}, {entry['file']} {entry['key']} says {found}"
    section = section_of(text, entry["quote"])
    for named in (entry["machine"], str(entry["date"])):
        assert find(section, named) >= 0, f"{entry['page']}: the section quoting {entry['number']} does not name {named!r}"


@functools.cache
def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, check=True).stdout.strip()


def recorded_provenance(path: Path) -> tuple[set[str], set[str]]:
    """The dates (YYYY-MM-DD) and machines a result file records in its own fields."""
    text = path.read_text(encoding="utf-8")
    dates = set(re.findall(r'"date": "(\d{4}-\d{2}-\d{2})', text))
    machines = set(re.findall(r'"(?:cpu|doctor_cpu|device)": "([^"]+)"', text)) - GENERIC_DEVICE
    return dates, machines


@pytest.mark.parametrize("entry", REGISTRY["figures"], ids=_id)
def test_a_figure_names_the_machine_and_date_of_its_result_file(entry):
    assert entry.get("machine") and entry.get("date"), f"{_id(entry)}: a figure needs its machine and date in docs/figures.yaml"
    dates, machines = recorded_provenance(REPO / entry["file"])
    if machines:
        assert any(entry["machine"] in m for m in machines), f"{_id(entry)}: {entry['file']} was measured on {machines}, not {entry['machine']!r}"
    if dates:
        assert str(entry["date"]) in dates, f"{_id(entry)}: {entry['file']} is dated {sorted(dates)}, not {entry['date']}"
        return
    assert entry.get("commit"), f"{_id(entry)}: {entry['file']} records no date: name the commit that wrote it (`commit`)"
    if not (REPO / ".git").exists() or _git("rev-parse", "--is-shallow-repository") == "true":
        pytest.skip("not a full git checkout: the commit cannot be looked up")
    touched = _git("log", "--format=%H", "--", entry["file"]).split()
    assert any(c.startswith(str(entry["commit"])) for c in touched), f"{_id(entry)}: commit {entry['commit']} did not write {entry['file']}"
    assert _git("show", "-s", "--format=%cs", str(entry["commit"])) == str(entry["date"]), f"{_id(entry)}: commit {entry['commit']} is not of {entry['date']}"


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
    return {e["number"].lstrip("+-") for e in REGISTRY["figures"] if e["page"] == page}  # a sign is not part of a figure


def _prose(text: str) -> str:
    """The page without its code blocks and inline code."""
    return re.sub(r"`[^`\n]*`", "", re.sub(r"^```.*?^```", "", text, flags=re.S | re.M))


def unregistered(page: Path) -> list[str]:
    """The figures a page quotes that the registry neither checks nor lists as settings."""
    rel = str(page.relative_to(REPO))
    text = page.read_text(encoding="utf-8")
    for setting in REGISTRY.get("settings", []):
        if setting["page"] == rel:
            assert find(text, setting["quote"]) >= 0, f"{rel} no longer says {setting['quote']!r}: update docs/figures.yaml settings"
            text = re.sub(r"\s+".join(map(re.escape, setting["quote"].split())), " ", text)
    return [f for f in _figures(_prose(text)) if f not in _registered(rel)]


CHECKED_PAGES = [p for p in PAGES if NOTES not in p.parents]


@pytest.mark.parametrize("page", CHECKED_PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_figure_on_a_page_is_registered(page):
    found = unregistered(page)
    assert not found, (
        f"{page.relative_to(REPO)} quotes figures without a result file in docs/figures.yaml (register them or list a setting): {sorted(set(found))[:40]}"
    )


def test_a_lab_note_says_it_is_dated_and_not_regenerated():
    for page in sorted(NOTES.glob("*.md")):
        if page.name == "index.md":
            continue
        head = page.read_text(encoding="utf-8")[:1500]
        assert re.search(r"\b\d{4}-\d{2}-\d{2}\b", head) and find(head, "not regenerated") >= 0, (
            f"{page.relative_to(REPO)} must say near its top when its figures were measured and that they are not regenerated"
        )


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
    assert _figures("Python >= 3.10, http://127.0.0.1:8001, 2026-12-02, torch==2.13.0, 16 bits, beam 5 sentences/s, sec. 5.1") == []
    assert section_of("# a\nx\n## b\ny 1.5 z\n## c\n", "1.5") == "\n## b\ny 1.5 z"


def test_a_wrong_figure_machine_or_date_fails():
    """The registry's checks fail on a figure that disagrees with its file, or lacks its machine or date."""
    entry = next(e for e in REGISTRY["figures"] if e.get("commit") and e["file"].endswith(".json"))
    with pytest.raises(AssertionError, match="says"):
        test_a_quoted_figure_equals_its_result_file({**entry, "scale": 2})  # the file's value, doubled
    printed = next(e for e in REGISTRY["figures"] if e.get("pattern"))  # a number in a tour command's output
    with pytest.raises(AssertionError, match="says"):
        test_a_quoted_figure_equals_its_result_file({**printed, "scale": 2})
    for missing in ("machine", "date"):
        with pytest.raises(AssertionError, match="needs its machine and date"):
            test_a_figure_names_the_machine_and_date_of_its_result_file({k: v for k, v in entry.items() if k != missing})
    with pytest.raises(AssertionError, match="no date: name the commit"):
        test_a_figure_names_the_machine_and_date_of_its_result_file({k: v for k, v in entry.items() if k != "commit"})
    dated = next(e for e in REGISTRY["figures"] if recorded_provenance(REPO / e["file"])[0])
    with pytest.raises(AssertionError, match="is dated"):
        test_a_figure_names_the_machine_and_date_of_its_result_file({**dated, "date": "1999-01-01"})
