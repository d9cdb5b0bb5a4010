"""The `attnkit` command: a thin dispatcher over the generic verbs (`attnkit.commands`) and the verbs
each model family adds (`attnkit.families`).

This is the only module that catches `AttnkitError` (printed as one line, exit status 2). A closed
stdout (`attnkit evalb GOLD TEST | head -1`) ends a command quietly with status 141, as a Unix tool
that SIGPIPE ends: nothing on stderr.
"""

from __future__ import annotations

import argparse
import difflib
import logging
import os
import select
import shutil
import sys
import textwrap
from collections.abc import Sequence

from attnkit import __version__
from attnkit.commands import analysis, attention, data, doctor, explore, init, presets, sweep, training
from attnkit.errors import AttnkitError

SIGPIPE_STATUS = 128 + 13  # a closed stdout: the status of a process that SIGPIPE ended (`yes | head`), which `set -o pipefail` sees

__all__ = ["main"]


# `attnkit --help` lists the commands in these groups, in this order: the core's verbs here, then the verbs
# of the families, each in the group its parser names (`set_defaults(group="use")`); any other under "other".
GROUPS = {
    "start": ("doctor", "demo", "presets", "init", "config", "data"),
    "train": ("train", "sweep", "average"),
    "use": ("evaluate",),
    "explore": ("attention", "plot", "report", "heads", "faithfulness"),
    "deploy": ("serve",),
}
EXAMPLES = (
    ("attnkit demo", "train a small translator for a few minutes, then show its attention"),
    ("attnkit train m30k-small --out runs/m30k", "train a preset (`attnkit presets` lists them)"),
    ('attnkit report Helsinki-NLP/opus-mt-en-de "A dog runs." --out report.html', "a Hugging Face model's attention as a web page"),
)


# Options as other tools spell them, and the names they may mean here (docs/conventions.md, "Command line"): an unknown
# option is answered with those of them the command has, else with the command's options it is close to (difflib).
OTHER_SPELLINGS = {
    **dict.fromkeys(("--output", "-o"), ("--out", "--attribute-target")),
    **dict.fromkeys(("--dest", "--out-dir", "--output-dir", "--outdir", "--save", "--html", "--png", "--attention-png"), ("--out",)),
    **dict.fromkeys(("--in", "--file", "--input-file", "--text", "--sentence"), ("--input",)),
    **dict.fromkeys(("--jobs", "-j", "--batch-workers", "--num-workers", "--threads", "--processes"), ("--workers",)),
    **dict.fromkeys(("--data-dir", "--corpus"), ("--data",)),
    "--data": ("--input", "--labelled"),
}


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return next((a.choices for a in parser._actions if isinstance(a, argparse._SubParsersAction)), {})


class CommandParser(argparse.ArgumentParser):
    """argparse with the house error format: one line `attnkit: error: ...`, exit status 2, and "did you
    mean" for a mistyped choice (a command, a subcommand, a `--dtype`) or an unknown option."""

    def error(self, message: str):
        self.exit(2, f"attnkit: error: {message} (see `{self.prog} --help`)\n")

    def parse_known_args(self, args=None, namespace=None):
        """Refuses what this parser does not know (a command's own parser before its caller's, so the error names the
        command), with the option most likely meant."""
        words = list(sys.argv[1:] if args is None else args)
        words = words[: words.index("--")] if "--" in words else words
        unknown = [w for w in words if w[:2] == "--" and not any(o.startswith(w.split("=", 1)[0]) for o in self._option_string_actions)]
        if unknown and not _subcommands(self):  # before a missing required option: the unknown one may be meant for it
            self.error(f"unrecognized arguments: {' '.join(unknown)}{self._meant(unknown)}")
        namespace, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}{self._meant(extras)}")
        return namespace, extras

    def _meant(self, extras: list[str]) -> str:
        """ "; did you mean OPTION?" for the first unknown option in `extras` that is close to one of this parser's."""
        options = {o.lstrip("-"): o for a in self._actions if a.help is not argparse.SUPPRESS for o in a.option_strings}  # "workers": "--workers"
        for flag in (word.split("=", 1)[0] for word in extras if word.startswith("-")):
            close = [o for o in OTHER_SPELLINGS.get(flag, ()) if o in options.values()]
            close = close or [options[o] for o in difflib.get_close_matches(flag.lstrip("-"), options, n=3)]
            if close:
                return f"; did you mean {' or '.join(close)}?"
        return ""

    def _check_value(self, action: argparse.Action, value: object) -> None:
        if action.choices is not None and value not in action.choices:
            names = [str(choice) for choice in action.choices]
            deeper = (
                [f"{name} {value}" for name in names if value in _subcommands(action.choices[name])] if isinstance(action, argparse._SubParsersAction) else []
            )
            close = deeper or difflib.get_close_matches(str(value), names, n=3)
            hint = f"did you mean {' or '.join(close)}?" if close else f"choose from {', '.join(names)}"
            raise argparse.ArgumentError(action, f"invalid choice: {value!r}; {hint}")


class HelpFormatter(argparse.HelpFormatter):
    """Shows each option's default (when it is not None, False or empty, and the help does not already
    say it), wraps a one-paragraph description, and keeps a text with line breaks (the command map, the
    examples) as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text:
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)

    def _get_help_string(self, action: argparse.Action) -> str:
        help, default = action.help or "", action.default
        if help is argparse.SUPPRESS or "default" in help or default is None or default is False or default is argparse.SUPPRESS or default == []:
            return help
        return f"{help} (default: %(default)s)"


def takes_hub_models(parser: argparse.ArgumentParser) -> bool:
    """Whether an argument of the command takes a Hugging Face model (its help says "hub id")."""
    return any("hub id" in (a.help or "").lower() for a in parser._actions)


def command_map(sub: argparse._SubParsersAction) -> str:
    """The commands by group (`GROUPS`, then a family verb's own `group`, then "other"), one line each, and
    which take Hugging Face models."""
    helps = {a.dest: a.help or "" for a in sub._choices_actions}
    width = shutil.get_terminal_size().columns - 2
    name_width = max(map(len, helps)) + 2
    own = {n: sub.choices[n].get_default("group") for n in helps if not any(n in names for names in GROUPS.values())}
    grouped = {group: [n for n in names if n in helps] + [n for n, g in own.items() if g == group] for group, names in GROUPS.items()}
    grouped["other"] = [n for n, g in own.items() if g not in GROUPS]
    lines = []
    for group, names in grouped.items():
        if names:
            lines.append(f"\n{group}:")
            lines += [textwrap.fill(helps[n], max(width, 60), initial_indent=f"  {n:<{name_width}}", subsequent_indent=" " * (name_width + 2))
                      for n in names]  # fmt: skip
    hf = [n for n in helps if takes_hub_models(sub.choices[n])]
    lines.append("\n" + textwrap.fill(f"Hugging Face models (a hub id or a save_pretrained folder) go into: {', '.join(hf)}.", max(width, 60)))
    lines.append(textwrap.fill("`attnkit COMMAND --help` shows its options, their defaults and an example; docs/ has a page per topic.", max(width, 60)))
    return "\n".join(lines) + "\n"


def build_parser() -> argparse.ArgumentParser:
    from attnkit.families import FAMILIES

    examples = "examples:\n" + "".join(f"  {command}\n      {what}\n" for command, what in EXAMPLES)
    parser = CommandParser(prog="attnkit", usage="attnkit [-h] [--version] [-v] COMMAND ...", epilog=examples)
    parser.add_argument("--version", action="version", version=f"attnkit {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", help=argparse.SUPPRESS, prog="attnkit")
    init.add(sub, FAMILIES)
    presets.add(sub)
    training.add(sub, FAMILIES)
    sweep.add(sub)
    explore.add_evaluate(sub, FAMILIES)
    explore.add(sub)
    analysis.add(sub)
    attention.add(sub)
    data.add(sub, FAMILIES)
    doctor.add(sub)
    for family in FAMILIES.values():
        family.add_commands(sub, explore.write_page)
    parser.description = "Train, decode, evaluate and look inside attention models.\n" + command_map(sub)
    for each in _parsers(parser):
        each.formatter_class = HelpFormatter
    return parser


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """`parser` and every subcommand's parser under it."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return [parser, *(p for a in subs for child in a.choices.values() for p in _parsers(child))]


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
    if argv is None:  # a real command line, not a library call (attnkit.__main__ re-executed it on jemalloc if it could)
        words = sys.argv[1:]
        _setup_logging(bool({"-v", "--verbose"} & set(words)))
        from attnkit.allocator import use_jemalloc_for

        use_jemalloc_for(words)  # says which allocator runs (-v)
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
