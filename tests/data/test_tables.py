"""Tests for attnkit.data.tables: CSV/TSV/JSONL/JSON tables as `datasets.load_dataset` reads them,
with the file and line of every row and of every error."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from attnkit.data.tables import cell, iter_rows, table_columns, table_kind
from attnkit.errors import DataError


def _write(tmp: Path, name: str, text: str) -> Path:
    path = tmp / name
    path.write_bytes(gzip.compress(text.encode()) if name.endswith(".gz") else text.encode())
    return path


def test_csv_rows_keep_the_line_a_quoted_field_over_lines_starts_on(tmp_path: Path) -> None:
    path = _write(tmp_path, "t.csv", 'text,label\n"one, two",a\n"three\nfour",b\n\nfive,c\n')
    rows = list(iter_rows(path, ["text", "label"]))
    assert rows == [(f"{path}, line 2", {"text": "one, two", "label": "a"}), (f"{path}, line 3", {"text": "three\nfour", "label": "b"}),
                    (f"{path}, line 6", {"text": "five", "label": "c"})]  # fmt: skip


def test_tsv_gz_and_the_header_check(tmp_path: Path) -> None:
    path = _write(tmp_path, "t.tsv.gz", "src\ttgt\na\tb\n")
    assert table_kind(path) == "tsv" and list(iter_rows(path, ["src", "tgt"])) == [(f"{path}, line 2", {"src": "a", "tgt": "b"})]
    with pytest.raises(DataError, match=r"t\.tsv\.gz, line 1: no column 'label' \(the header has src, tgt\)"):
        list(iter_rows(path, ["label"]))
    bad = _write(tmp_path, "b.tsv", "src\ttgt\na\tb\tc\n")
    with pytest.raises(DataError, match=r"b\.tsv, line 2: 3 fields, the header has 2"):
        list(iter_rows(bad))


def test_json_lines_or_one_array(tmp_path: Path) -> None:
    lines = _write(tmp_path, "l.json", '{"text": "a", "label": 1}\n\n{"text": "b", "label": 0}\n')
    array = _write(tmp_path, "a.json", '[\n {"text": "a", "label": 1},\n {"text": "b", "label": 0}\n]\n')
    assert [where for where, _ in iter_rows(lines)] == [f"{lines}, line 1", f"{lines}, line 3"]
    assert [(where, cell(row, "label", where)) for where, row in iter_rows(array)] == [(f"{array}, item 1", "1"), (f"{array}, item 2", "0")]
    assert table_columns(array) == ["text", "label"]
    broken = _write(tmp_path, "b.json", '[\n {"text": "a"},\n {"text" "b"}\n]\n')
    with pytest.raises(DataError, match=r"b\.json, line 3: invalid JSON"):
        list(iter_rows(broken))


def test_cell_names_what_is_wrong(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"f, line 2: empty label in column 'label'"):
        cell({"label": "  "}, "label", "f, line 2", "label")
    with pytest.raises(DataError, match=r"f, line 2: no field 'text' \(the row has label\)"):
        cell({"label": "x"}, "text", "f, line 2")
    with pytest.raises(DataError, match=r"unknown table format"):
        list(iter_rows(_write(tmp_path, "t.txt", "a\n")))


@pytest.mark.parametrize("kind", ["csv", "tsv"])
def test_a_file_whose_lines_end_in_a_carriage_return_alone_is_one_line_of_error(tmp_path: Path, kind: str) -> None:
    """Found by tests/data/test_reader_properties.py: csv.Error's traceback (CSV), a header of the whole file (TSV)."""
    sep = "," if kind == "csv" else "\t"
    path = _write(tmp_path, f"mac.{kind}", f"text{sep}label\ra{sep}b\rc{sep}d\r" * 50)
    with pytest.raises(DataError) as error:
        list(iter_rows(path, ["text", "label"]))
    message = str(error.value)
    assert message.startswith(f"{path}, line 1: ") and "carriage return alone" in message and "\n" not in message and len(message) < 300


def test_a_missing_column_quotes_a_long_header_shortened(tmp_path: Path) -> None:
    path = _write(tmp_path, "wide.tsv", "\t".join(f"column{i}" for i in range(100)) + "\na\n")
    with pytest.raises(DataError, match=r"no column 'src' \(the header has column0, column1, .{150,200}\.\.\.\)$"):
        list(iter_rows(path, ["src"]))
