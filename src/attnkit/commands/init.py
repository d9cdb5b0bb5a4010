"""`attnkit init FAMILY --train FILE... --valid FILE... [--out my.yaml]`: a commented config for one's
own files, which `attnkit train my.yaml --out RUN` accepts; and the same files straight into
`attnkit train FAMILY --train FILE... --valid FILE... --out RUN`, which trains that config
(docs/your-data.md).

The core adds the options every family shares; each family's `Starter` adds its own, reads what it
needs of the files (a bad file is one error line naming the file and the line, before anything is
written) and writes the YAML. The result is validated against the family's schema before it is
printed, written or trained, so `init` never hands out a config that `train` refuses.
"""

from __future__ import annotations

import argparse
import logging
import shlex
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from attnkit.errors import ConfigError

if TYPE_CHECKING:  # the families (and torch) load when the parser is built, not when this module is imported
    from attnkit.config.schema import RunBase
    from attnkit.families.protocol import Family, Starter

log = logging.getLogger("attnkit")


@dataclass(frozen=True)
class FamilyFiles:
    """A family's file options on `attnkit train`: its starter, the options it added and those it needs."""

    starter: Starter
    actions: tuple[argparse.Action, ...]
    needed: tuple[argparse.Action, ...]


def starters(families: Mapping[str, Family]) -> dict[str, Starter]:
    """The families that `init` (and `train FAMILY`) take, name -> `Starter`."""
    return {name: family.starter for name, family in families.items() if family.starter is not None}


def add_files(parser: argparse.ArgumentParser, files: str) -> None:
    """`--train` and `--valid`, which every family takes; `files` says what they hold."""
    parser.add_argument("--train", nargs="+", metavar="FILE", help=f"the training data: {files}")
    parser.add_argument("--valid", nargs="+", metavar="FILE", help="the validation data (as --train)")


def add_family_files(parser: argparse.ArgumentParser, families: Mapping[str, Family]) -> dict[str, FamilyFiles]:
    """`--train`, `--valid` and every family's own options, a group each, on `attnkit train`. None is
    required there (a config file needs none): `family_run` asks for a family's own when it is named."""
    add_files(parser, "your files, with a FAMILY for CONFIG (what each family takes: `attnkit init FAMILY --help`)")
    options = {}
    for name, starter in starters(families).items():
        group = parser.add_argument_group(f"{name} options (attnkit train {name} ...)")
        starter.add_arguments(group)
        actions = tuple(group._group_actions)
        needed = tuple(a for a in actions if a.required)
        options[name] = FamilyFiles(starter, actions, needed)
        for action in needed:
            action.required = False
        if needed:
            group.description = f"required with {name}: {', '.join(a.option_strings[0] for a in needed)}"
    return options


def family_config(starter: Starter, args: argparse.Namespace, source: str, overrides: Iterable[str] = ()) -> tuple[str, RunBase]:
    """The commented YAML that `starter` writes for the files of `args` (checked first: `DataError`), and
    the run it validates to with `--set` overrides; `source` names it in errors (`attnkit init parsing`).
    Logs the own-data rule's line for these files (and that `--set` values win over it)."""
    import yaml

    from attnkit.config.load import apply_override
    from attnkit.families import validate_run

    text, defaults = starter.config(args)
    overrides = list(overrides)
    log.info("%s%s", defaults.summary(), f"; --set wins: {' '.join(overrides)}" if overrides else "")
    tree = yaml.safe_load(text)
    for assignment in overrides:
        apply_override(tree, assignment)
    return text, validate_run(tree, source + (f" (with --set {' '.join(overrides)})" if overrides else ""))


def _given(args: argparse.Namespace, actions: Iterable[argparse.Action]) -> list[argparse.Action]:
    return [a for a in actions if getattr(args, a.dest) != a.default]


def family_run(args: argparse.Namespace, options: Mapping[str, FamilyFiles]) -> RunBase | None:
    """The run of `attnkit train FAMILY --train ... --valid ...` (init's config for those files, with
    `--set`), or None when `args.config` names no family; refuses another family's options, and file
    options beside a config file."""
    name = args.config
    chosen = options.get(name)
    beside = f"a config file ({name})" if chosen is None else f"attnkit train {name}"
    for other, each in options.items():
        given = _given(args, each.actions) if other != name else []
        if given:
            raise ConfigError(f"{given[0].option_strings[0]}: an option of attnkit train {other}, not of {beside}")
    files = [flag for flag in ("--train", "--valid") if getattr(args, flag[2:])]
    if chosen is None:
        if files:
            raise ConfigError(f"{files[0]}: your files go with a family name ({', '.join(options)}) for CONFIG, not with a config "
                              f"file ({name}), which names its own")  # fmt: skip
        return None
    for action in chosen.needed:
        if getattr(args, action.dest) is None:
            raise ConfigError(f"attnkit train {name}: {action.option_strings[0]} is required ({action.help})")
    return family_config(chosen.starter, args, f"attnkit train {name}", args.set)[1]


def family_words(args: argparse.Namespace, options: Mapping[str, FamilyFiles]) -> str:
    """The file options of `attnkit train FAMILY ...` as they were given (for a command line to repeat)."""
    words = [word for flag in ("train", "valid") if getattr(args, flag) for word in (f"--{flag}", *getattr(args, flag))]
    for action in _given(args, options[args.config].actions):
        value = getattr(args, action.dest)
        words += [action.option_strings[0], *(map(str, value) if isinstance(value, list) else [str(value)])]
    return " " + shlex.join(words)


def cmd_init(args: argparse.Namespace) -> int:
    from attnkit.io import atomic_write_text

    text, _ = family_config(args.starter, args, f"attnkit init {args.family_name}")
    if args.out:
        atomic_write_text(args.out, text)
        print(f"wrote {args.out}; train with: attnkit train {args.out} --out runs/{args.family_name}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def add(sub: argparse._SubParsersAction, families: Mapping[str, Family]) -> None:
    chosen = starters(families)
    examples = "\n".join(f"  {starter.example}" for starter in chosen.values())
    p = sub.add_parser(
        "init",
        help="write a commented config for your own data files, to edit (then: attnkit train my.yaml --out RUN)",
        description="Write a commented config that trains a model on your own files, to read and edit before training (docs/your-data.md). "
        "To train on the files as they are, `attnkit train FAMILY --train ... --valid ... --out RUN` does both steps.",
        epilog=f"examples:\n{examples}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    kinds = p.add_subparsers(dest="family_name", required=True, metavar="FAMILY")
    for name, starter in chosen.items():
        q = kinds.add_parser(name, help=f"a {name} config", epilog=f"example:\n  {starter.example}", formatter_class=argparse.RawDescriptionHelpFormatter,
                             description=f"Check your files and write a commented {name} config for them; then: attnkit train CONFIG --out RUN.")  # fmt: skip
        add_files(q, starter.files)
        q.add_argument("--out", metavar="FILE", help="write the config to this file (default: standard output)")
        starter.add_arguments(q)
        q.set_defaults(func=cmd_init, starter=starter)
