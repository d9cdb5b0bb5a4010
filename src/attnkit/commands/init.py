"""`attnkit init FAMILY --train FILE... --valid FILE... [--out my.yaml]`: a commented config for one's
own files, which `attnkit train my.yaml --out RUN` accepts (docs/your-data.md).

The core adds the options every family shares; each family's `Starter` adds its own, reads what it
needs of the files (a bad file is one error line naming the file and the line, before anything is
written) and writes the YAML. The result is validated against the family's schema before it is
printed or written, so `init` never hands out a config that `train` refuses.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from typing import Any


def cmd_init(args: argparse.Namespace) -> int:
    import yaml

    from attnkit.families import validate_run
    from attnkit.io import atomic_write_text

    text = args.starter.config(args)
    validate_run(yaml.safe_load(text), f"attnkit init {args.family_name}")
    if args.out:
        atomic_write_text(args.out, text)
        print(f"wrote {args.out}; train with: attnkit train {args.out} --out runs/{args.family_name}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def add(sub: argparse._SubParsersAction, families: Mapping[str, Any]) -> None:
    starters = {name: family.starter for name, family in families.items() if family.starter is not None}
    examples = "\n".join(f"  {starter.example}" for starter in starters.values())
    p = sub.add_parser(
        "init",
        help="write a commented config for your own data files (then: attnkit train my.yaml --out RUN)",
        description="Write a commented config that trains a model on your own files (docs/your-data.md).",
        epilog=f"examples:\n{examples}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    kinds = p.add_subparsers(dest="family_name", required=True, metavar="FAMILY")
    for name, starter in starters.items():
        q = kinds.add_parser(name, help=f"a {name} config", epilog=f"example:\n  {starter.example}", formatter_class=argparse.RawDescriptionHelpFormatter,
                             description=f"Check your files and write a commented {name} config for them; then: attnkit train CONFIG --out RUN.")  # fmt: skip
        q.add_argument("--train", nargs="+", metavar="FILE", help=f"the training data: {starter.files}")
        q.add_argument("--valid", nargs="+", metavar="FILE", help="the validation data (as --train)")
        q.add_argument("--out", metavar="FILE", help="write the config to this file (default: standard output)")
        starter.add_arguments(q)
        q.set_defaults(func=cmd_init, starter=starter)
