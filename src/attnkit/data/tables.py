"""Tables of named columns, read as `datasets.load_dataset("csv")` / `("json")` read them.

By suffix (before an optional ``.gz``):

- ``.csv``: a header row, then comma-separated rows with Python's ``csv`` quoting (a quoted field
  may span lines);
- ``.tsv``: a header row, then rows split on tabs (no quoting);
- ``.jsonl``: one JSON object a line (blank lines skipped);
- ``.json``: JSON Lines too, or one JSON array of objects.

Every row comes with where it is (``"PATH, line N"``, ``"PATH, item N"`` in a JSON array), and
every error is one `DataError` naming the file and the line: invalid UTF-8 or JSON, a header
without a wanted column, a row with another number of fields than the header.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from attnkit.data.text import iter_jsonl, iter_text_lines, read_lines
from attnkit.errors import DataError

TABLE_SUFFIXES = ("csv", "tsv", "jsonl", "json")
Row = Mapping[str, Any]


def table_kind(path: str | Path) -> str:
    """The table format of a file by its suffix (``csv``, ``tsv``, ``jsonl``, ``json``), or ``""``."""
    suffix = Path(path).name.removesuffix(".gz").rsplit(".", 1)[-1].lower()
    return suffix if suffix in TABLE_SUFFIXES else ""


def iter_rows(path: str | Path, columns: Sequence[str] = ()) -> Iterator[tuple[str, Row]]:
    """Yield ``(where, row)`` for every row of a table; a CSV/TSV header must name `columns`.

    Raises:
        DataError: An unknown suffix, unreadable file, invalid UTF-8 or JSON, no header row, a
            missing column, or a row whose field count differs from the header's.
    """
    kind = table_kind(path)
    if not kind:
        raise DataError(f"{path}: unknown table format (expected .csv, .tsv, .jsonl or .json, optionally .gz)")
    if kind in ("csv", "tsv"):
        yield from _delimited_rows(path, kind, columns)
    elif kind == "json" and _is_array(path):
        yield from _array_rows(path)
    else:
        for number, row in iter_jsonl(path):
            yield f"{path}, line {number}", row


def cell(row: Row, column: str, where: str, what: str = "text") -> str:
    """The stripped, non-empty string in `column` of a row (JSON numbers become strings).

    Raises:
        DataError: ``"WHERE: no field 'COLUMN' ..."``, a value that is not a string (or a number),
            or ``"WHERE: empty WHAT in column 'COLUMN'"``.
    """
    if column not in row:
        raise DataError(f"{where}: no field {column!r} (the row has {', '.join(map(str, row))})")
    value = row[column]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise DataError(f"{where}: {column!r} must be a string, got {json.dumps(value)}")
    if not value.strip():
        raise DataError(f"{where}: empty {what} in column {column!r}")
    return value.strip()


def table_columns(path: str | Path) -> list[str]:
    """The column names of a table: a CSV/TSV header, or the fields of the first JSON object."""
    for _, row in iter_rows(path):
        return list(row)
    raise DataError(f"{path}: no rows")


def _delimited_rows(path: str | Path, kind: str, columns: Sequence[str]) -> Iterator[tuple[str, dict[str, str]]]:
    lines = ((number, text + "\n") for number, text in iter_text_lines(path, strip=False))
    if kind == "tsv":
        records = ((number, line.rstrip("\n").split("\t")) for number, line in lines)
    else:
        records = _csv_records(lines, path)
    number, first = next(records, (1, []))
    header = [name.strip() for name in first]
    if not any(header):
        raise DataError(f"{path}, line {number}: expected a header row with the column names")
    if any("\r" in name for name in header):  # the file is one line: its lines end in CR alone
        raise DataError(f"{path}, line {number}: lines that end in a carriage return alone (old Mac ends); save the file with LF or CRLF ends")
    for column in columns:
        if column not in header:
            shown = ", ".join(header)
            raise DataError(f"{path}, line {number}: no column {column!r} (the header has {shown if len(shown) <= 200 else shown[:200] + '...'})")
    for number, values in records:
        if not any(v.strip() for v in values):
            continue
        if len(values) != len(header):
            raise DataError(f"{path}, line {number}: {len(values)} fields, the header has {len(header)}")
        yield f"{path}, line {number}", dict(zip(header, values))


def _csv_records(lines: Iterator[tuple[int, str]], path: str | Path) -> Iterator[tuple[int, list[str]]]:
    """CSV records with the line each starts on (a quoted field may span lines); a line the csv module cannot
    read (a carriage return alone inside a line, old Mac ends) is one `DataError` naming it."""
    numbered = iter(lines)
    current = [0]

    def texts() -> Iterator[str]:
        for number, text in numbered:
            current[0] = number
            yield text

    reader = csv.reader(texts())
    start = 1
    try:
        for values in reader:
            yield start, values
            start = current[0] + 1
    except csv.Error as e:
        raise DataError(f"{path}, line {current[0]}: not CSV ({e}; a carriage return alone does not end a line)") from None


def _is_array(path: str | Path) -> bool:
    for _, text in iter_text_lines(path):
        if text:
            return text.startswith("[")
    return False


def _array_rows(path: str | Path) -> Iterator[tuple[str, Row]]:
    text = "\n".join(line for _, line in iter_text_lines(path, strip=False))
    try:
        items = json.loads(text)
    except json.JSONDecodeError as err:
        raise DataError(f"{path}, line {err.lineno}: invalid JSON ({err.msg} at column {err.colno})") from None
    if not isinstance(items, list):
        raise DataError(f"{path}: expected a JSON array of objects")
    for number, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            raise DataError(f"{path}, item {number}: expected a JSON object, got {type(item).__name__}")
        yield f"{path}, item {number}", item


def read_texts(path: str | Path, text_column: str = "text", text2_column: str | None = None) -> list[str]:
    """The input texts of a data set: a table's `text_column` (other columns, a label among them, are not
    read), or every non-blank line of any other file. With `text2_column` (sentence pairs) each text is
    ``text<TAB>text2``, as the classifiers read a pair.

    Raises:
        DataError: as `read_lines` and `iter_rows` (file and line), an empty text, or no text at all.
    """
    if not table_kind(path):
        return [line for line in read_lines(path) if line]
    columns = [c for c in (text_column, text2_column) if c is not None]
    texts = ["\t".join(cell(row, c, where) for c in columns) for where, row in iter_rows(path, columns)]
    if not texts:
        raise DataError(f"{path}: no texts")
    return texts
