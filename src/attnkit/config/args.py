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

from attnkit.data.text import read_lines
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
            raise DataError(f"<stdin>: invalid UTF-8 at byte {e.start}") from None
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
        raise DataError(f"{where}: invalid UTF-8 at byte {e.start}") from None
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


class Renamed(argparse.Action):
    """An old spelling of an option (or a positional): one deprecation line on stderr, then it does
    what the new option does, into the same destination. Hidden from the help."""

    def __init__(self, option_strings: list[str], dest: str, *, new: argparse.Action, old: str, **kwargs: Any) -> None:
        nargs = "?" if not option_strings else new.nargs
        super().__init__(option_strings, new.dest, nargs=nargs, type=new.type, choices=new.choices, default=argparse.SUPPRESS,
                         help=argparse.SUPPRESS, metavar=new.metavar)  # fmt: skip
        self.new, self.old = new, old

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option_string: str | None = None) -> None:
        name = self.new.option_strings[0] if self.new.option_strings else self.new.dest.upper()
        old = self.old if self.option_strings else f"{self.old.upper()} as a positional argument"
        print(f"attnkit: {old} is deprecated and will be removed; use {name}", file=sys.stderr)
        self.new(parser, namespace, values, name)


def renamed(container: argparse._ActionsContainer, old: str, new: str) -> None:
    """Keep `old` (an option such as `--output`, or a positional's name such as `out`) working as the
    option `new` of `container` (a parser, or the group holding `new`)."""
    container.add_argument(old, action=Renamed, new=container._option_string_actions[new], old=old)


def moved(sub: argparse._SubParsersAction, old: str, new: str, add_arguments: Callable[[argparse.ArgumentParser], None],
          func: Callable[[argparse.Namespace], int]) -> None:  # fmt: skip
    """Keep the command `attnkit OLD` working a while after it moved to `attnkit NEW` (`caption-shapes` to
    `data caption-shapes`): the same arguments (`add_arguments`), one deprecation line on stderr, then
    `func`. Hidden from the command list; its parser's `moved_to` default says where it went."""
    parser = sub.add_parser(old, description=f"Deprecated: use `attnkit {new}`.")
    add_arguments(parser)

    def run(args: argparse.Namespace) -> int:
        print(f"attnkit: {old} is deprecated and will be removed; use attnkit {new}", file=sys.stderr)
        return func(args)

    parser.set_defaults(func=run, moved_to=new)


def example(*lines: str) -> str:
    """A parser's epilog: its example command lines."""
    return "example:\n" + "".join(f"  {line}\n" for line in lines)
