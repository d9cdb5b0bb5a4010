"""The model families, in one explicit table: the only place in attnkit that names them.

`FAMILIES` maps a family's name to its `Family` (`attnkit.families.protocol`); `family_of` finds
the family of a `model.kind`. `load_config` validates a config file against the family its
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
from attnkit.families import sentence, translation
from attnkit.families.protocol import Family

FAMILIES: dict[str, Family] = {
    "translation": translation.FAMILY,
    "classification": sentence.FAMILY,
}
DEMO = translation.demo  # what `attnkit demo` trains and shows

KINDS: dict[str, Family] = {kind: family for family in FAMILIES.values() for kind in family.kinds}


def family_of(kind: str) -> Family:
    """The family that builds models of `kind` (KeyError if none)."""
    return KINDS[kind]


def validate_run(tree: dict[str, Any], source: str) -> RunBase:
    """Validate a config tree as a run of the family its `model.kind` names (default: the Transformer)."""
    model = tree.get("model")
    if isinstance(model, dict):
        kind = model.setdefault("kind", DEFAULT_MODEL_KIND)
        if kind not in KINDS:
            known = ", ".join(repr(k) for k in KINDS)
            raise ConfigError(f"{source}: model.kind: unknown model kind {kind!r} (known: {known})")
    else:
        kind = DEFAULT_MODEL_KIND
    return validate(tree, source, KINDS[kind].run_schema)


def load_config(path: str | Path, overrides: Iterable[str] = ()) -> RunBase:
    """Load, override and validate a run config (file or preset path)."""
    return validate_run(*read_config(path, overrides))


def load_run(run_dir: str | Path, which: str = "best", device: str | torch.device = "cpu", dtype: torch.dtype | None = None) -> runs.LoadedRun:
    """Load a run folder of any family (see `attnkit.artifacts.runs.load_run`)."""
    kind = runs.model_kind(run_dir)
    if kind not in KINDS:
        raise CheckpointError(f"{run_dir}: model kind {kind!r} is not one this attnkit knows ({', '.join(KINDS)})")
    return runs.load_run(run_dir, KINDS[kind], which, device, dtype)
