"""How a record keeps each layer's weights, from the moment the layer arrives: what the output needs.

A source hands every layer (H, Tq, Tk) and every summary (Tq, Tk) of one input to a store, and the
`AttentionView`s of its `ExplainedInput` hold what the store returns (`viz.attention_view`):

- `FloatStore`: the float32 tensors (`plot`, `heads`, `faithfulness`, a run's report);
- `ByteStore`: bytes on each map's own scale (`viz.weights`: the explorer's pages), counting the weights
  of the page and refusing, in one line, more than `max_cells` of them;
- `NpzStore`: written into the npz at once, kept as `Written` (`attnkit attention`: a layer never waits in
  memory for the next one, docs/explorer.md "Memory: layer by layer").

A summary is kept as one layer of one head (1, Tq, Tk); in the npz it is the (Tq, Tk) array it always was.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
import torch

from attnkit.errors import AttnkitError
from attnkit.sources.npz import NpzWriter
from attnkit.viz.attention_view import Written
from attnkit.viz.weights import quantize

MAX_CELLS = 64 * 2**20  # weights a page may hold (64 MiB as bytes; about 85 MB of base64)


class Store(Protocol):
    def layer(self, member: str, weights: np.ndarray) -> Any:
        """Keep one layer (H, Tq, Tk) float32, the npz's `member` (`<kind>/layer<l>`)."""

    def summary(self, member: str, weights: np.ndarray) -> Any:
        """Keep one summary (Tq, Tk) float32 (`rollout`, `flow`) as one layer of one head."""


class Capped:
    """Counts the weights kept for one input and refuses, in one line naming `name`, more than `max_cells` (None: any)."""

    def __init__(self, name: str = "", max_cells: int | None = None) -> None:
        self.name, self.max_cells, self.cells = name, max_cells, 0

    def _count(self, weights: np.ndarray) -> None:
        self.cells += weights.size
        if self.max_cells is not None and self.cells > self.max_cells:
            raise AttnkitError(f"{self.name}: the page would hold more than {self.max_cells:,} attention weights "
                               "(a shorter input, --max-cells, or `attnkit attention` for an npz of them all)")  # fmt: skip


class FloatStore(Capped):
    """Keeps the weights as float32 tensors."""

    def layer(self, member: str, weights: np.ndarray) -> torch.Tensor:
        self._count(weights)
        return torch.from_numpy(weights)  # (H, Tq, Tk)

    def summary(self, member: str, weights: np.ndarray) -> torch.Tensor:
        self._count(weights)
        return torch.from_numpy(weights)[None]  # (1, Tq, Tk)


class ByteStore(Capped):
    """Keeps each map as bytes (`viz.weights.quantize`), up to `max_cells` weights for the input."""

    def __init__(self, name: str, max_cells: int = MAX_CELLS) -> None:
        super().__init__(name, max_cells)

    def layer(self, member: str, weights: np.ndarray) -> Any:
        self._count(weights)
        return quantize(weights)  # (H, Tq, Tk) bytes

    def summary(self, member: str, weights: np.ndarray) -> Any:
        self._count(weights)
        return quantize(weights[None])  # (1, Tq, Tk) bytes


class NpzStore:
    """Writes each layer and summary into the npz as it comes; keeps only its name."""

    def __init__(self, writer: NpzWriter) -> None:
        self.writer = writer

    def layer(self, member: str, weights: np.ndarray) -> Written:
        self.writer.add(member, weights)
        return Written(member)

    def summary(self, member: str, weights: np.ndarray) -> Written:
        self.writer.add(member, weights)
        return Written(member)
