"""Checkpoints: safetensors weights + JSON, written atomically, loaded without unpickling.

A run folder holds `config.yaml` (resolved config), `run.json` (vocabularies, tokenizers, versions)
and `checkpoints/step_NNNNNNNN/` folders, each with:
- `model.safetensors`: the weights of the unwrapped model (tied weights stored once);
- `trainer.safetensors`: optimizer tensors and RNG states (absent in averaged checkpoints);
- `state.json`: the `TrainState`, optimizer hyper-parameters and metrics.

A checkpoint folder is written under a temporary name (`.tmp-...`), fsynced and renamed, and a
folder is deleted by renaming it to a temporary name first, so a crash (even SIGKILL) leaves complete
checkpoints only; `remove_leftovers` deletes what a killed writer left when training starts again.
A write that fails (a full or read-only disk) removes the temporary folder and raises one
`WriteError` naming the file; the checkpoints before it are untouched. Only rank 0 of a run writes
its checkpoints.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, load_model, save_file, save_model
from torch import nn

from attnkit.errors import CheckpointError
from attnkit.io import atomic_dir, remove_dir, remove_temporaries

STEP_DIR = re.compile(r"^step_(\d{8})$")
OS_ERROR = re.compile(r"\(os error (\d+)\)")  # how a SafetensorError names the errno of an I/O error
TMP_PREFIX = ".tmp-"  # folders being written or deleted


def checkpoint_dirs(run_dir: str | Path) -> list[Path]:
    """The run's complete checkpoint folders, oldest first."""
    folder = Path(run_dir) / "checkpoints"
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if STEP_DIR.match(p.name) and (p / "state.json").is_file())


def find_checkpoint(run_dir: str | Path, which: str = "best") -> Path:
    """`best` (the best by the validation metric, else the last), `last`, or a step number."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise CheckpointError(f"{run_dir}: no such run folder")
    dirs = checkpoint_dirs(run_dir)
    if not dirs:
        raise CheckpointError(f"{run_dir}: no checkpoints in this run folder (train first)")
    if which == "last":
        return dirs[-1]
    if which == "best":
        best = run_dir / "best.json"
        if best.is_file():
            path = run_dir / "checkpoints" / read_json(best)["checkpoint"]
            if path.is_dir():
                return path
        return dirs[-1]
    path = run_dir / "checkpoints" / f"step_{int(which):08d}"
    if path not in dirs:
        raise CheckpointError(f"{run_dir}: no checkpoint for step {which}")
    return path


def read_json(path: Path, what: str = "") -> dict[str, Any]:
    """A JSON file of a checkpoint or model folder; one error line if missing (`what`: what the folder should hold) or malformed."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CheckpointError(f"{path}: missing{f' ({what})' if what else ''}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{path}: not valid JSON ({e})") from None


def _optimizer_tensors(optimizer: torch.optim.Optimizer) -> tuple[dict[str, torch.Tensor], list[dict]]:
    sd = optimizer.state_dict()
    tensors = {}
    for pid, slots in sd["state"].items():
        for key, value in slots.items():
            tensors[f"optim.{pid}.{key}"] = torch.as_tensor(value).detach().cpu().contiguous()
    return tensors, sd["param_groups"]


def _restore_optimizer(optimizer: torch.optim.Optimizer, tensors: dict[str, torch.Tensor], groups: list[dict]) -> None:
    state: dict[int, dict[str, torch.Tensor]] = {}
    for name, value in tensors.items():
        if name.startswith("optim."):
            _, pid, key = name.split(".", 2)
            state.setdefault(int(pid), {})[key] = value
    optimizer.load_state_dict({"state": state, "param_groups": groups})


def save_safetensors(save: Callable[[Any, str], None], obj: Any, path: Path) -> None:
    """`save(obj, path)` (safetensors' `save_file` or `save_model`); the I/O error that safetensors
    reports as a `SafetensorError` (e.g. a full disk) is raised as that `OSError`, naming `path`."""
    try:
        save(obj, str(path))
    except SafetensorError as e:
        if "I/O error" not in str(e):
            raise
        found = OS_ERROR.search(str(e))
        code = int(found.group(1)) if found else errno.EIO
        raise OSError(code, os.strerror(code), str(path)) from None


def _write_checkpoint_dir(run_dir: str | Path, step: int, write: Callable[[Path], None]) -> Path:
    """Create `checkpoints/step_{step}` atomically: `write(tmp_dir)`, fsync, rename.

    An `OSError` removes the temporary folder and becomes a `WriteError` naming the file (or folder).
    """
    final = Path(run_dir) / "checkpoints" / f"step_{step:08d}"
    with atomic_dir(final, TMP_PREFIX) as tmp:
        write(tmp)
    return final


def remove_leftovers(run_dir: str | Path) -> list[Path]:
    """Delete what a killed writer left in a run folder: checkpoint folders being written or deleted
    (`checkpoints/.tmp-*`) and atomic-write temporaries. Call it only as the run's one writer."""
    folders = sorted((Path(run_dir) / "checkpoints").glob(f"{TMP_PREFIX}*"))
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)
    return folders + remove_temporaries(run_dir)


def save_checkpoint(
    run_dir: str | Path,
    step: int,
    model: nn.Module,
    *,
    state: dict[str, Any],
    optimizer: torch.optim.Optimizer | None = None,
    rng: dict[str, torch.Tensor] | None = None,
) -> Path:
    """Write the model (and, for resuming, optimizer and RNG states) as `checkpoints/step_{step}`."""

    def write(folder: Path) -> None:
        save_safetensors(save_model, model, folder / "model.safetensors")
        payload = dict(state)
        if optimizer is not None:
            tensors, groups = _optimizer_tensors(optimizer)
            tensors.update({f"rng.{k}": v.cpu().contiguous() for k, v in (rng or {}).items()})
            save_safetensors(save_file, tensors, folder / "trainer.safetensors")
            payload["param_groups"] = groups
        (folder / "state.json").write_text(json.dumps(payload, indent=1), encoding="utf-8")

    return _write_checkpoint_dir(run_dir, step, write)


def save_weights(run_dir: str | Path, step: int, weights: dict[str, torch.Tensor], state: dict[str, Any]) -> Path:
    """Write a checkpoint folder holding just weights (e.g. an average) and state.json."""

    def write(folder: Path) -> None:
        save_safetensors(save_file, {k: v.contiguous() for k, v in weights.items()}, folder / "model.safetensors")
        (folder / "state.json").write_text(json.dumps(state, indent=1), encoding="utf-8")

    return _write_checkpoint_dir(run_dir, step, write)


def load_weights(model: nn.Module, checkpoint: Path) -> None:
    """Load `model.safetensors` into `model`; shape or name mismatches are one clear line."""
    path = checkpoint / "model.safetensors"
    if not path.is_file():
        raise CheckpointError(f"{path}: missing")
    try:
        missing, unexpected = load_model(model, str(path), strict=False)
    except SafetensorError as e:
        raise CheckpointError(f"{path}: not a valid safetensors file ({e})") from None
    except RuntimeError as e:
        first = str(e).strip().splitlines()[-1].strip()
        raise CheckpointError(f"{path}: weights do not match the model built from run.json/config ({first})") from None
    if missing or unexpected:
        raise CheckpointError(f"{path}: weights do not match the model (missing {sorted(missing)[:3]}, unexpected {sorted(unexpected)[:3]})")


def load_trainer(checkpoint: Path, optimizer: torch.optim.Optimizer) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """Restore the optimizer; return (state.json contents, RNG state tensors)."""
    state = read_json(checkpoint / "state.json")
    path = checkpoint / "trainer.safetensors"
    if not path.is_file():
        raise CheckpointError(f"{path}: missing (an averaged checkpoint cannot be resumed)")
    try:
        tensors = load_file(str(path))
    except SafetensorError as e:
        raise CheckpointError(f"{path}: not a valid safetensors file ({e})") from None
    _restore_optimizer(optimizer, tensors, state["param_groups"])
    rng = {k.removeprefix("rng."): v for k, v in tensors.items() if k.startswith("rng.")}
    return state, rng


def prune(run_dir: str | Path, keep_last: int, keep: set[str]) -> None:
    """Delete all but the last `keep_last` checkpoints, never those named in `keep`."""
    dirs = checkpoint_dirs(run_dir)
    for path in dirs[: max(len(dirs) - keep_last, 0)]:
        if path.name not in keep:
            remove_dir(path)


def average_checkpoints(checkpoints: list[Path]) -> dict[str, torch.Tensor]:
    """Element-wise mean of the weights of several checkpoints (Vaswani et al. sec. 6.1)."""
    total: dict[str, torch.Tensor] = {}
    dtypes: dict[str, torch.dtype] = {}
    for path in checkpoints:
        try:
            weights = load_file(str(path / "model.safetensors"))
        except (SafetensorError, FileNotFoundError, OSError) as e:
            raise CheckpointError(f"{path / 'model.safetensors'}: cannot read ({e})") from None
        if total and weights.keys() != total.keys():
            raise CheckpointError(f"{path}: different parameters from {checkpoints[0]} (not the same model)")
        for name, value in weights.items():
            if name not in total:
                total[name], dtypes[name] = value.double(), value.dtype
            elif total[name].shape != value.shape:
                raise CheckpointError(f"{path}: {name} has shape {tuple(value.shape)}, expected {tuple(total[name].shape)}")
            else:
                total[name] += value.double()
    return {name: (value / len(checkpoints)).to(dtypes[name]) for name, value in total.items()}
