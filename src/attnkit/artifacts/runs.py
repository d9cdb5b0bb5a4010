"""Run folders: what a trained model needs besides its weights, written and read back safely.

`RUN/config.yaml` is the resolved config; `RUN/run.json` holds what the run's family stores (its
vocabularies, tokenizer settings, labels; tokenizer models are copied into the folder) and the
versions that wrote it. This module knows no family: it takes the `Family`
(`attnkit.families.protocol`) as an argument. `load_run` validates both files before building the
model and loading weights, so a folder of another family, a vocabulary that does not match the
weights or a corrupt file is one clear error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from attnkit.allocator import limit_primitive_cache
from attnkit.artifacts.checkpoint import find_checkpoint, load_weights
from attnkit.attention.packed import pack_linears
from attnkit.config.load import read_yaml, save_config, validate
from attnkit.config.schema import DEFAULT_MODEL_KIND, RunBase
from attnkit.errors import CheckpointError, ConfigError, DataError
from attnkit.io import atomic_write_text
from attnkit.precision import quantize_int8
from attnkit.version import __version__


@dataclass
class LoadedRun:
    """A run ready for inference: its config, model (eval mode), vocabularies and family, and the engine
    that decodes it (`--engine`; None: attnkit's own search of `model`)."""

    run: Any  # the family's RunBase subclass
    model: nn.Module
    vocabs: Any
    checkpoint: Path
    family: Any  # attnkit.families.protocol.Family
    engine: Any = None  # set by the family's `Engine.attach` (attnkit.families.protocol)

    @property
    def folder(self) -> Path:
        return self.checkpoint.parent.parent


def write_run(run_dir: str | Path, run: RunBase, info: dict[str, Any]) -> None:
    """Write config.yaml and run.json (`info` plus the versions), each atomically, into `run_dir`."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    save_config(run, run_dir / "config.yaml")
    versions = {"attnkit_version": __version__, "torch_version": torch.__version__}
    atomic_write_text(run_dir / "run.json", json.dumps({**versions, **info}, ensure_ascii=False))


def config_tree(run_dir: str | Path) -> dict[str, Any]:
    """The raw YAML tree of a run folder's config.yaml (what picks its family)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise CheckpointError(f"{run_dir}: no such run folder")
    try:
        return read_yaml(run_dir / "config.yaml")
    except ConfigError as e:
        raise CheckpointError(str(e)) from None


def tree_kind(tree: dict[str, Any]) -> Any:
    """A config tree's `model.kind` (the default kind when the model section or its kind is absent)."""
    model = tree.get("model")
    return model.get("kind", DEFAULT_MODEL_KIND) if isinstance(model, dict) else DEFAULT_MODEL_KIND


def describe(tree: dict[str, Any]) -> str:
    """How errors name a config's model: its `task` if it has one, else its `model.kind`."""
    kind = tree_kind(tree)
    return f"{tree['task']} ({kind})" if tree.get("task") else str(kind)


def belongs(tree: dict[str, Any], family: Any) -> bool:
    """Whether a config is one of `family`'s: it names the family as `task`, or (without a task) a
    `model.kind` the family builds."""
    if tree.get("task"):
        return tree["task"] == family.name
    return tree_kind(tree) in family.kinds


def read_run(run_dir: str | Path, family: Any) -> tuple[Any, Any]:
    """Read and validate config.yaml and run.json of a run folder of `family`: (run, vocabs)."""
    run_dir = Path(run_dir)
    tree = config_tree(run_dir)
    if not belongs(tree, family):
        raise CheckpointError(f"{run_dir}: a {describe(tree)} model; this command needs a {family.name} run")
    config = run_dir / "config.yaml"
    try:
        run = validate(tree, str(config), family.run_schema)
    except ConfigError as e:
        raise CheckpointError(str(e)) from None
    path = run_dir / "run.json"
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
        vocabs = family.vocabs_from_json(info, run_dir)
    except FileNotFoundError:
        raise CheckpointError(f"{path}: missing (not a run folder written by attnkit train)") from None
    except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, ValueError, DataError) as e:
        raise CheckpointError(f"{path}: malformed ({type(e).__name__}: {e})") from None
    return run, vocabs


def load_run(
    run_dir: str | Path,
    family: Any,
    which: str = "best",
    device: str | torch.device = "cpu",
    dtype: torch.dtype | None = None,
    pack: bool = True,
) -> LoadedRun:
    """Build the run's model and load a checkpoint (`best`, `last` or a step number), in eval mode.

    `dtype=torch.bfloat16` casts the weights for faster decoding (output log-probs stay float32);
    `dtype=torch.qint8` quantises the linear layers to int8 (`precision.quantize_int8`, CPU only).
    With `pack`, a float model on the CPU multiplies through weights packed for oneDNN
    (`attention.packed.pack_linears`: same parameters and outputs); exporters, which read or trace
    the modules, load with `pack=False`. A run of another family is refused with one clear error.
    """
    if dtype == torch.qint8 and torch.device(device).type != "cpu":
        raise ConfigError(f"int8 decoding runs on the CPU only, not on {device}")
    run, vocabs = read_run(run_dir, family)
    checkpoint = find_checkpoint(run_dir, which)
    limit_primitive_cache(run.train.kernel_cache)  # decoding brings a new matmul shape at every step
    model = family.build(run, vocabs)
    load_weights(model, checkpoint)
    if dtype == torch.qint8:
        return LoadedRun(run, quantize_int8(model.eval()), vocabs, checkpoint, family)
    model = model.to(device=device, dtype=dtype).eval()
    if pack and torch.device(device).type == "cpu":
        pack_linears(model)
    return LoadedRun(run, model, vocabs, checkpoint, family)
