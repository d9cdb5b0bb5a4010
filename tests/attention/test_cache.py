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


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_append_with_rows_equals_reorder_then_append(dtype):
    torch.manual_seed(0)
    cache = KVCache(torch.randn(3, 2, 4, 5).to(dtype), torch.randn(3, 2, 4, 5).to(dtype))
    rows = torch.tensor([2, 2, 0, 1])  # repeated and reordered rows, one more than stored
    step = KVCache(torch.randn(4, 2, 6, 5).to(dtype)[:, :, ::6], torch.randn(4, 2, 1, 5).to(dtype))  # k not contiguous
    fused, plain = cache.append(step, rows), cache.reorder(rows).append(step)
    assert fused.k.shape == (4, 2, 5, 5) and fused.k.is_contiguous() and fused.v.is_contiguous()
    assert torch.equal(fused.k, plain.k) and torch.equal(fused.v, plain.v)
    empty = KVCache(torch.zeros(3, 2, 0, 5, dtype=dtype), torch.zeros(3, 2, 0, 5, dtype=dtype))  # the first step
    assert torch.equal(empty.append(step, rows).k, step.k)


def test_append_with_rows_keeps_gradients():
    cache = KVCache(torch.randn(2, 1, 3, 4, requires_grad=True), torch.randn(2, 1, 3, 4))
    grown = cache.append(KVCache(torch.randn(2, 1, 1, 4), torch.randn(2, 1, 1, 4)), torch.tensor([1, 1]))
    grown.k.sum().backward()
    assert cache.k.grad[1].eq(2).all() and cache.k.grad[0].eq(0).all()


def test_cache_is_immutable():
    cache = KVCache(torch.zeros(1, 1, 1, 1), torch.zeros(1, 1, 1, 1))
    with pytest.raises(dataclasses.FrozenInstanceError):
        cache.k = torch.ones(1, 1, 1, 1)


def test_append_with_rows_traces_into_one_graph():
    # index_select(out=) into a view breaks torch.compile's graph; compiled, append picks and concatenates.
    cache = KVCache(torch.randn(3, 2, 4, 5), torch.randn(3, 2, 4, 5))
    step, rows = KVCache(torch.randn(2, 2, 1, 5), torch.randn(2, 2, 1, 5)), torch.tensor([2, 0])
    compiled = torch.compile(lambda c, s, r: c.append(s, r), backend="eager", fullgraph=True)  # raises on a graph break
    with torch.inference_mode():
        grown, plain = compiled(cache, step, rows), cache.append(step, rows)
    assert torch.equal(grown.k, plain.k) and torch.equal(grown.v, plain.v)
