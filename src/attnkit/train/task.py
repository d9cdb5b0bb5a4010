"""What the shared training loop needs from a model family: a `Task`.

A task reads the data and builds the vocabularies (`vocabs`, stored in run.json), builds the model,
gives the lengths the batcher groups by, pads a batch, sums a batch's loss over its `size` items
(target tokens for translation, examples for classification) and computes validation metrics. The
loop (`train/loop.py`) does the rest the same way for every task: updates, accumulation, precision,
schedule, checkpoints, resume, signals, early stopping, metrics.jsonl and the progress events.
"""

from __future__ import annotations

from typing import Any, Protocol

import torch
from torch import nn

from attnkit.runs import RunVocabs


class Task(Protocol):
    unit: str  # what `size` counts: "tokens" or "examples" (the key of a step's count in metrics.jsonl)
    vocabs: RunVocabs
    train_lengths: tuple[list[int], list[int]]  # per training example, for `TokenBatcher`

    def build_model(self) -> nn.Module: ...

    def collate(self, index: list[int]) -> Any:
        """The training examples `index` as a batch with a `.to(device)` method."""

    def size(self, batch: Any) -> int:
        """How many items (tokens or examples) `loss` sums over."""

    def loss(self, model: nn.Module, batch: Any, step: int) -> torch.Tensor:
        """The batch's loss summed over its `size` items, at 1-based update `step`."""

    def validate(self, model: nn.Module, device: torch.device) -> dict[str, float]:
        """Validation metrics (always "loss"); the model is already in eval mode."""
