"""The torchrun ranks of a command that splits its work (`faithfulness`, `heads --importance`, `attention --input`)."""

from __future__ import annotations

import contextlib
import datetime
from collections.abc import Iterator

import torch

from attnkit.sources.progress import Shard
from attnkit.train.distributed import process_group


@contextlib.contextmanager
def ranks() -> Iterator[Shard]:
    """This process's `Shard` of the work under torchrun (a world of one without it). The ranks meet over gloo
    (objects only, whatever device the model runs on); rank 0 may wait at a gather for a resumed rank's
    remaining work: a week, not torch's 30 minutes."""
    with process_group(torch.device("cpu"), datetime.timedelta(days=7)) as world:
        yield Shard(world.rank, world.size, world.gather, world.broadcast)
