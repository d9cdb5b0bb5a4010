"""mkdocs hook: the figures a page quotes are generated from benchmarks/results/ at build time.

A page does not type a measured figure; it writes a marker that the build replaces with the value:

    reaches {{ fig("m30k-small_40min_xeon_test.json", "bleu", ".2f") }} BLEU
    on the {{ machine("m30k-small_40min_xeon_test.json") }} ({{ date("m30k-small_40min_xeon_test.json") }})

- `fig(file, key, spec, where=None, over=None, mean_of=None, pattern=None, scale=1)`: the field `key`
  of `file` (a path under benchmarks/results/; `a.b.0` for nested JSON, a number indexes a list), of
  the first .jsonl line whose fields equal `where`; divided by the same field of the line `over`
  picks (a ratio); or the mean over the lines `mean_of` lists (each may name its own `key`); with
  `pattern`, the number its first group finds in a text field (what a command printed; "2,639"
  reads as 2639); times
  `scale`; written with the format `spec` (".2f", ",.0f", "+.2f"), rounded half up (30.25 -> 30.3); ".1e" for the tiny.
- `machine(file, where=None)` and `date(file, where=None)`: the machine and the date the file (or
  its line) records (`machine`, `cpu`, `doctor_cpu` or `device`; `date`), the machine's short name.
- `count(glob, capital=False)`: how many repository files match `glob`, in words ("nine").
- `table(file, columns, where=None)`: a markdown table with a row per record of `file` whose fields
  equal `where` (every .jsonl line by default) and a column per `[heading, key, spec]` of `columns`:
  the field `key` (nested as in `fig`) written with `spec` (a `fig` format; "" writes it as it is); a
  field a row lacks is an empty cell, one that no row has is an error. Put it on a line of its own.

A marker in code (a code block or span) is shown as it is. A marker that does not resolve (no file, no such key or line, a bad spec) is a warning, which
`mkdocs build --strict` turns into a failed build; so is a section (heading to heading) that quotes
a figure (or a table) but does not name the machine and the date of its file, unless what it quotes
is an estimate, not a measurement (every line it reads says `"measured": false`). The README is not built: there a
figure is followed by its marker in an HTML comment (`**38.78<!-- {{ fig(...) }} -->**`), its
section names the machine and date as on a page, and `python scripts/docs/figures.py README.md`
rewrites each figure from its marker (tests/docs/test_figures.py checks that it is current).
"""

from __future__ import annotations

import ast
import functools
import json
import logging
import re
import sys
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "benchmarks" / "results"
MARKER = re.compile(r"\{\{(.*?)\}\}", re.S)
FENCE = re.compile(r"^ *```.*?^ *```", re.S | re.M)
CODE = re.compile(r"(`+)[^\n]*?(?<!`)\1(?!`)")
COMMENTED = re.compile(r"([^\s*_|(<>]*)<!-- (\{\{.*?\}\}) -->", re.S)  # the README: a figure, then its marker
MACHINE_FIELDS = ("machine", "cpu", "doctor_cpu", "device")
GENERIC_DEVICE = {"cpu", "cuda", "auto"}  # a `device` field that names no machine
NUMBER_WORDS = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen".split()
log = logging.getLogger("mkdocs.hooks.figures")


class FigureError(ValueError):
    """A marker that names no file, no field or no line, or cannot be written as asked."""


@functools.cache
def _records(file: str) -> tuple:
    """The records of a result file: the object of a .json, the lines of a .jsonl."""
    path = RESULTS / file
    if not path.is_file():
        raise FigureError(f"no result file benchmarks/results/{file}")
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix == ".jsonl":
            return tuple(json.loads(line) for line in text.splitlines() if line.strip())
        return (json.loads(text),)
    except json.JSONDecodeError as e:
        raise FigureError(f"benchmarks/results/{file} does not parse: {e}") from None


def record(file: str, where: dict | None = None) -> dict:
    """The record of `file` (a .json), or its first line whose fields equal `where` (a .jsonl)."""
    found = matching(file, where)
    if not found:
        raise FigureError(f"benchmarks/results/{file}: no line with {where}")
    return found[0]


def field_of(rec, key: str):
    """The field `key` of a record (`a.b.0`: nested; a number indexes a list); KeyError if it has none."""
    for part in key.split("."):
        try:
            rec = rec[int(part)] if isinstance(rec, list) else rec[part]
        except (KeyError, IndexError, ValueError, TypeError):
            raise KeyError(key) from None
    return rec


def field(file: str, key: str, where: dict | None = None):
    try:
        return field_of(record(file, where), key)
    except KeyError:
        raise FigureError(f"benchmarks/results/{file}: no field {key!r}" + (f" in the line with {where}" if where else "")) from None


def value(file: str, key: str, where=None, over=None, mean_of=None, pattern=None, scale=1) -> float:
    """The number a `fig` marker names (see the module's docstring)."""
    if mean_of is not None:
        values = [value(file, w.get("key", key), {k: v for k, v in w.items() if k != "key"}, pattern=pattern) for w in mean_of]
        return sum(values) / len(values) * scale
    found = field(file, key, where)
    if pattern is not None:
        match = re.search(pattern, str(found))
        if not match:
            raise FigureError(f"benchmarks/results/{file} {key}: nothing matches {pattern!r}")
        found = match.group(1).replace(",", "")  # a printed "2,639"
    if over is not None:
        found = float(found) / float(field(file, key, over))
    try:
        return float(found) * scale
    except (TypeError, ValueError):
        raise FigureError(f"benchmarks/results/{file} {key}: {found!r} is not a number") from None


def written(number: float, spec: str) -> str:
    """`number` written with `spec` (".2f", ",.0f", "+.1f"), rounded half up as a reader rounds; ".1e" for the
    tiny (a largest difference: 2.6e-15)."""
    if re.fullmatch(r"\.\de", spec):
        return format(number, spec)
    match = re.fullmatch(r"(\+?)(,?)\.(\d)f", spec)
    if not match:
        raise FigureError(f"format {spec!r}: use [+][,].Nf or .Ne")
    rounded = Decimal(repr(number)).quantize(Decimal(10) ** -int(match.group(3)), rounding=ROUND_HALF_UP)
    return format(rounded + 0, spec)  # + 0: no "-0.00"


def fig(file: str, key: str, spec: str, **how) -> str:
    return written(value(file, key, **how), spec)


def provenance(rec) -> tuple[str | None, str | None]:
    """The machine (its short name) and the date a record holds, at its top or nested."""
    machine = date = None
    items = rec.items() if isinstance(rec, dict) else enumerate(rec) if isinstance(rec, list) else []
    for k, v in items:
        if k == "date" and isinstance(v, str) and date is None:
            date = v[:10]
        elif k in MACHINE_FIELDS and isinstance(v, str) and v not in GENERIC_DEVICE and machine is None:
            machine = re.split(r" \(|,|:", v)[0].strip()
        elif isinstance(v, dict | list):
            inner = provenance(v)
            machine, date = machine or inner[0], date or inner[1]
    return machine, date


def _recorded(file: str, where: dict | None, which: int, name: str) -> str:
    if where is not None:
        found = {provenance(record(file, where))[which]}
    else:
        found = {provenance(r)[which] for r in _records(file)}
    if found == {None}:
        raise FigureError(f"benchmarks/results/{file} records no {name}")
    if len(found - {None}) > 1:
        raise FigureError(f"benchmarks/results/{file} records several: {sorted(found - {None})}: pick the line with where=")
    return (found - {None}).pop()


def machine(file: str, where: dict | None = None) -> str:
    return _recorded(file, where, 0, "machine")


def date(file: str, where: dict | None = None) -> str:
    return _recorded(file, where, 1, "date")


def count(glob: str, capital: bool = False) -> str:
    word = NUMBER_WORDS[len(list(REPO.glob(glob)))]
    return word.capitalize() if capital else word


def matching(file: str, where: dict | None = None) -> list[dict]:
    """The records of `file` whose fields equal `where` (all of them for None)."""
    return [r for r in _records(file) if all(r.get(k) == v for k, v in (where or {}).items())]


def _cell(file: str, rec: dict, key: str, spec: str) -> str | None:
    try:
        found = field_of(rec, key)
    except KeyError:
        return None
    if not spec:
        return str(found)
    try:
        return written(float(found), spec)
    except (TypeError, ValueError):
        raise FigureError(f"benchmarks/results/{file} {key}: {found!r} is not a number") from None


def table(file: str, columns: list, where: dict | None = None) -> str:
    """A markdown table of the records of `file` that `where` picks, one column per [heading, key, spec]."""
    rows = matching(file, where)
    if not rows:
        raise FigureError(f"benchmarks/results/{file}: no line with {where}")
    cells = [[_cell(file, r, key, spec) for _, key, spec in columns] for r in rows]
    for i, (_, key, _) in enumerate(columns):
        if all(row[i] is None for row in cells):
            raise FigureError(f"benchmarks/results/{file}: no line has the field {key!r}")
    lines = ["| " + " | ".join(c[0] for c in columns) + " |", "|" + "---|" * len(columns)]
    return "\n".join(lines + ["| " + " | ".join(c or "" for c in row) + " |" for row in cells])


def matches(file: str, key: str, pattern: str, where: dict | None = None, join: str | None = None) -> str:
    """The lines of a record's text field `key` that `pattern` matches: how many, or with `join` their first
    groups joined by it ("0, 4, 8, 9": the seeds a tour command's output names)."""
    found = list(re.finditer(pattern, str(field(file, key, where)), re.M))
    if not found:
        raise FigureError(f"benchmarks/results/{file} {key}: nothing matches {pattern!r}")
    return str(len(found)) if join is None else join.join(m.group(1) for m in found)


FUNCTIONS = {"fig": fig, "machine": machine, "date": date, "count": count, "table": table, "matches": matches}


def call(marker: str) -> tuple[str, tuple, dict]:
    """The function, arguments and keywords of a marker's text: a call of literals only."""
    try:
        node = ast.parse(marker.strip(), mode="eval").body
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS):
            raise FigureError(f"{{{{{marker}}}}}: a marker calls one of {sorted(FUNCTIONS)}")
        return node.func.id, tuple(ast.literal_eval(a) for a in node.args), {k.arg: ast.literal_eval(k.value) for k in node.keywords}
    except (SyntaxError, ValueError) as e:
        raise FigureError(f"{{{{{marker}}}}}: {e}") from None


def evaluate(marker: str) -> str:
    name, args, kwargs = call(marker)
    try:
        return FUNCTIONS[name](*args, **kwargs)
    except TypeError as e:
        raise FigureError(f"{{{{{marker}}}}}: {e}") from None


def sources(markdown: str) -> list[tuple[int, str, dict | None]]:
    """Where each `fig` marker is, with its file and line (`where`, or the first of `mean_of`)."""
    found = []
    code = code_spans(markdown)
    for m in MARKER.finditer(markdown):
        if any(a <= m.start() < b for a, b in code):
            continue
        try:
            name, args, kwargs = call(m.group(1))
        except FigureError:
            continue
        if name in ("fig", "table", "matches") and args:
            where = kwargs.get("where") or next(({k: v for k, v in w.items() if k != "key"} for w in kwargs.get("mean_of") or []), None)
            found.append((m.start(), args[0], where))
    return found


def sections(markdown: str) -> list[tuple[int, int]]:
    """The spans from heading to heading (a `#` line in a code block is no heading)."""
    fenced = [m.span() for m in FENCE.finditer(markdown)]
    starts = [m.start() for m in re.finditer(r"^#", markdown, re.M) if not any(a <= m.start() < b for a, b in fenced)]
    bounds = [0, *starts, len(markdown)]
    return list(zip(bounds, bounds[1:]))


def unnamed_provenance(markdown: str) -> list[str]:
    """The files whose figures sit in a section that does not name their machine and date."""
    spans = sections(markdown)
    problems = []
    for at, file, where in sources(markdown):
        start, end = next((a, b) for a, b in spans if a <= at < b)
        section = expand(markdown[start:end])
        try:
            if all(r.get("measured") is False for r in matching(file, where)):
                continue  # an estimate: no machine measured it
            wanted = (machine(file, where), date(file, where))
        except FigureError as e:
            problems.append(str(e))
            continue
        missing = [w for w in wanted if w not in section]
        if missing:
            problems.append(f"the section quoting benchmarks/results/{file} does not name {' or '.join(missing)}")
    return sorted(set(problems))


def expand(markdown: str, errors: list[str] | None = None) -> str:
    """`markdown` with each marker replaced by what it generates; a marker that fails stays, its
    error appended to `errors` (or raised, when `errors` is None)."""

    def one(m: re.Match) -> str:
        try:
            return evaluate(m.group(1))
        except FigureError as e:
            if errors is None:
                raise
            errors.append(str(e))
            return m.group(0)

    code = code_spans(markdown)
    return MARKER.sub(lambda m: m.group(0) if any(a <= m.start() < b for a, b in code) else one(m), markdown)


def code_spans(markdown: str) -> list[tuple[int, int]]:
    """The code blocks and code spans of a page: a marker there is shown, not generated."""
    return [m.span() for m in FENCE.finditer(markdown)] + [m.span() for m in CODE.finditer(markdown)]


def check(markdown: str) -> tuple[str, list[str]]:
    """The page as the site shows it, and what is wrong with its markers."""
    errors: list[str] = []
    rendered = expand(markdown, errors)
    if not errors:
        errors = unnamed_provenance(markdown)
    return rendered, errors


def on_pre_build(config):
    _records.cache_clear()  # `mkdocs serve` rebuilds in one process: read the result files again


def on_page_markdown(markdown, page, config, files):
    rendered, errors = check(markdown)
    for error in errors:
        log.warning("%s: %s", page.file.src_uri, error)
    return rendered


def refreshed(text: str) -> str:
    """A page outside the site (the README) with each commented figure rewritten from its marker."""
    return COMMENTED.sub(lambda m: f"{expand(m.group(2))}<!-- {m.group(2)} -->", text)


def stale(text: str) -> list[tuple[str, str]]:
    """The commented figures of a page that differ from what their markers generate: (shown, generated)."""
    return [(m.group(1), expand(m.group(2))) for m in COMMENTED.finditer(text) if m.group(1) != expand(m.group(2))]


if __name__ == "__main__":
    for name in sys.argv[1:]:
        path = Path(name)
        path.write_text(refreshed(path.read_text(encoding="utf-8")), encoding="utf-8")
