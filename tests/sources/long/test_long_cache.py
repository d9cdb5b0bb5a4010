"""The documents `serve` keeps: least recently used evicted first, by bytes; one too large for the whole budget refused in one line."""

from __future__ import annotations

import pytest
import torch

from attnkit.sources.hf.long.blocks import KeptLayer
from attnkit.sources.hf.long.cache import DocumentCache, TooLarge, document_id
from attnkit.sources.hf.long.document import LongDocument


def _doc(n: int) -> LongDocument:
    """A document of n tokens whose queries and keys hold 4 x (2 + 1) x n x 8 = 96 n bytes."""
    layer = KeptLayer(torch.zeros(2, n, 8), torch.zeros(1, n, 8), 1.0)
    return LongDocument("m", ["t"] * n, {1: layer}, {True: {}, False: {}}, {}, 64)


def test_least_recently_used_goes_first():
    cache = DocumentCache(96 * 30)
    assert _doc(10).nbytes == 960
    assert cache.put("a", _doc(10)) == [] and cache.put("b", _doc(10)) == [] and cache.put("c", _doc(10)) == []
    assert cache.get("a") is not None  # now the most recent: b goes first
    assert cache.put("d", _doc(15)) == ["b", "c"]
    assert [k for k, _ in cache.documents()] == ["a", "d"] and cache.used() == 96 * 25
    assert cache.was_evicted("b") and not cache.was_evicted("a") and cache.get("b") is None
    with pytest.raises(TooLarge, match=r"^document e \(31,744 tokens\): its queries, keys and pooled maps need about 2.9 MiB"):
        cache.put("e", _doc(31 * 1024))  # over the whole budget


def test_ids_name_the_model_window_and_text():
    ids = {document_id("m", 64, "a b"), document_id("n", 64, "a b"), document_id("m", 32, "a b"), document_id("m", 64, "a c")}
    assert len(ids) == 4 and all(len(i) == 16 for i in ids)
