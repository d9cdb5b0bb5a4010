"""Command-line values: argparse types that range-check numbers, the dtype flag, and reading input lines.

Shared by the generic commands (`attnkit.commands`) and the verbs each family adds.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from attnkit.data.text import invalid_utf8, read_lines
from attnkit.errors import DataError


def _number(kind: type, check: Callable[[Any], bool], need: str) -> Callable[[str], Any]:
    """An argparse type: `kind(text)`, refused with `need` unless `check(value)`."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not check(value):
            raise argparse.ArgumentTypeError(f"must be {need}, got {text}")
        return value

    return parse


positive_int = _number(int, lambda v: v >= 1, ">= 1")
non_negative_int = _number(int, lambda v: v >= 0, ">= 0")
positive_float = _number(float, lambda v: v > 0, "> 0")
non_negative_float = _number(float, lambda v: v >= 0, ">= 0")
port = _number(int, lambda v: 0 <= v <= 65535, "a port number from 0 to 65535")

# Decoding with float32 or bfloat16 weights, or int8 linear layers (torch.qint8: dynamic quantisation, CPU only).
DTYPES = {"fp32": None, "bf16": torch.bfloat16, "int8": torch.qint8}


def add_dtype(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dtype",
        choices=list(DTYPES),
        default="fp32",
        help="bf16: decode with bfloat16 weights (faster on CPUs with bf16 units); int8: dynamic int8 linear layers (CPU)",
    )


def add_checkpoint(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--checkpoint", default="best", help="best (default), last, or a step number")


def read_input(path: str | None) -> list[str]:
    """The lines of `path`, or of stdin (UTF-8, stripped) when None."""
    if path is None:
        try:
            return [line.rstrip("\r\n").strip() for line in sys.stdin.buffer.read().decode("utf-8").splitlines()]
        except UnicodeDecodeError as e:
            raise invalid_utf8("<stdin>", e) from None
    return read_lines(path)


def read_document(path: str) -> str:
    """The whole of file `path` (stdin for `-`) as one text: UTF-8, its BOM dropped, its lines kept."""
    where = "<stdin>" if path == "-" else path
    try:
        data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as e:
        raise DataError(f"{path}: cannot read the document: {e.strerror}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise invalid_utf8(where, e) from None
    if not text.strip():
        raise DataError(f"{where}: the document is empty")
    return text


def add_text(parser: argparse.ArgumentParser, what: str = "sentences") -> None:
    """The house way to take text: TEXT arguments, else `--input FILE` (one a line), else stdin."""
    parser.add_argument("text", nargs="*", help=f"{what} (default: --input, else stdin, one a line)")
    parser.add_argument("--input", metavar="FILE", help=f"a file of {what}, one a line (default: stdin)")


def read_texts(args: argparse.Namespace) -> tuple[list[str], str]:
    """The texts of `add_text` (TEXT arguments, --input or stdin) and where they came from: `text`, the
    file or `<stdin>` (errors name a line as `f"{source}, line {n}"`)."""
    if args.text and args.input:
        raise DataError(f"give text or --input {args.input}, not both")
    if args.text:
        return list(args.text), "text"
    return read_input(args.input), args.input or "<stdin>"


def example(*lines: str) -> str:
    """A parser's epilog: its example command lines."""
    return "example:\n" + "".join(f"  {line}\n" for line in lines)
