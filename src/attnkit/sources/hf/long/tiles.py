"""Tiles of one layer's attention map at length: exact, recomputed from the kept queries and keys, or pooled.

An exact tile is the map's cells of queries q0..q1 over keys k0..k1 (token positions), of one head
or the mean over heads, recomputed by `blocks.logits` a block of query rows at a time: a row's
softmax needs every key it sees, so each block takes its rows whole (at most `BLOCK_BYTES` of
float32 logits, one row at least) and keeps only the tile's columns, and no (H, N, N) map ever
exists. The sink-aware tile (`sink` False) is that of the rows renormalised without the first
token's column, as the pooled maps' (`pooling`): a row's cells divided by its mass on keys 1..q,
summed exactly (not 1 - p0); the first query, which sees only the first token, is zeros.

A pooled tile is a slice of a level's block means (`scan.LayerScan.pooled`, or without the sink),
rows and columns counted in that level's tiles.
"""

from __future__ import annotations

import torch
from torch import Tensor

from attnkit.sources.hf.long.blocks import BLOCK_BYTES, KeptLayer, logits


def _rows_per_block(layer: KeptLayer, heads: int, budget: int) -> int:
    return max(1, budget // (4 * heads * layer.length))


@torch.inference_mode()
def exact_tile(layer: KeptLayer, q0: int, q1: int, k0: int, k1: int, head: int | None = None, sink: bool = True,
               budget: int = BLOCK_BYTES) -> Tensor:  # fmt: skip
    """(q1 - q0, k1 - k0) float32: the exact attention of queries q0..q1 over keys k0..k1 of `head` (None: the
    mean over heads), with the sink or without it (module docstring); query and key positions 0..N-1."""
    chosen = None if head is None else torch.tensor([head], device=layer.query.device)
    h = layer.heads if head is None else 1
    out = torch.zeros(q1 - q0, k1 - k0)  # (b, w)
    step = _rows_per_block(layer, h, budget)
    for a in range(q0, q1, step):
        b = min(q1, a + step)
        scores, lo = logits(layer, a, b, chosen)  # (h, r, n) over keys lo..
        p = torch.softmax(scores, dim=-1)  # (h, r, n)
        if not sink:
            rest = p[..., 1:].sum(dim=-1, keepdim=True) if lo == 0 else p.sum(dim=-1, keepdim=True)  # (h, r, 1)
            p = p.div_(rest.clamp_min_(torch.finfo(p.dtype).tiny))
            if lo == 0:
                p[..., 0] = 0.0  # a row with nothing left (query 0) stays zeros
        c0, c1 = max(k0, lo), min(k1, lo + p.size(-1))  # the tile's columns this block's rows see
        if c1 > c0:
            out[a - q0 : b - q0, c0 - k0 : c1 - k0] = p[..., c0 - lo : c1 - lo].mean(dim=0).cpu()  # (r, c)
    return out


def pooled_tile(means: Tensor, r0: int, r1: int, c0: int, c1: int, head: int | None = None) -> Tensor:
    """(r1 - r0, c1 - c0): tiles r0..r1 x c0..c1 of one level's block means (H, t, t), of `head` (None: the mean)."""
    part = means[:, r0:r1, c0:c1]  # (H, r, c)
    return part.mean(dim=0) if head is None else part[head]
