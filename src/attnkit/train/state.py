"""The training state that, with the weights, optimizer and RNG states, resumes a run exactly."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any


@dataclass
class TrainState:
    step: int = 0  # optimizer updates done
    epoch: int = 0  # current epoch (0-based)
    batch_in_epoch: int = 0  # batches of the current epoch already consumed (by each rank)
    world_size: int = 1  # ranks that trained it (resuming with another count rescales batch_in_epoch)
    elapsed: float = 0.0  # seconds of wall clock spent training, over all resumes
    update_seconds: float = 0.0  # of which in updates (batches, forward, backward, step): tokens/s = target_tokens / this
    target_tokens: int = 0  # non-pad target tokens seen (translation), examples seen (classification)
    best: float | None = None  # best validation metric so far
    best_checkpoint: str | None = None
    evals_without_improvement: int = 0
    bad_steps_in_row: int = 0  # consecutive steps with a NaN/inf loss (skipped)
    skipped_steps: int = 0
    stopped_early: bool = False
    interrupted: str | None = None  # "SIGINT" / "SIGTERM" when a signal stopped the run (cleared on resume)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TrainState:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})
