import dataclasses

import pytest
import torch

from attnkit.attention.cache import KVCache


def test_append_concatenates_along_keys_and_returns_a_new_value():
    first = KVCache(torch.zeros(2, 3, 4, 5), torch.ones(2, 3, 4, 5))
    step = KVCache(torch.full((2, 3, 1, 5), 7.0), torch.full((2, 3, 1, 5), 8.0))
    grown = first.append(step)
    assert grown.length == 5 and first.length == 4  # first is unchanged
    assert torch.equal(grown.k[:, :, :4], first.k) and torch.equal(grown.k[:, :, 4], step.k[:, :, 0])
    assert torch.equal(grown.v[:, :, 4:], step.v)


def test_reorder_selects_batch_rows():
    k = torch.arange(3.0).view(3, 1, 1, 1).expand(3, 2, 4, 5)
    cache = KVCache(k, k + 10)
    picked = cache.reorder(torch.tensor([2, 2, 0]))
    # row values are the batch index (k) and batch index + 10 (v), by construction
    assert picked.k[:, 0, 0, 0].tolist() == [2.0, 2.0, 0.0]
    assert picked.v[:, 0, 0, 0].tolist() == [12.0, 12.0, 10.0]
    assert cache.k[:, 0, 0, 0].tolist() == [0.0, 1.0, 2.0]


def test_cache_is_immutable():
    cache = KVCache(torch.zeros(1, 1, 1, 1), torch.zeros(1, 1, 1, 1))
    with pytest.raises(dataclasses.FrozenInstanceError):
        cache.k = torch.ones(1, 1, 1, 1)
