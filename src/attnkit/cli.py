"""The `attnkit` command: a thin dispatcher over the generic verbs (`attnkit.commands`) and the verbs
each model family adds (`attnkit.families`).

This is the only module that catches `AttnkitError` (printed as one line, exit status 2).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from attnkit import __version__
from attnkit.commands import analysis, attention, data, doctor, explore, sweep, training
from attnkit.commands.training import PRESETS
from attnkit.errors import AttnkitError

JEMALLOC_COMMANDS = {"train", "demo", "sweep", "translate", "evaluate", "serve"}  # re-executed on jemalloc (allocator.py)

__all__ = ["PRESETS", "main"]


class Parser(argparse.ArgumentParser):
    """argparse with the house error format: one line `attnkit: error: ...`, exit status 2."""

    def error(self, message: str):
        self.exit(2, f"attnkit: error: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    from attnkit.families import FAMILIES

    parser = Parser(prog="attnkit", description="Train, decode, evaluate and look inside attention models.")
    parser.add_argument("--version", action="version", version=f"attnkit {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    training.add(sub)
    sweep.add(sub)
    explore.add_evaluate(sub, FAMILIES)
    explore.add(sub)
    analysis.add(sub)
    attention.add(sub)
    data.add(sub)
    doctor.add(sub)
    for family in FAMILIES.values():
        family.add_commands(sub)
    return parser


def _setup_logging(verbose: bool) -> None:
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO, format="%(levelname)s: %(message)s")


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:  # a real command line, not a library call: maybe re-executed on jemalloc first
        words = sys.argv[1:]
        _setup_logging(bool({"-v", "--verbose"} & set(words)))
        if next((w for w in words if not w.startswith("-")), None) in JEMALLOC_COMMANDS:
            from attnkit.allocator import use_jemalloc

            use_jemalloc(["-m", "attnkit", *words])  # before the heavy imports: the process may start again
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:  # --help, --version, or a usage error already printed as one line
        return 0 if e.code is None else int(e.code)
    _setup_logging(args.verbose)
    try:
        return args.func(args)
    except AttnkitError as e:
        print(f"attnkit: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("attnkit: interrupted", file=sys.stderr)
        return 130
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        print(f"attnkit: error: {where}{e.strerror or e}", file=sys.stderr)
        return 2
