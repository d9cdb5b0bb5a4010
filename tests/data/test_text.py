"""Tests for attnkit.data.text: line splitting, stripping, and every DataError message."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from attnkit.data.text import read_lines, read_parallel
from attnkit.errors import DataError


def write(path: Path, data: bytes) -> Path:
    """Write bytes, gzip'd when the name ends in .gz."""
    path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)
    return path


@pytest.mark.parametrize("name", ["plain.txt", "packed.txt.gz"])
def test_read_lines_strips_bom_line_ends_and_surrounding_space(tmp_path: Path, name: str) -> None:
    data = "\ufeffEin  Hund.\r\n  Zwei\u2028Katzen \n\tdrei\n\n".encode()
    expected = ["Ein  Hund.", "Zwei\u2028Katzen", "drei", ""]  # U+2028 does not split lines
    assert read_lines(write(tmp_path / name, data)) == expected


def test_last_line_without_newline_is_kept(tmp_path: Path) -> None:
    assert read_lines(write(tmp_path / "a.txt", b"one\ntwo")) == ["one", "two"]


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"^.*/nope\.en: no such file$"):
        read_lines(tmp_path / "nope.en")


def test_directory(tmp_path: Path) -> None:
    with pytest.raises(DataError) as err:
        read_lines(tmp_path)
    assert str(err.value) == f"{tmp_path}: is a directory, expected a text file"


@pytest.mark.parametrize("name", ["bad.txt", "bad.txt.gz"])
def test_invalid_utf8_names_file_line_byte_and_column(tmp_path: Path, name: str) -> None:
    path = write(tmp_path / name, b"fine\nab\xffcd\n")
    with pytest.raises(DataError) as err:
        read_lines(path)
    assert str(err.value) == f"{path}, line 2: invalid UTF-8 (byte 0xff at column 3)"


def test_invalid_utf8_replaced_on_request(tmp_path: Path) -> None:
    path = write(tmp_path / "bad.txt", b"ab\xffcd\n")
    assert read_lines(path, errors="replace") == ["ab\ufffdcd"]


@pytest.mark.parametrize("name", ["empty.txt", "empty.txt.gz"])
def test_empty_file(tmp_path: Path, name: str) -> None:
    path = write(tmp_path / name, b"")
    with pytest.raises(DataError) as err:
        read_lines(path)
    assert str(err.value) == f"{path}: empty file"


def test_not_gzip(tmp_path: Path) -> None:
    path = tmp_path / "fake.gz"
    path.write_bytes(b"plain text\n")
    with pytest.raises(DataError, match=r"fake\.gz: not a valid gzip file"):
        read_lines(path)


def test_read_parallel_pairs_lines(tmp_path: Path) -> None:
    src = write(tmp_path / "a.en", b"a dog\na cat\n")
    tgt = write(tmp_path / "a.de", b"ein Hund\neine Katze\n")
    assert read_parallel(src, tgt) == [("a dog", "ein Hund"), ("a cat", "eine Katze")]


def test_read_parallel_count_mismatch_names_both_files_counts_and_check(tmp_path: Path) -> None:
    src = write(tmp_path / "a.en", b"1\n2\n3\n")
    tgt = write(tmp_path / "a.de", b"1\n2\n")
    with pytest.raises(DataError) as err:
        read_parallel(src, tgt)
    assert str(err.value) == (f"{src} has 3 lines but {tgt} has 2; run `attnkit data check {src} {tgt}` to see where they diverge")


def test_real_multi30k_de(multi30k: Path) -> None:
    # Counts and the two "@@" placeholder lines are from shared/data/README.md, section 1.
    lines = read_lines(multi30k / "train.de.gz")
    assert len(lines) == 29000
    assert [i + 1 for i, line in enumerate(lines) if line == "@@"] == [16510, 16664]
    assert all(line == line.strip() for line in lines)  # 40 lines had surrounding spaces
