"""Attention maps pooled into block means at zoom levels of s tokens, with and without the sink.

Level s cuts the (N, N) map of a head into (ceil(N/s), ceil(N/s)) tiles, s queries by s keys (the
last row and column of tiles shorter when s does not divide N), and holds each tile's mean: the
masked cells (a decoder's keys after the query, keys outside a sliding window) count as the zeros
they are, so a decoder's tile on the diagonal is about half empty (an encoder's is full). The sink-aware map is the same of the rows renormalised
with the first token's column removed: a row's key sums by tile are
those of the row, tile 0 less the first token, divided by what is left; a row with nothing left
(query 0) is zeros. `Pooled` adds exact blocks of rows as they are computed, summing each row by
key tiles once at the finest level, and pools the coarser levels from those sums when asked (every
level a multiple of the finest), so the map itself never exists.
"""

from __future__ import annotations

import torch
from torch import Tensor


def tile_sums(p: Tensor, lo: int, s: int) -> tuple[Tensor, int]:
    """Rows p (h, b, n) over keys lo.. summed by key tiles of s: ((h, b, m), the first tile's index)."""
    head = -lo % s  # the keys before the first whole tile
    parts = [p[..., :head].sum(dim=-1, keepdim=True)] if head else []
    whole = (p.size(-1) - head) // s * s
    parts.append(p[..., head : head + whole].reshape(*p.shape[:2], -1, s).sum(dim=-1))  # (h, b, whole / s)
    if head + whole < p.size(-1):
        parts.append(p[..., head + whole :].sum(dim=-1, keepdim=True))
    return torch.cat(parts, dim=-1), lo // s


class Pooled:
    """The block-mean maps of one layer at the levels `sizes`, with and without the sink, from blocks of rows.

    Blocks add only into the finest level's tile sums, both maps in one product; a coarser level's tile is the
    sum of the r x r finest tiles it covers (r its multiple of the finest), taken when it is asked for."""

    def __init__(self, heads: int, length: int, sizes: tuple[int, ...]) -> None:
        self.sizes, self.length, self.finest = sizes, length, min(sizes)
        if any(s % self.finest for s in sizes):
            raise ValueError(f"pool sizes {sizes}: each must be a multiple of the smallest")
        t = -(-length // self.finest)
        self.sums = torch.zeros(2, heads, t, t)  # (2, H, t, t): the finest tile sums with the sink and without it

    def add(self, p: Tensor, lo: int, q0: int) -> None:
        """Add rows p (H, b, n) of queries q0.. over keys lo.."""
        fine, first = tile_sums(p, lo, self.finest)  # (H, b, m)
        free = fine.clone()
        if first == 0:
            free[..., 0] = p[..., 1 : self.finest].sum(dim=-1)  # exact, not 1 - p0
        free.div_(free.sum(dim=-1, keepdim=True).clamp_min_(torch.finfo(p.dtype).tiny))  # a row with nothing left stays zeros
        tiles = torch.arange(q0, q0 + p.size(1)) // self.finest  # (b,): each row's query tile
        self.sums[..., first : first + fine.size(-1)].index_add_(2, tiles, torch.stack([fine, free]).cpu())

    def means(self, s: int, sink: bool = True) -> Tensor:
        """(H, t, t) tile means at level s, with the sink or without it."""
        r = s // self.finest
        fine = self.sums[0 if sink else 1]  # (H, tf, tf)
        t = -(-fine.size(-1) // r)
        padded = torch.nn.functional.pad(fine, (0, t * r - fine.size(-1), 0, t * r - fine.size(-1)))  # (H, t r, t r)
        sums = padded.view(fine.size(0), t, r, t, r).sum(dim=(2, 4))  # (H, t, t)
        edges = torch.arange(0, self.length, s)  # (t,)
        counts = (torch.clamp(edges + s, max=self.length) - edges).float()  # (t,): tokens per tile
        return sums / (counts[:, None] * counts[None, :])
