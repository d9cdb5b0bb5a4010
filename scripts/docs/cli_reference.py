"""mkdocs hook: the site's command-line reference (`reference/cli.md`), written at build time from
`attnkit.cli.build_parser()` itself, so that it cannot drift from the program.

Every subcommand (and sub-subcommand, such as `data fetch`) gets a heading, its usage line, its
description and a table of its arguments with their help and defaults, as `--help` prints them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mkdocs.structure.files import File

SRC_URI = "reference/cli.md"
WIDTH = 100
INTRO = """# Command line

Every command of `attnkit` (also `python -m attnkit`), with its arguments. This page is generated
when the site is built, from the argparse parser the program itself uses
(`attnkit.cli.build_parser()`, walked by `scripts/docs/cli_reference.py`), so it always matches
`attnkit COMMAND --help`. Errors are one line (`attnkit: error: ...`) and a non-zero exit status:
see [Bad input and error lines](../errors.md).
"""


def on_files(files, config):
    """Add the generated page to the site's files."""
    files.append(File.generated(config, SRC_URI, content=render()))
    return files


def render() -> str:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))
    from attnkit.cli import build_parser

    parser = build_parser()
    lines = [INTRO, "## `attnkit`", "", *_section(parser)]
    for name, sub in _subcommands(parser, "attnkit"):
        lines += [f"## `{name}`", "", *_section(sub)]
    return "\n".join(lines) + "\n"


def _subcommands(parser: argparse.ArgumentParser, prefix: str):
    """(full name, parser) of every subcommand below `parser`, depth first, in the parser's order."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                full = f"{prefix} {name}"
                yield full, sub
                yield from _subcommands(sub, full)


def _section(parser: argparse.ArgumentParser) -> list[str]:
    formatter = parser.formatter_class(prog=parser.prog, width=WIDTH)  # the terminal's width would vary by machine
    usage = formatter._format_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups, "").strip()
    lines = ["```text", usage, "```", ""]
    if parser.description:
        lines += [_escape(parser.description), ""]
    rows = [_row(formatter, action) for action in parser._actions if not isinstance(action, argparse._HelpAction) and action.help != argparse.SUPPRESS]
    if rows:
        lines += ["| argument | what it does | default |", "|---|---|---|", *rows, ""]
    return lines


def _row(formatter: argparse.HelpFormatter, action: argparse.Action) -> str:
    if isinstance(action, argparse._SubParsersAction):
        names = ", ".join(f"`{name}`" for name in action.choices)
        return f"| `{action.metavar or action.dest}` | one of {_escape(names)} |  |"
    name = ", ".join(action.option_strings) or (action.metavar if isinstance(action.metavar, str) else action.dest)
    if action.option_strings and action.nargs != 0:
        name += " " + formatter._format_args(action, formatter._get_default_metavar_for_optional(action))
    text = formatter._expand_help(action) if action.help else ""
    default = action.default
    shown = "" if default in (None, False, [], argparse.SUPPRESS) or action.nargs == 0 else f"`{default}`"
    return f"| `{_escape(name)}` | {_escape(text)} | {_escape(shown)} |"


def _escape(text: str) -> str:
    """Keep a table cell one cell (pipes escaped, newlines folded) and `<kind>` text, not an HTML tag."""
    parts = " ".join(text.split()).replace("|", "\\|").split("`")
    return "`".join(part if i % 2 else part.replace("<", "&lt;").replace(">", "&gt;") for i, part in enumerate(parts))
