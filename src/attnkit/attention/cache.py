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
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True)
class KVCache:
    """Projected keys and values, split into heads.

    Attributes:
        k: keys ``(B, H, S, E)``.
        v: values ``(B, H, S, E)``.
    """

    k: Tensor
    v: Tensor

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
            New cache ``(B2, H, S + S2, E)``; ``self`` is unchanged.
        """
        if rows is None:
            k = torch.cat([self.k, other.k], dim=2)  # (B, H, S + S2, E)
            v = torch.cat([self.v, other.v], dim=2)  # (B, H, S + S2, E)
            return KVCache(k, v)
        if (torch.is_grad_enabled() and (self.k.requires_grad or other.k.requires_grad)) or torch.compiler.is_compiling():
            return self.reorder(rows).append(other)  # index_select(out=) has no gradient, and breaks torch.compile's graph
        return KVCache(_picked_then(self.k, rows, other.k), _picked_then(self.v, rows, other.v))

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


def _picked_then(cached: Tensor, rows: Tensor, new: Tensor) -> Tensor:
    """Rows ``rows`` of ``cached`` ``(B, H, S, E)`` followed by ``new`` ``(B2, H, S2, E)`` on the key axis: one copy."""
    S = cached.size(2)
    out = new.new_empty(rows.size(0), new.size(1), S + new.size(2), new.size(3))  # (B2, H, S + S2, E)
    torch.index_select(cached, 0, rows, out=out[:, :, :S])  # (B2, H, S, E), written in place
    out[:, :, S:] = new  # (B2, H, S2, E)
    return out
