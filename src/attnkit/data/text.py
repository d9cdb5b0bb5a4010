"""Text readers: plain or gzip'd files, strict UTF-8, errors that name the file and line.

Lines are split on ``\\n`` only (never on the other Unicode line separators that
``str.splitlines`` knows), so line *i* of a source file stays line *i* of its target file.
"""

from __future__ import annotations

import codecs
import gzip
import json
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from attnkit.errors import DataError


def iter_byte_lines(path: str | Path) -> Iterator[bytes]:
    """Yield the raw lines of a plain or ``.gz`` file (by suffix), line ends included.

    Args:
        path: File to read; ``.gz`` files are decompressed on the fly.

    Yields:
        Each line as bytes, split on ``b"\\n"`` only.

    Raises:
        DataError: The file is missing, a directory, unreadable or not valid gzip.
    """
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: no such file")
    if path.is_dir():
        raise DataError(f"{path}: is a directory, expected a text file")
    try:
        with gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb") as handle:
            yield from handle
    except (gzip.BadGzipFile, EOFError, zlib.error) as err:
        raise DataError(f"{path}: not a valid gzip file ({err})") from err
    except OSError as err:
        raise DataError(f"{path}: cannot read ({err.strerror or err})") from err


def decode_line(raw: bytes, number: int, errors: str = "strict", strip: bool = True) -> str:
    """Decode one raw line as UTF-8 and strip it.

    Args:
        raw: The line's bytes, line end included.
        number: 1-based line number; line 1 loses a leading byte-order mark.
        errors: ``"strict"`` or ``"replace"``, as for `bytes.decode`.
        strip: remove surrounding whitespace; False removes only the line end (so the empty first
            or last field of a tab-separated row survives).

    Returns:
        The text without BOM, line end and (with `strip`) surrounding whitespace.

    Raises:
        UnicodeDecodeError: The bytes are not valid UTF-8 and ``errors`` is ``"strict"``.
    """
    if number == 1 and raw.startswith(codecs.BOM_UTF8):
        raw = raw[len(codecs.BOM_UTF8) :]
    text = raw.decode("utf-8", errors=errors)
    return text.strip() if strip else text.rstrip("\r\n")


def iter_text_lines(path: str | Path, *, errors: str = "strict", strip: bool = True) -> Iterator[tuple[int, str]]:
    """Yield ``(line number, text)`` of a plain or ``.gz`` UTF-8 file (`decode_line` per line).

    Raises:
        DataError: Missing file, directory, unreadable, invalid gzip or invalid UTF-8 (with line
            and column).
    """
    for number, raw in enumerate(iter_byte_lines(path), start=1):
        try:
            yield number, decode_line(raw, number, errors, strip)
        except UnicodeDecodeError as err:
            raise invalid_utf8(path, err, number) from None


def invalid_utf8(where: str | Path, err: UnicodeDecodeError, first_line: int = 1) -> DataError:
    """The one-line error for the first byte that `err` could not decode: its line (counting from
    `first_line`, the line `err.object` starts on) and its column (in bytes, from 1)."""
    data, start = err.object, err.start
    line = first_line + data.count(b"\n", 0, start)
    column = start - (data.rfind(b"\n", 0, start) + 1) + 1
    return DataError(f"{where}, line {line}: invalid UTF-8 (byte 0x{data[start]:02x} at column {column})")


def read_lines(path: str | Path, *, errors: str = "strict") -> list[str]:
    """Read a text file as a list of stripped lines.

    Args:
        path: Plain or ``.gz`` (by suffix) UTF-8 file.
        errors: ``"strict"`` raises on invalid UTF-8; ``"replace"`` turns bad bytes into U+FFFD
            (for data whose bad lines a check has already reported or marked for skipping).

    Returns:
        One string per line, without BOM, line end or surrounding whitespace.

    Raises:
        DataError: Missing file, directory, unreadable, invalid gzip, invalid UTF-8 (with line
            and column) or an empty file.
    """
    lines = [text for _, text in iter_text_lines(path, errors=errors)]
    if not lines:
        raise DataError(f"{path}: empty file")
    return lines


def read_parallel(src_path: str | Path, tgt_path: str | Path) -> list[tuple[str, str]]:
    """Read a sentence-aligned pair of files (line *i* of one translates line *i* of the other).

    Args:
        src_path: Source-language file.
        tgt_path: Target-language file.

    Returns:
        ``(source, target)`` pairs in file order.

    Raises:
        DataError: Either file cannot be read (see `read_lines`) or the line counts differ.
    """
    src, tgt = read_lines(src_path), read_lines(tgt_path)
    if len(src) != len(tgt):
        raise DataError(
            f"{src_path} has {len(src)} lines but {tgt_path} has {len(tgt)}; run `attnkit data check {src_path} {tgt_path}` to see where they diverge"
        )
    return list(zip(src, tgt))


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, object)`` of a JSONL file (blank lines skipped); anything but a JSON
    object on a line is a `DataError` naming the file and line."""
    for number, line in iter_text_lines(path, strip=False):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise DataError(f"{path}, line {number}: invalid JSON ({err.msg} at column {err.colno})") from None
        if not isinstance(row, dict):
            raise DataError(f"{path}, line {number}: expected a JSON object, got {type(row).__name__}")
        yield number, row
