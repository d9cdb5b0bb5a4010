"""`attnkit data`: the data tools of the model families (`Family.data_commands`), one verb.

The core names no corpus: each family adds its own subcommands (`attnkit data fetch multi30k`,
`attnkit data check SRC TGT` come from the translation family) and gets `load_config` to read a
`--config` file or preset.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from attnkit.config.args import example


def load_config(name: str) -> Any:
    """A validated run config: a file, or the name of a built-in preset."""
    from attnkit.commands.presets import config_path
    from attnkit.families import load_config as load

    return load(config_path(name))


def add(sub: argparse._SubParsersAction, families: Mapping[str, Any]) -> None:
    data = sub.add_parser("data", help="fetch and check data", description="Data tools of the model families.")
    commands = data.add_subparsers(dest="data_command", required=True, metavar="COMMAND")
    for family in families.values():
        family.data_commands(commands, load_config)
    data.epilog = example(*(p.epilog.splitlines()[1].strip() for p in commands.choices.values() if p.epilog))  # the tools' own examples
