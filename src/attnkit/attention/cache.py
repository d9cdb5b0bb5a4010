"""Key/value cache for incremental Transformer decoding (Vaswani et al., 2017, Sec. 3.2.2).

A decoder step t attends from its one new query to the keys and values of positions 0..t. The
projected K/V of earlier positions never change, so they are kept in a ``KVCache`` value that the
caller owns and passes back in: ``cache = cache.append(mha.project_kv(x_t, x_t))``. Cross-attention
K/V are computed once from the encoder memory and only reordered by beam search. The cache is an
immutable value (a frozen dataclass): ``append`` and ``reorder`` return new caches, modules hold no
decoding state.

Beam search reorders the cache after every step and the next step appends to it: two copies of
every cached position a step. ``append(other, rows)`` does both in one: the kept rows, in their
new order, are copied straight into the longer cache.

Where the rows stay as they are (greedy search between the steps where a sentence finishes), a
step need not copy the cache at all. In inference mode (the searches), a cache that ``append``
copies is written to the front of buffers with room after it (``Room``: as many positions again,
at least ``MIN_ROOM``), and the next ``append`` without ``rows`` writes its positions into that
room in place and returns a longer view of the same buffers: O(T) copies over T steps instead of
O(T^2). The value semantics hold: a cache never sees its own positions change, since only
positions past every existing view are written, and only by the first ``append`` to the cache
that wrote last (any other append copies).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor

MIN_ROOM = 16  # positions of room a grown cache gets at least


@dataclass(eq=False)
class Room:
    """Buffers ``(B, H, capacity, E)`` whose first ``end`` positions hold keys and values, the rest free."""

    k: Tensor
    v: Tensor
    end: int

    def fits(self, start: int, count: int) -> bool:
        """Whether ``count`` positions can be written at ``start``: the last write ended there and they fit."""
        return self.end == start and start + count <= self.k.size(2)


@dataclass(frozen=True)
class KVCache:
    """Projected keys and values, split into heads.

    Attributes:
        k: keys ``(B, H, S, E)``.
        v: values ``(B, H, S, E)``.
    """

    k: Tensor
    v: Tensor
    room: Room | None = field(default=None, compare=False, repr=False)  # buffers k and v are the front of, if any

    @property
    def length(self) -> int:
        """Number of cached positions ``S``."""
        return self.k.size(2)

    def append(self, other: KVCache, rows: Tensor | None = None) -> KVCache:
        """Concatenate ``other`` after this cache along the key axis, after picking ``rows`` of it.

        Args:
            other: cache of the new positions, ``(B2, H, S2, E)``.
            rows: long tensor ``(B2,)`` of rows of this cache, in the order of ``other``'s rows
                (``self.reorder(rows).append(other)`` in one copy), or ``None`` for all of them.

        Returns:
            New cache ``(B2, H, S + S2, E)``; ``self`` is unchanged. In inference mode it has room
            to grow in place (see the module doc).
        """
        if torch.is_grad_enabled() and (self.k.requires_grad or other.k.requires_grad):
            if rows is not None:
                return self.reorder(rows).append(other)  # index_select(out=) has no gradient
            return KVCache(_cat(self.k, other.k), _cat(self.v, other.v))
        grow = _may_grow()
        if rows is None and not grow:  # e.g. traced for export: plain concatenation
            return KVCache(_cat(self.k, other.k), _cat(self.v, other.v))
        S, S2 = self.length, other.length
        room = self.room
        if rows is None and room is not None and room.fits(S, S2):  # write into the room: no copy of the cache
            room.k[:, :, S : S + S2] = other.k  # (B, H, S2, E)
            room.v[:, :, S : S + S2] = other.v  # (B, H, S2, Ev)
            room.end = S + S2
            return KVCache(room.k[:, :, : S + S2], room.v[:, :, : S + S2], room)
        capacity = S + S2 + (max(S + S2, MIN_ROOM) if grow else 0)
        k = _picked_then(self.k, rows, other.k, capacity)  # (B2, H, capacity, E)
        v = _picked_then(self.v, rows, other.v, capacity)  # (B2, H, capacity, Ev)
        if not grow:
            return KVCache(k, v)
        return KVCache(k[:, :, : S + S2], v[:, :, : S + S2], Room(k, v, S + S2))

    def reorder(self, index: Tensor) -> KVCache:
        """Select batch rows, e.g. the surviving hypotheses of beam search.

        Args:
            index: long tensor ``(B2,)`` of rows of this cache.

        Returns:
            New cache ``(B2, H, S, E)``.
        """
        k = self.k.index_select(0, index)  # (B2, H, S, E)
        v = self.v.index_select(0, index)  # (B2, H, S, E)
        return KVCache(k, v)


def _may_grow() -> bool:
    """Whether caches may be written in place: inference mode, not traced or compiled."""
    return torch.is_inference_mode_enabled() and not torch.jit.is_tracing() and not torch.compiler.is_compiling()


def _cat(cached: Tensor, new: Tensor) -> Tensor:
    """``cached`` ``(B, H, S, E)`` followed by ``new`` ``(B, H, S2, E)`` on the key axis."""
    return torch.cat([cached, new], dim=2)  # (B, H, S + S2, E)


def _picked_then(cached: Tensor, rows: Tensor | None, new: Tensor, capacity: int) -> Tensor:
    """A buffer ``(B2, H, capacity, E)`` holding rows ``rows`` of ``cached`` ``(B, H, S, E)`` (all of them if
    None), then ``new`` ``(B2, H, S2, E)`` on the key axis: one copy; the positions after S + S2 are unset."""
    S, S2 = cached.size(2), new.size(2)
    out = new.new_empty(new.size(0), new.size(1), capacity, new.size(3))  # (B2, H, capacity, E)
    if rows is None:
        out[:, :, :S] = cached  # (B2, H, S, E)
    else:
        torch.index_select(cached, 0, rows, out=out[:, :, :S])  # (B2, H, S, E), written in place
    out[:, :, S : S + S2] = new  # (B2, H, S2, E)
    return out
