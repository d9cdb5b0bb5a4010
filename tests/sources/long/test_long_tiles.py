"""Exact tiles recomputed from kept queries and keys equal transformers' eager attention on tiny random decoders
(grouped-query attention, a sliding window, soft-capping): a head or the mean, with the sink or without it, in
blocks smaller than a tile's rows; pooled tiles are slices of a level's block means."""

from __future__ import annotations

import pytest
import torch
from test_long_exact import _kept, _pooled, _without_sink
from tiny_decoders import eager_attentions, ids

from attnkit.sources.hf.long.tiles import exact_tile, pooled_tile

N = 90
ATOL = 1e-5


@pytest.mark.parametrize("name", ["llama", "mistral", "gemma2"])
def test_exact_tiles_equal_eager(name):
    x = ids(N)
    reference = eager_attentions(name, x)  # per layer (H, N, N)
    kept, _ = _kept(name, x)
    for l, a in enumerate(reference, 1):
        free = _without_sink(a)
        for q0, q1, k0, k1 in [(0, 90, 0, 90), (40, 71, 3, 60), (64, 90, 64, 90), (7, 8, 0, 1)]:
            for head in (None, 1):
                want = a[:, q0:q1, k0:k1].mean(0) if head is None else a[head, q0:q1, k0:k1]
                got = exact_tile(kept[l], q0, q1, k0, k1, head, budget=4 * 4 * N * 3)  # three rows a block
                torch.testing.assert_close(got, want, atol=ATOL, rtol=0)
                want = free[:, q0:q1, k0:k1].mean(0) if head is None else free[head, q0:q1, k0:k1]
                torch.testing.assert_close(exact_tile(kept[l], q0, q1, k0, k1, head, sink=False), want, atol=ATOL, rtol=0)


def test_pooled_tiles_slice_a_level():
    a = torch.rand(3, 40, 40)
    means = _pooled(a, 8)  # (3, 5, 5)
    torch.testing.assert_close(pooled_tile(means, 1, 4, 0, 2), means[:, 1:4, 0:2].mean(0))
    torch.testing.assert_close(pooled_tile(means, 1, 4, 0, 2, head=2), means[2, 1:4, 0:2])
