"""Exact attention of a kept layer, recomputed block by block from its queries and keys.

A block is the softmax rows of queries q0..q1 over the keys they may see: in a decoder (causal)
layer, key k <= query q; in an encoder (bidirectional) layer, every key; and inside the sliding
window where the layer has one: q - k < window in a decoder (transformers' rule), |q - k| <
window in an encoder (ModernBERT's local layers). So only keys lo..hi are computed (lo = q0 -
window + 1 with a window, else 0; hi = q1 in a decoder, q1 - 1 + window or N in an encoder). The
logits are `scaling * q . k`, soft-capped where the layer caps them (Gemma 2: `softcap * tanh(s /
softcap)`), in float32 whatever the model's dtype: the same numbers transformers' eager attention
gives. Keys are kept at the key/value head count and repeated per query head (grouped-query
attention) only inside a block. Queries are right-aligned with the keys (the last query is the last
key), so a decoding step's single query works the same way, unless their positions are given (only
the queries of chosen rows kept).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import torch
from torch import Tensor

LOWEST = torch.finfo(torch.float32).min  # a masked logit


@dataclass(frozen=True)
class KeptLayer:
    """One layer's post-rotary queries and keys and what its attention does with them."""

    query: Tensor  # (H, Nq, D)
    key: Tensor  # (Hkv, N, D)
    scaling: float
    window: int | None = None  # sliding window (None: every key the layer may see)
    softcap: float | None = None  # logit soft-capping (Gemma 2)
    positions: Tensor | None = None  # (Nq,) the queries' positions, increasing (None: the last Nq positions)
    causal: bool = True  # a decoder's layer (keys up to the query); False: an encoder's (every key)

    @property
    def heads(self) -> int:
        return self.query.size(0)

    @property
    def length(self) -> int:
        return self.key.size(1)

    def position(self, q0: int, q1: int) -> Tensor:
        """(b,) the positions of queries q0..q1 (query indices)."""
        if self.positions is not None:
            return self.positions[q0:q1]
        offset = self.key.size(1) - self.query.size(1)  # 0 for a whole pass; the cache length for a decoding step
        return torch.arange(offset + q0, offset + q1, device=self.query.device)

    def key_range(self, q0: int, q1: int) -> tuple[int, int]:
        """(lo, hi): the keys that queries q0..q1 (query indices) may attend to."""
        pos = self.position(q0, q1)  # (b,)
        first, last = int(pos[0]), int(pos[-1])
        lo = max(0, first - self.window + 1) if self.window is not None else 0
        if self.causal:
            return lo, last + 1
        return lo, (min(self.length, last + self.window) if self.window is not None else self.length)


def _mask(scores: Tensor, qpos: Tensor, lo: int, window: int | None, causal: bool) -> None:
    """Set to the lowest float (eager attention's fill: its exponential is 0, its product with 0 is 0), in place, the
    logits (h, b, n) of keys lo.. that queries at qpos (b,) may not see: only the bands where an edge runs (the causal
    edge, the window's edges) are compared, the keys between are all seen."""
    first, last = int(qpos[0]), int(qpos[-1])
    if causal and last > first:  # the causal edge: keys first+1..last
        edge = torch.arange(first + 1, lo + scores.size(-1), device=scores.device)  # (e,)
        scores[..., first + 1 - lo :].masked_fill_(edge[None, :] > qpos[:, None], LOWEST)
    if window is None:
        return
    stop = min(last - window + 1 - lo, scores.size(-1))
    if stop > 0:  # the window's edge before the queries: keys lo..last-window
        edge = torch.arange(lo, lo + stop, device=scores.device)  # (e,)
        scores[..., :stop].masked_fill_(qpos[:, None] - edge[None, :] >= window, LOWEST)
    begin = first + window - lo
    if not causal and begin < scores.size(-1):  # an encoder's window edge after the queries: keys first+window..
        edge = torch.arange(lo + begin, lo + scores.size(-1), device=scores.device)  # (e,)
        scores[..., begin:].masked_fill_(edge[None, :] - qpos[:, None] >= window, LOWEST)


def logits(layer: KeptLayer, q0: int, q1: int, heads: Tensor | None = None, out: Tensor | None = None) -> tuple[Tensor, int]:
    """The masked logits of queries q0..q1 over keys lo..hi: ((h, b, hi - lo) float32, lo), written into the front of
    the flat float32 buffer `out` where one is given (every head only)."""
    lo, hi = layer.key_range(q0, q1)
    groups = layer.heads // layer.key.size(0)
    if heads is None:  # every head: each key/value head's group of query heads in one product, keys not repeated
        q = layer.query[:, q0:q1].float() * layer.scaling  # (H, b, D)
        k = layer.key[:, lo:hi].float()  # (Hkv, n, D)
        b = q.size(1)
        into = None if out is None else out[: layer.heads * b * (hi - lo)].view(k.size(0), groups * b, hi - lo)
        scores = torch.matmul(q.reshape(k.size(0), groups * b, -1), k.transpose(1, 2), out=into).view(layer.heads, b, -1)  # (H, b, n)
    else:
        q = layer.query[heads, q0:q1].float() * layer.scaling  # (h, b, D)
        k = layer.key[heads // groups, lo:hi].float()  # (h, n, D)
        scores = torch.matmul(q, k.transpose(1, 2))  # (h, b, n)
    if layer.softcap is not None:  # in place, in eager attention's order
        scores.div_(layer.softcap).tanh_().mul_(layer.softcap)
    _mask(scores, layer.position(q0, q1), lo, layer.window, layer.causal)
    return scores, lo  # (h, b, n)


def probabilities(layer: KeptLayer, q0: int, q1: int, heads: Tensor | None = None) -> tuple[Tensor, int]:
    """Exact attention rows of queries q0..q1 over keys lo..hi: ((h, b, hi - lo) float32, lo)."""
    scores, lo = logits(layer, q0, q1, heads)
    return torch.softmax(scores, dim=-1), lo  # (h, b, n)


BLOCK_BYTES = 8 * 2**20  # the memory target of one block's (H, b, n) float32 logits (of 4, 8, 16, 32 MiB the fastest scan, long_scan.py)


def _seen(layer: KeptLayer, q0: int, q1: int) -> int:
    lo, hi = layer.key_range(q0, q1)
    return hi - lo


def row_blocks(layer: KeptLayer, budget: int = BLOCK_BYTES) -> Iterator[tuple[int, int]]:
    """The query blocks (q0, q1) of `layer`, each as many rows as keep its (H, b, n) float32 logits within `budget`
    bytes, n the keys the block sees (fewer for early rows, and with a window), and at least one row."""
    nq, cells = layer.query.size(1), budget // (4 * layer.heads)
    q0 = 0
    while q0 < nq:
        seen = _seen(layer, q0, q0 + 1)  # keys of the block's first row; each further row adds at most one
        b = max(1, min(nq - q0, int((math.sqrt(seen * seen + 4 * cells) - seen) / 2)))
        while b > 1 and b * _seen(layer, q0, q0 + b) > cells:  # positions with gaps (chosen rows)
            b //= 2
        yield q0, q0 + b
        q0 += b


def workspace(layer: KeptLayer, arrays: int, budget: int = BLOCK_BYTES) -> Tensor:
    """(arrays, c) float32 buffers for the blocks of `row_blocks(layer, budget)`, allocated once per layer."""
    cells = max(budget // 4, layer.heads * layer.length)  # a single row may take more than the budget
    return torch.empty(arrays, cells, device=layer.query.device)


def blockwise_attention(layer: KeptLayer, value: Tensor) -> Tensor:
    """The attention output of `layer` for values (Hkv, N, D), by query blocks: (H, Nq, D), in the values' dtype."""
    hkv, groups = value.size(0), layer.heads // value.size(0)
    out = torch.empty(layer.heads, layer.query.size(1), value.size(-1), dtype=value.dtype, device=value.device)  # (H, Nq, D)
    work = workspace(layer, 1)
    for q0, q1 in row_blocks(layer):
        scores, lo = logits(layer, q0, q1, out=work[0])  # (H, b, n)
        p = torch.softmax(scores, dim=-1, out=scores)  # (H, b, n), in place
        v = value[:, lo : p.size(-1) + lo].float()  # (Hkv, n, D)
        rows = torch.matmul(p.view(hkv, groups * (q1 - q0), -1), v)  # (Hkv, g b, D): each query head group on its values
        out[:, q0:q1] = rows.view(layer.heads, q1 - q0, -1).to(value.dtype)  # (H, b, D)
    return out
