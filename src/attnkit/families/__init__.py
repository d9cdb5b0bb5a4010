"""The model families, in one explicit table: the only place in attnkit that names them.

`FAMILIES` maps a family's name to its `Family` (`attnkit.families.protocol`); `family_of` finds
the family of a `model.kind`, `presets` every family's built-in configs by name. `load_config` validates a config file against the family its
`model.kind` names, and `load_run` loads a run folder of any family. Adding a family is one line
here (docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch

from attnkit.artifacts import runs
from attnkit.config.load import read_config, validate
from attnkit.config.schema import DEFAULT_MODEL_KIND, RunBase
from attnkit.errors import CheckpointError, ConfigError
from attnkit.families import captioning, classification, parsing, translation
from attnkit.families.protocol import Family

FAMILIES: dict[str, Family] = {
    "translation": translation.FAMILY,
    "classification": classification.FAMILY,
    "parsing": parsing.FAMILY,
    "captioning": captioning.FAMILY,
}
DEMO = translation.demo  # what `attnkit demo` trains and shows

MODEL_KINDS: dict[str, Family] = {kind: family for family in FAMILIES.values() for kind in family.kinds}


def presets() -> dict[str, Path]:
    """Every family's presets by name: `m30k-small`, ..., and the sweep files as `sweeps/NAME`.

    Raises:
        ConfigError: two families ship a preset of the same name.
    """
    found: dict[str, Path] = {}
    for family in FAMILIES.values():
        folder = family.presets
        for path in sorted((*folder.glob("*.yaml"), *folder.glob("sweeps/*.yaml"))) if folder else ():
            name = path.relative_to(folder).with_suffix("").as_posix()
            if name in found:
                raise ConfigError(f"{path}: preset {name!r} is also {found[name]}")
            found[name] = path
    return dict(sorted(found.items()))


def family_of(kind: str) -> Family:
    """The family that builds models of `kind` when a config names no `task` (KeyError if none)."""
    return MODEL_KINDS[kind]


def run_family_of(run: RunBase) -> Family:
    """The family of a validated run: the one its `task` names, else the one of its `model.kind`."""
    return FAMILIES[run.task] if run.task else MODEL_KINDS[run.model.kind]


def family_for(tree: dict[str, Any], source: str) -> Family:
    """The family of a config tree: the one its `task` names, else the one of its `model.kind`."""
    task = tree.get("task")
    if task is not None:
        if task not in FAMILIES:
            raise ConfigError(f"{source}: task: unknown task {task!r} (known: {', '.join(FAMILIES)})")
        return FAMILIES[task]
    kind = runs.tree_kind(tree)
    if kind not in MODEL_KINDS:
        raise ConfigError(f"{source}: model.kind: unknown model kind {kind!r} (known: {', '.join(repr(k) for k in MODEL_KINDS)})")
    return MODEL_KINDS[kind]


def validate_run(tree: dict[str, Any], source: str) -> RunBase:
    """Validate a config tree as a run of its family (`family_for`; default: the Transformer)."""
    model = tree.get("model")
    if isinstance(model, dict):
        model.setdefault("kind", DEFAULT_MODEL_KIND)
    return validate(tree, source, family_for(tree, source).run_schema)


def load_config(path: str | Path, overrides: Iterable[str] = ()) -> RunBase:
    """Load, override and validate a run config (file or preset path)."""
    return validate_run(*read_config(path, overrides))


def run_family(run_dir: str | Path) -> Family:
    """The family of a run folder."""
    try:
        return family_for(runs.config_tree(run_dir), f"{run_dir}/config.yaml")
    except ConfigError as e:
        raise CheckpointError(str(e)) from None


def load_run(
    run_dir: str | Path, which: str = "best", device: str | torch.device = "cpu", dtype: torch.dtype | None = None, pack: bool = True
) -> runs.LoadedRun:
    """Load a run folder of any family (see `attnkit.artifacts.runs.load_run`)."""
    return runs.load_run(run_dir, run_family(run_dir), which, device, dtype, pack)
