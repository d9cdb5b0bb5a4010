"""Key/value cache for incremental Transformer decoding (Vaswani et al., 2017, Sec. 3.2.2).

A decoder step t attends from its one new query to the keys and values of positions 0..t. The
projected K/V of earlier positions never change, so they are kept in a ``KVCache`` value that the
caller owns and passes back in: ``cache = cache.append(mha.project_kv(x_t, x_t))``. Cross-attention
K/V are computed once from the encoder memory and only reordered by beam search. The cache is an
immutable value (a frozen dataclass): ``append`` and ``reorder`` return new caches, modules hold no
decoding state.
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

    def append(self, other: KVCache) -> KVCache:
        """Concatenate ``other`` after this cache along the key axis.

        Args:
            other: cache of the new positions, ``(B, H, S2, E)``.

        Returns:
            New cache ``(B, H, S + S2, E)``; ``self`` is unchanged.
        """
        k = torch.cat([self.k, other.k], dim=2)  # (B, H, S + S2, E)
        v = torch.cat([self.v, other.v], dim=2)  # (B, H, S + S2, E)
        return KVCache(k, v)

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
