"""`attnkit presets`: the built-in configs (each family's `presets/*.yaml`, `attnkit.families.presets`),
one line each, and how a command turns a preset name into its file (`config_path`, with "did you
mean" for a typo)."""

from __future__ import annotations

import argparse
import difflib
import re
from collections.abc import Sequence
from pathlib import Path

from attnkit.config.args import example
from attnkit.errors import ConfigError
from attnkit.families import presets

ABBREVIATION = re.compile(r"\b(et al|sec|e\.g|i\.e|cf|vs)\.$")


def config_path(name: str, families: Sequence[str] = ()) -> Path:
    """A config file path, or the name of a built-in preset (e.g. `m30k-small`); an unknown name with no
    file suffix is refused with the nearest preset names (and `families`, where the command takes one)."""
    path = Path(name)
    if path.exists() or path.suffix:
        return path
    known = presets()
    if name in known:
        return known[name]
    close = difflib.get_close_matches(name, [*known, *families], n=3)
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    what = "config file, preset or family" if families else "config file or preset"
    raise ConfigError(f"{name}: no such {what}{hint} (`attnkit presets` lists them)")


def summary(path: Path) -> str:
    """The first clause of a preset's leading comment: up to a full stop, or a colon or semicolon outside
    brackets (`Transformer sized for Multi30k En->De on a CPU (PEERS.md's "M30K-small")`)."""
    words: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        words.append(line.lstrip("#").strip())
    text, depth = " ".join(words), 0
    for i, c in enumerate(text):
        depth += (c in "([") - (c in ")]")
        ends = (c == "." and not ABBREVIATION.search(text[: i + 1])) or (c in ":;" and depth == 0)
        if ends and (i + 1 == len(text) or text[i + 1] == " "):
            return text[:i].strip() or "(no description)"
    return text or "(no description)"


def cmd_presets(args: argparse.Namespace) -> int:
    known = presets()
    width = max(map(len, known))
    for name, path in known.items():
        print(f"{name:<{width}}  {summary(path)}")
    return 0


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("presets", help="list the built-in configs (presets), one line each",
                       description="The built-in configs that `attnkit train NAME` and `attnkit sweep NAME` accept, with what each trains.",
                       epilog=example("attnkit presets"))  # fmt: skip
    p.set_defaults(func=cmd_presets)
