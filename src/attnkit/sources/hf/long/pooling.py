"""Attention maps pooled into block means at a zoom level of s tokens.

Level s cuts the (N, N) map of a head into (ceil(N/s), ceil(N/s)) tiles, s queries by s keys (the
last row and column of tiles shorter when s does not divide N), and holds each tile's mean: the
masked cells (keys after the query, or outside a sliding window) count as the zeros they are, so a
tile on the diagonal is about half empty. Row sums of a level times s give the mean attention mass a
tile's queries put on each key tile. `Pooled` adds exact blocks of rows as they are computed, so the
map itself never exists.
"""

from __future__ import annotations

import torch
from torch import Tensor


class Pooled:
    """The block-mean map of one layer at level `size`, accumulated from blocks of rows."""

    def __init__(self, heads: int, length: int, size: int) -> None:
        self.size, self.length = size, length
        tiles = -(-length // size)
        self.sums = torch.zeros(heads, tiles, tiles)  # (H, t, t): sums of the cells in each tile

    def add(self, p: Tensor, lo: int, q0: int) -> None:
        """Add rows p (H, b, n) of queries q0.. over keys lo.."""
        s = self.size
        start = lo // s * s  # the first key tile's first key
        width = -(-(lo + p.size(2) - start) // s) * s
        padded = p.new_zeros(p.size(0), p.size(1), width)  # (H, b, m * s)
        padded[..., lo - start : lo - start + p.size(2)] = p
        by_key = padded.view(p.size(0), p.size(1), -1, s).sum(dim=-1)  # (H, b, m)
        rows = torch.arange(q0, q0 + p.size(1)) // s  # (b,): each query's tile
        first = start // s
        self.sums[:, :, first : first + by_key.size(2)].index_add_(1, rows, by_key.cpu().float())

    def means(self) -> Tensor:
        """(H, t, t) tile means."""
        edges = torch.arange(0, self.length, self.size)  # (t,)
        counts = (torch.clamp(edges + self.size, max=self.length) - edges).float()  # (t,): tokens per tile
        return self.sums / (counts[:, None] * counts[None, :])
