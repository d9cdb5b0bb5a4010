"""Prepared data: checked, tokenized and encoded examples, written once and read back in a second.

A family prepares its data into a folder `CACHE/prepared/KEY/` where KEY hashes the inputs (file
contents) and the settings that shape the result. `train`, `--resume`, every DDP rank (rank 0
prepares, the others wait and read) and validation reuse it instead of re-reading and
re-tokenizing the text. The folder is written atomically (`attnkit.io.atomic_dir`), so it is
either complete or absent; id sequences are stored as safetensors (flat ids + lengths), never
pickled.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from attnkit.artifacts.checkpoint import save_safetensors
from attnkit.errors import DataError
from attnkit.io import atomic_dir, hash_file

log = logging.getLogger("attnkit")
FORMAT = 1  # bump when what a family writes changes meaning
TMP_PREFIX = ".tmp-"


def data_key(settings: dict[str, Any], files: Sequence[str | Path] = ()) -> str:
    """A hash of `settings` (JSON-able) and the bytes of `files`: the name of a prepared folder."""
    digest = hashlib.sha256(json.dumps({"format": FORMAT, **settings}, sort_keys=True, default=str).encode())
    for path in files:
        hash_file(digest, path)
    return digest.hexdigest()[:24]


def prepared(cache_dir: Path, key: str, build: Callable[[Path], None]) -> Path:
    """The folder `cache_dir/prepared/key`, made by `build(tmp_folder)` unless it exists already."""
    folder = Path(cache_dir) / "prepared" / key
    if (folder / "done.json").is_file():
        log.info("prepared data: %s (reused)", folder)
        return folder
    with atomic_dir(folder, TMP_PREFIX) as tmp:
        build(tmp)
        (tmp / "done.json").write_text(json.dumps({"format": FORMAT}), encoding="utf-8")
    log.info("prepared data: %s (written)", folder)
    return folder


def save_sequences(path: Path, sequences: dict[str, Sequence[Sequence[int]]]) -> None:
    """Store named lists of id lists in one safetensors file (flat int32 ids + int32 lengths)."""
    tensors = {}
    for name, rows in sequences.items():
        tensors[f"{name}.lengths"] = torch.tensor([len(r) for r in rows], dtype=torch.int32)
        tensors[f"{name}.ids"] = torch.tensor([i for r in rows for i in r], dtype=torch.int32)
    save_safetensors(save_file, tensors, path)


def load_sequences(path: Path) -> dict[str, list[list[int]]]:
    """The inverse of `save_sequences`."""
    try:
        tensors = load_file(str(path))
    except (OSError, SafetensorError) as e:
        raise DataError(f"{path}: unreadable prepared data ({e}); delete the folder to prepare again") from None
    out = {}
    for name in {key.rsplit(".", 1)[0] for key in tensors}:
        lengths = tensors[f"{name}.lengths"].tolist()
        out[name] = [chunk.tolist() for chunk in torch.split(tensors[f"{name}.ids"], lengths)]
    return out
