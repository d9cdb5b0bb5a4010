"""The figures the pages quote are generated from benchmarks/results/ (scripts/docs/figures.py, a
mkdocs hook): these tests check the generator on a tiny page, that every marker of the docs resolves
(its result file exists and parses, its field and line are there, its section names the file's
machine and date), and that the README's figures, which no build generates, equal their sources.
Besides figures: every repository path a page or a docstring cites in backticks exists, the training
page names every preset, and each lab note (docs/notes/) says when it was measured.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts" / "docs"))
import figures  # noqa: E402  (scripts/docs/figures.py: the hook)

PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
NOTES = REPO / "docs" / "notes"
CITED_PATH = re.compile(r"`((?:src|tests|benchmarks|configs|scripts|docs)/[\w./-]+\.(?:py|md|yaml|json|jsonl|png|txt|csv))`")


@pytest.fixture
def results(tmp_path, monkeypatch):
    """A results folder with one .json and one .jsonl file, in place of benchmarks/results/."""
    (tmp_path / "run.json").write_text(json.dumps({"cpu": "AMD EPYC (AuthenticAMD)", "date": "2026-12-07", "bleu": 30.25, "curve": [{"bleu": 1.5}]}))
    lines = [{"machine": "Intel Xeon", "date": "2026-12-02", "engine": e, "tok_s": t, "note": f"took {t:,} ms"} for e, t in (("a", 1234.5), ("b", 617.25))]
    (tmp_path / "speed.jsonl").write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    (tmp_path / "broken.json").write_text("{")
    monkeypatch.setattr(figures, "RESULTS", tmp_path)
    figures._records.cache_clear()
    yield tmp_path
    figures._records.cache_clear()


def test_a_marker_generates_its_figure_machine_and_date(results):
    page = (
        "## Speed\n"
        "BLEU {{ fig('run.json', 'bleu', '.1f') }} then {{ fig('run.json', 'curve.0.bleu', '+.2f', scale=2) }} "
        "on the {{ machine('run.json') }}, {{ date('run.json') }}.\n"
        "## Engines\n"
        "{{ fig('speed.jsonl', 'tok_s', ',.0f', where={'engine': 'a'}) }} tokens/s, "
        "{{ fig('speed.jsonl', 'tok_s', '.2f', where={'engine': 'a'}, over={'engine': 'b'}) }}x, "
        "mean {{ fig('speed.jsonl', 'tok_s', '.3f', mean_of=[{'engine': 'a'}, {'engine': 'b'}]) }}, "
        "{{ fig('speed.jsonl', 'note', '.1f', where={'engine': 'b'}, pattern='took ([\\\\d.]+)') }} ms, "
        "{{ fig('speed.jsonl', 'note', ',.1f', where={'engine': 'a'}, pattern='took ([\\\\d.,]+)') }} ms "
        "(Intel Xeon, 2026-12-02; the tour has {{ count('docs/tour/[0-9]-*.md') }} pages)\n"
    )
    rendered, errors = figures.check(page)
    assert errors == []
    assert "BLEU 30.3 then +3.00 on the AMD EPYC, 2026-12-07." in rendered  # 30.25 rounds half up, as a reader rounds
    assert "1,235 tokens/s, 2.00x, mean 925.875, 617.3 ms, 1,234.5 ms" in rendered  # 617.3: half up, from the text "617.25"; "1,234.5" reads as 1234.5
    assert "the tour has nine pages" in rendered


@pytest.mark.parametrize(
    ("marker", "error"),
    [
        ("{{ fig('gone.json', 'bleu', '.2f') }}", "no result file benchmarks/results/gone.json"),
        ("{{ fig('broken.json', 'bleu', '.2f') }}", "broken.json does not parse"),
        ("{{ fig('run.json', 'chrf', '.2f') }}", "no field 'chrf'"),
        ("{{ fig('run.json', 'curve.3.bleu', '.2f') }}", "no field 'curve.3.bleu'"),
        ("{{ fig('speed.jsonl', 'tok_s', '.2f', where={'engine': 'c'}) }}", "no line with {'engine': 'c'}"),
        ("{{ fig('speed.jsonl', 'note', '.2f', where={'engine': 'a'}) }}", "is not a number"),
        ("{{ fig('run.json', 'bleu', '%.2f') }}", "format '%.2f'"),
        ("{{ fig('run.json', 'bleu', '.2f', how=1) }}", "unexpected keyword argument 'how'"),
        ("{{ open('run.json') }}", "a marker calls one of"),
        ("{{ fig('run.json', 'bleu', SPEC) }}", "malformed node"),
        ("{{ machine('speed.jsonl', where={'engine': 'z'}) }}", "no line with"),
    ],
)
def test_a_marker_that_does_not_resolve_is_an_error(results, marker, error):
    page = f"## A\n{marker} on the AMD EPYC, 2026-12-07\n"
    rendered, errors = figures.check(page)
    assert len(errors) == 1 and error in errors[0], errors
    assert marker in rendered  # left as it is, for the warning to point at
    with pytest.raises(figures.FigureError, match=re.escape(error)):
        figures.expand(page)


def test_a_matches_marker_counts_or_lists_the_lines_of_a_text_field(results):
    output = "seed 0: love\nseed 1: i\nseed 2: love\nmean: love\n"
    (results / "tour.jsonl").write_text(json.dumps({"name": "toy", "output": output, "cpu": "AMD EPYC", "date": "2026-12-03"}) + "\n")
    page = (
        "## A\nAMD EPYC, 2026-12-03: {{ matches('tour.jsonl', 'output', r'^seed \\d+: love$', where={'name': 'toy'}) }} of "
        "{{ matches('tour.jsonl', 'output', r'^seed \\d+:', where={'name': 'toy'}) }} seeds "
        "({{ matches('tour.jsonl', 'output', r'^seed (\\d+): love$', where={'name': 'toy'}, join=', ') }})\n"
    )
    rendered, errors = figures.check(page)
    assert errors == [] and "2 of 3 seeds (0, 2)" in rendered, errors
    none = "## A\nAMD EPYC, 2026-12-03 {{ matches('tour.jsonl', 'output', r'^seed 9:', where={'name': 'toy'}) }}\n"
    assert "nothing matches" in figures.check(none)[1][0]


def test_a_table_marker_generates_a_row_per_line(results):
    lines = [{"machine": "Intel Xeon", "date": "2026-12-02", "engine": "a", "tok_s": 1234.25},
             {"machine": "Intel Xeon", "date": "2026-12-02", "engine": "b", "tok_s": 2.0, "peak": 7},
             {"machine": "AMD EPYC", "date": "2026-12-03", "engine": "c", "tok_s": 1.0, "peak": 7}]  # fmt: skip
    (results / "table.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    columns = "[['engine', 'engine', ''], ['tokens/s', 'tok_s', ',.1f'], ['peak', 'peak', '.0f']]"
    page = f"## A\nIntel Xeon, 2026-12-02\n\n{{{{ table('table.jsonl', {columns}, where={{'machine': 'Intel Xeon'}}) }}}}\n"
    rendered, errors = figures.check(page)
    assert errors == [] and "| engine | tokens/s | peak |\n|---|---|---|\n| a | 1,234.3 |  |\n| b | 2.0 | 7 |\n" in rendered, errors
    assert "| c |" not in rendered  # `where` picks the lines; a field a line lacks is an empty cell
    wrong = "## A\nIntel Xeon, 2026-12-02\n{{ table('table.jsonl', [['x', 'tok', '']], where={'machine': 'Intel Xeon'}) }}\n"
    assert "no line has the field 'tok'" in figures.check(wrong)[1][0]
    estimate = "## A\n{{ table('estimate.jsonl', [['engine', 'engine', '']]) }}\n"
    (results / "estimate.jsonl").write_text(json.dumps({"engine": "a"}) + "\n")
    assert "records no machine" in figures.check(estimate)[1][0]
    (results / "estimate.jsonl").write_text(json.dumps({"engine": "a", "measured": False}) + "\n")
    figures._records.cache_clear()
    assert figures.check(estimate)[1] == []  # an estimate: no machine measured it


def test_a_figure_whose_section_does_not_name_its_machine_and_date_is_an_error(results):
    named = "## A\nthe AMD EPYC, 2026-12-07\n## B\n{{ fig('run.json', 'bleu', '.2f') }}\n"
    assert figures.check(named)[1] == ["the section quoting benchmarks/results/run.json does not name AMD EPYC or 2026-12-07"]
    code = "## A\n```bash\n# a comment, not a heading\n```\n{{ fig('run.json', 'bleu', '.2f') }} ({{ machine('run.json') }}, 2026-12-07)\n"
    assert figures.check(code)[1] == []
    (results / "bare.json").write_text(json.dumps({"bleu": 1.0}))
    assert figures.check("{{ fig('bare.json', 'bleu', '.1f') }}")[1] == ["benchmarks/results/bare.json records no machine"]


def test_every_figure_on_the_pages_resolves_and_names_its_machine_and_date():
    """What the strict build checks, without mkdocs: every marker of docs/ generates its figure."""
    failures = {}
    for page in PAGES[1:]:
        errors = figures.check(page.read_text(encoding="utf-8"))[1]
        if errors:
            failures[str(page.relative_to(REPO))] = errors
    assert not failures, failures
    assert sum(len(figures.sources(p.read_text(encoding="utf-8"))) for p in PAGES) > 500  # the pages' figures are markers


def test_the_readmes_figures_equal_their_sources(results, monkeypatch):
    text = (REPO / "README.md").read_text(encoding="utf-8")
    monkeypatch.setattr(figures, "RESULTS", REPO / "benchmarks" / "results")
    figures._records.cache_clear()
    assert figures.COMMENTED.search(text), "README.md quotes no generated figure"
    assert figures.stale(text) == [], "README.md is not current: python scripts/docs/figures.py README.md"
    assert figures.unnamed_provenance(text) == []
    monkeypatch.setattr(figures, "RESULTS", results)  # a stale figure is found, and rewritten
    figures._records.cache_clear()
    readme = "**30.20<!-- {{ fig('run.json', 'bleu', '.2f') }} -->** BLEU (AMD EPYC, 2026-12-07)"
    assert figures.stale(readme) == [("30.20", "30.25")]
    assert figures.refreshed(readme) == readme.replace("30.20", "30.25")


def test_a_lab_note_says_it_is_dated_and_not_regenerated():
    for page in sorted(NOTES.glob("*.md")):
        if page.name == "index.md":
            continue
        head = page.read_text(encoding="utf-8")[:1500]
        assert re.search(r"\b\d{4}-\d{2}-\d{2}\b", head) and re.search(r"not\s+regenerated", head), (
            f"{page.relative_to(REPO)} must say near its top when its figures were measured and that they are not regenerated"
        )


def test_every_cited_repository_path_exists():
    sources = PAGES + sorted((REPO / "src").rglob("*.py"))
    missing = [(str(p.relative_to(REPO)), m) for p in sources for m in CITED_PATH.findall(p.read_text(encoding="utf-8")) if not (REPO / m).exists()]
    assert not missing, f"cited paths that are not in the repository: {missing}"


def test_the_training_page_names_every_preset():
    text = (REPO / "docs" / "training.md").read_text(encoding="utf-8")
    missing = [p.stem for p in sorted(REPO.glob("src/attnkit/families/*/presets/*.yaml")) if f"`{p.stem}`" not in text]
    assert not missing, f"docs/training.md does not name {missing}"
