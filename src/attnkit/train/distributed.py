"""Data-parallel training on `torch.distributed`, launched by torchrun.

`torchrun --nproc_per_node N -m attnkit train CONFIG --out RUN` starts N processes and gives each
the environment variables `RANK`, `LOCAL_RANK`, `WORLD_SIZE`, `MASTER_ADDR` and `MASTER_PORT`
(docs.pytorch.org, "torchrun (Elastic Launch)"). `process_group` joins them (gloo on CPU, NCCL on
CUDA, `init_method="env://"`); without `WORLD_SIZE` it is a world of one and nothing changes.

The rules the training loop follows (see docs/distributed.md):
- every rank builds the same model from the same seed; `Replica` wraps it in
  `DistributedDataParallel`, which also broadcasts rank 0's weights at construction;
- each rank trains on its own shard of the token batches (`TokenBatcher(rank=, world_size=)`),
  and every rank gets as many batches per epoch, so all reach each update together;
- the loss is summed over target tokens and scaled by `world.size / n_tokens`, with `n_tokens`
  summed over ranks (`World.sum`): DDP averages gradients over ranks, so the result equals one
  process computing the summed loss of all ranks' batches divided by their total token count;
- accumulation micro-batches skip the gradient all-reduce (`Replica.sync(False)` wraps
  `DistributedDataParallel.no_sync`), the last one of each update syncs;
- only rank 0 writes (run files, metrics, checkpoints) and validates; it broadcasts what it decided
  (best checkpoint, early stopping) so every rank stops at the same update.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from attnkit.errors import ConfigError

log = logging.getLogger("attnkit")
T = TypeVar("T")


@dataclass(frozen=True)
class World:
    """This process's place among the ranks (a world of one when not launched by torchrun)."""

    rank: int = 0
    local_rank: int = 0
    size: int = 1

    @property
    def is_main(self) -> bool:
        """Rank 0: the one process that writes files and validates."""
        return self.rank == 0

    def device(self, device: torch.device) -> torch.device:
        """The device of this rank: `cuda:LOCAL_RANK` on CUDA (one GPU per process), else `device`."""
        if device.type == "cuda" and self.size > 1:
            return torch.device("cuda", self.local_rank)
        return device

    def barrier(self) -> None:
        if self.size > 1:
            dist.barrier()

    def sum(self, values: list[float], device: torch.device) -> list[float]:
        """Element-wise sum of `values` over all ranks (float64, on `device`: NCCL needs CUDA tensors)."""
        return self._all_reduce(values, device, dist.ReduceOp.SUM)

    def max(self, values: list[float], device: torch.device) -> list[float]:
        """Element-wise maximum of `values` over all ranks."""
        return self._all_reduce(values, device, dist.ReduceOp.MAX)

    def _all_reduce(self, values: list[float], device: torch.device, op: dist.ReduceOp) -> list[float]:
        if self.size == 1:
            return list(values)
        tensor = torch.tensor(values, dtype=torch.float64, device=device)  # (len(values),)
        dist.all_reduce(tensor, op=op)
        return tensor.tolist()

    def broadcast(self, value: T) -> T:
        """Rank 0's `value` on every rank (a JSON-like object: pickled between our own processes only)."""
        if self.size == 1:
            return value
        box = [value]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def gather(self, value: T) -> list[T] | None:
        """Every rank's `value` on rank 0, in rank order (pickled between our own processes only); None on the others."""
        if self.size == 1:
            return [value]
        out: list[T] | None = [None] * self.size if self.is_main else None  # type: ignore[list-item]
        dist.gather_object(value, out, dst=0)
        return out

    @contextlib.contextmanager
    def main_first(self) -> Iterator[None]:
        """Run the body on rank 0, then on the others (e.g. rank 0 fills a cache the others read)."""
        if not self.is_main:
            self.barrier()
        yield
        if self.is_main:
            self.barrier()


def world_from_env(env: dict[str, str] | None = None) -> World:
    """The `World` that torchrun's environment variables describe."""
    env = os.environ if env is None else env
    try:
        size = int(env.get("WORLD_SIZE", "1"))
        rank = int(env.get("RANK", "0"))
        local_rank = int(env.get("LOCAL_RANK", str(rank)))
    except ValueError as e:
        raise ConfigError(f"torchrun environment: {e}") from None
    if size < 1 or not 0 <= rank < size:
        raise ConfigError(f"torchrun environment: RANK={rank} does not fit WORLD_SIZE={size}")
    return World(rank=rank, local_rank=local_rank, size=size)


@contextlib.contextmanager
def process_group(device: torch.device, timeout: datetime.timedelta | None = None) -> Iterator[World]:
    """Join the ranks for the body (gloo on CPU, NCCL on CUDA) and leave afterwards.

    A group that is already initialized (by a caller) is used as is and left open. `timeout`: how long a
    collective waits for the slowest rank (None: torch's default, 30 minutes for gloo). Ranks other
    than 0 log warnings and errors only, so a run's log is rank 0's.
    """
    world = world_from_env()
    created = world.size > 1 and not dist.is_initialized()
    if created:
        if device.type == "cuda":
            torch.cuda.set_device(world.local_rank)
        dist.init_process_group(backend="nccl" if device.type == "cuda" else "gloo", init_method="env://", timeout=timeout)
    quiet = not world.is_main and log.level < logging.WARNING
    previous_level = log.level
    if quiet:
        log.setLevel(logging.WARNING)
    try:
        if world.size > 1:
            log.info("rank %d of %d (%s backend)", world.rank, world.size, dist.get_backend())
        yield world
        if created:  # every rank done before any leaves: gloo aborts a rank whose peer tore the group down first
            dist.barrier()
    finally:
        if quiet:
            log.setLevel(previous_level)
        if created:
            dist.destroy_process_group()


class _Apply(nn.Module):
    """Runs any function of the model as `forward`: DDP syncs gradients only of what ran in forward."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return fn(self.model, *args, **kwargs)


class Replica:
    """This rank's replica of the model: in `DistributedDataParallel` on several ranks, bare on one.

    `replica(fn, *args)` computes `fn(model, *args)` (e.g. a batch's loss) through DDP's forward, so
    the backward pass that follows all-reduces (averages) the gradients. `module` is the plain
    model: checkpoints, validation and decoding use it, never the wrapper (no `module.` prefixes).
    """

    def __init__(self, model: nn.Module, world: World) -> None:
        self.module = model
        # device_ids=None: the model sits on one device, and batches are moved there by the caller.
        self.ddp = DistributedDataParallel(_Apply(model), device_ids=None) if world.size > 1 else None

    def __call__(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        if self.ddp is None:
            return fn(self.module, *args, **kwargs)
        return self.ddp(fn, *args, **kwargs)

    def sync(self, enabled: bool) -> contextlib.AbstractContextManager:
        """Context for one micro-batch's forward and backward: `enabled=False` skips the gradient
        all-reduce (`DistributedDataParallel.no_sync`); gradients accumulate until a synced one."""
        if self.ddp is None or enabled:
            return contextlib.nullcontext()
        return self.ddp.no_sync()


def resume_position(batch_in_epoch: int, saved_world_size: int, world_size: int) -> int:
    """This rank's position in the epoch when resuming a run saved with another number of ranks.

    `batch_in_epoch` counts each rank's batches, so `batch_in_epoch * saved_world_size` batches of
    the epoch were consumed in all; the new ranks continue after as many. (The epoch's batches are
    re-cut for the new world size, so around the boundary a few examples may be seen twice or not
    at all in that epoch; the next epochs are unaffected.)
    """
    return batch_in_epoch * saved_world_size // world_size
