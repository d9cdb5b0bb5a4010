"""Kept layers on disk, for when their queries and keys do not fit in memory (`budget` says so).

`Spilled` is the mapping the capture keeps its layers in (layer number -> `blocks.KeptLayer`): each
layer's queries and keys go to two files in a folder (a temporary one, `export.write_ids`) as the
forward pass hands them over, their raw bytes in the model's dtype (bfloat16 included), and each
look-up reads that layer back into memory, whole, so that a scan holds one layer's at a time. What
stays in memory is the layer's description: its scaling, window, soft-cap and query positions, and
its queries' and keys' shapes and dtype (tensors on the `meta` device, which hold no data).
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from attnkit.sources.hf.long.blocks import KeptLayer


def _write(path: Path, t: Tensor) -> Tensor:
    """Write t's bytes to `path`; returns its shape and dtype on the meta device."""
    t.detach().contiguous().cpu().reshape(-1).view(torch.uint8).numpy().tofile(path)
    return t.to("meta")


def _read(path: Path, like: Tensor, device: torch.device) -> Tensor:
    return torch.from_numpy(np.fromfile(path, dtype=np.uint8)).view(like.dtype).view(like.shape).to(device)


class Spilled(MutableMapping[int, KeptLayer]):
    """Kept layers by number, their queries and keys in files under `folder`."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self._layers: dict[int, tuple[KeptLayer, torch.device]] = {}  # queries and keys on the meta device

    def _paths(self, number: int) -> tuple[Path, Path]:
        return self.folder / f"query{number}.bin", self.folder / f"key{number}.bin"

    def __setitem__(self, number: int, layer: KeptLayer) -> None:
        q, k = self._paths(number)
        self._layers[number] = replace(layer, query=_write(q, layer.query), key=_write(k, layer.key)), layer.query.device

    def __getitem__(self, number: int) -> KeptLayer:
        layer, device = self._layers[number]
        q, k = self._paths(number)
        return replace(layer, query=_read(q, layer.query, device), key=_read(k, layer.key, device))

    def __delitem__(self, number: int) -> None:
        del self._layers[number]
        for path in self._paths(number):
            path.unlink()

    def __iter__(self) -> Iterator[int]:
        return iter(self._layers)

    def __len__(self) -> int:
        return len(self._layers)
