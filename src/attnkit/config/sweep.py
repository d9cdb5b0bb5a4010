"""What a sweep is: a base config, overrides every variant shares, a budget, and named variants.

A variant is a name and a list of `--set` overrides (`model.n_heads=8`). Variants come from
`--grid KEY=V1,V2,...` (the product of every grid, named `n_heads=8,layers=2`) and from a sweep
file, whose named variants may change several keys at once (a row of the paper's Table 3):

```yaml
config: m30k-small            # a preset name or a path (relative to this file)
steps: 2000                   # the budget of every variant: steps or minutes
set: [train.eval_every=500]   # overrides every variant shares
variants:
  base: {}
  A-h1: {model.n_heads: 1, model.d_k: 256, model.d_v: 256}
grid: {model.dropout: [0.0, 0.2]}   # optional: crossed with the named variants
```

Not Hydra's multirun or Optuna: the first would own the command line and the config, the second
samples a search space; docs/design/libraries.md says why.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import PositiveFloat, PositiveInt, model_validator

from attnkit.config.load import read_yaml, validate
from attnkit.config.schema import Strict
from attnkit.errors import ConfigError

_UNSAFE = re.compile(r"[^\w.,=+-]")  # characters a variant's folder name replaces by "_"


@dataclass(frozen=True)
class Variant:
    """One row of a sweep: its name and the `--set` overrides that make it."""

    name: str
    overrides: tuple[str, ...] = ()

    @property
    def folder(self) -> str:
        """The run folder's name inside the sweep folder."""
        return _UNSAFE.sub("_", self.name)


@dataclass(frozen=True)
class Sweep:
    """A base config, overrides every variant shares, the budget (as overrides) and the variants."""

    config: Path
    variants: tuple[Variant, ...]
    budget: tuple[str, ...]
    common: tuple[str, ...] = field(default=())

    def overrides(self, variant: Variant) -> tuple[str, ...]:
        """All overrides of `variant`'s run, in the order they apply (the budget last: it is the same for every row)."""
        return (*self.common, *variant.overrides, *self.budget)


class SweepFile(Strict):
    """The sections of a sweep file (see the module docstring)."""

    config: str
    steps: PositiveInt | None = None
    minutes: PositiveFloat | None = None
    set: list[str] = []
    variants: dict[str, dict[str, Any]] = {}
    grid: dict[str, list[Any]] = {}

    @model_validator(mode="after")
    def _something(self) -> SweepFile:
        if not self.variants and not self.grid:
            raise ValueError("a sweep file needs variants or a grid")
        return self


def is_sweep_file(path: str | Path) -> bool:
    """Whether `path` is a YAML file with a top-level `variants` or `grid` (a sweep, not a run config)."""
    path = Path(path)
    if path.suffix not in (".yaml", ".yml") or not path.is_file():
        return False
    tree = read_yaml(path)
    return "variants" in tree or "grid" in tree


def read_sweep_file(path: str | Path) -> SweepFile:
    """Read and validate a sweep file (errors name the file and key)."""
    return validate(read_yaml(path), str(path), SweepFile)


def value_text(value: Any) -> str:
    """A YAML value as the text after `=` of a `--set` override (`learned`, `0.1`, `null`, `[1, 2]`)."""
    if isinstance(value, str) and yaml.safe_load(value) == value:
        return value
    return json.dumps(value)


def named_variants(variants: dict[str, dict[str, Any]]) -> list[Variant]:
    """A sweep file's `variants` mapping (name -> {key.path: value}) as variants."""
    return [Variant(name, tuple(f"{key}={value_text(value)}" for key, value in changes.items())) for name, changes in variants.items()]


def split_values(text: str) -> list[str]:
    """`1,4,8` -> ["1", "4", "8"]; commas inside brackets stay (`[0.9,0.98],[0.9,0.999]`)."""
    values, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += {"[": 1, "{": 1, "]": -1, "}": -1}.get(char, 0)
        if char == "," and depth == 0:
            values.append(text[start:i].strip())
            start = i + 1
    values.append(text[start:].strip())
    return values


Axis = tuple[str, list[str]]  # a key path and the override texts of its values


def grid_axes(options: Sequence[str]) -> list[Axis]:
    """The axes of `--grid KEY=V1,V2,...` options."""
    axes = []
    for option in options:
        key, sep, values = option.partition("=")
        if not sep or not key.strip() or not values.strip():
            raise ConfigError(f"--grid {option}: expected key.path=value1,value2,...")
        axes.append((key.strip(), split_values(values)))
    return axes


def file_axes(grid: dict[str, list[Any]]) -> list[Axis]:
    """The axes of a sweep file's `grid` mapping (key path -> list of values)."""
    return [(key, [value_text(v) for v in values]) for key, values in grid.items()]


def grid_variants(axes: list[Axis]) -> list[Variant]:
    """One variant per point of the product of `axes`.

    Names are `key=value` joined by commas, each key shortened to its last part unless two axes
    share it (`n_heads=8,layers=2`).
    """
    keys = [key for key, _ in axes]
    if len(set(keys)) != len(keys):
        raise ConfigError(f"--grid: a key is given twice ({', '.join(keys)})")
    if any(not values or "" in values for _, values in axes):
        raise ConfigError("--grid: an empty value (two commas in a row, or a trailing comma)")
    short = [key.rsplit(".", 1)[-1] for key in keys]
    labels = short if len(set(short)) == len(short) else keys
    return [
        Variant(",".join(f"{label}={value}" for label, value in zip(labels, point)), tuple(f"{key}={value}" for key, value in zip(keys, point)))
        for point in itertools.product(*(values for _, values in axes))
    ] if axes else []  # fmt: skip


def combine(named: list[Variant], grid: list[Variant]) -> tuple[Variant, ...]:
    """Named variants crossed with grid points (either alone when the other is empty); names must give distinct folders."""
    if named and grid:
        variants = [Variant(f"{a.name},{b.name}", a.overrides + b.overrides) for a in named for b in grid]
    else:
        variants = named or grid
    if not variants:
        raise ConfigError("nothing to sweep: give --grid KEY=V1,V2,... or a sweep file with variants")
    folders = [v.folder for v in variants]
    clash = sorted({f for f in folders if folders.count(f) > 1})
    if clash:
        raise ConfigError(f"two variants would share the run folder {clash[0]} (rename one)")
    if any(f.startswith(".") or f in ("rows", "logs") for f in folders):
        raise ConfigError(f"a variant's name may not start with '.' or be 'rows' or 'logs' (got {', '.join(folders)})")
    return tuple(variants)


def budget_overrides(steps: int | None, minutes: float | None) -> tuple[str, ...]:
    """The overrides giving every variant the same budget: `steps` updates or `minutes` of training."""
    if (steps is None) == (minutes is None):
        raise ConfigError("give every variant one budget: --steps N or --minutes M (or steps/minutes in the sweep file)")
    if steps is not None:
        return (f"train.max_steps={steps}", "train.max_minutes=null", "train.max_epochs=null")
    return (f"train.max_minutes={minutes}", "train.max_steps=null", "train.max_epochs=null")
