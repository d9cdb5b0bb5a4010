"""The `attnkit` command: a thin dispatcher over the generic verbs (`attnkit.commands`) and the verbs
each model family adds (`attnkit.families`).

This is the only module that catches `AttnkitError` (printed as one line, exit status 2). A closed
stdout (`attnkit evalb GOLD TEST | head -1`) ends a command quietly with status 141, as a Unix tool
that SIGPIPE ends: nothing on stderr.
"""

from __future__ import annotations

import argparse
import logging
import os
import select
import sys
from collections.abc import Sequence

from attnkit import __version__
from attnkit.commands import analysis, attention, data, doctor, explore, init, sweep, training
from attnkit.commands.training import PRESETS
from attnkit.errors import AttnkitError

SIGPIPE_STATUS = 128 + 13  # a closed stdout: the status of a process that SIGPIPE ended (`yes | head`), which `set -o pipefail` sees
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
    init.add(sub, FAMILIES)
    training.add(sub)
    sweep.add(sub)
    explore.add_evaluate(sub, FAMILIES)
    explore.add(sub)
    analysis.add(sub)
    attention.add(sub)
    data.add(sub, FAMILIES)
    doctor.add(sub)
    for family in FAMILIES.values():
        family.add_commands(sub)
    return parser


def _setup_logging(verbose: bool) -> None:
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO, format="%(levelname)s: %(message)s")


def _stdout_closed() -> bool:
    """Whether stdout is a pipe whose reader has gone (poll reports an error on its write end)."""
    try:
        poll = select.poll()
        poll.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & (select.POLLERR | select.POLLHUP) for _, events in poll.poll(0))
    except (AttributeError, OSError, ValueError):  # no poll (Windows), or stdout is not a real file: trust the error
        return True


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's final flush of what is still buffered
    for a closed pipe cannot fail again and print "Exception ignored ... BrokenPipeError"."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


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
        status = args.func(args)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's own flush at exit
        return status
    except BrokenPipeError as e:  # `attnkit ... | head`: the reader has gone, so end quietly, as Unix tools do
        if not _stdout_closed():  # another pipe broke (a helper process died): that is an error
            print(f"attnkit: error: {e.strerror or e}", file=sys.stderr)
            return 2
        _silence_stdout()
        return SIGPIPE_STATUS
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
