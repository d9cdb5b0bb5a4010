"""Tests for attnkit.data.batching: drops, token budgets, coverage, seeding, sharding, padding."""

from __future__ import annotations

import logging
import random

import pytest
import torch

from attnkit.data.batching import Batch, TokenBatcher, collate, encode_pairs, sequence_lengths
from attnkit.data.tokenizers import WordTokenizer
from attnkit.data.vocab import BOS, EOS, PAD, UNK, Vocabulary
from attnkit.errors import DataError


@pytest.fixture(scope="module")
def lengths() -> tuple[list[int], list[int]]:
    """500 examples with Multi30k-like lengths, plus three far over a 256-token budget."""
    rng = random.Random(0)
    src = [rng.randint(2, 40) for _ in range(500)] + [300, 20, 400]
    tgt = [max(2, s + rng.randint(-5, 8)) for s in src[:500]] + [10, 600, 350]
    return src, tgt


def padded(batch: list[int], lengths: list[int]) -> int:
    """Padded tokens of one side of a batch: B * longest."""
    return len(batch) * max(lengths[i] for i in batch)


def test_encode_pairs_drops_and_counts(caplog: pytest.LogCaptureFixture) -> None:
    tok = WordTokenizer()
    src_vocab, tgt_vocab = Vocabulary(["a", "b"]), Vocabulary(["x"])
    pairs = [("a b", "x"), ("", "x"), ("a", "  "), ("a a a a", "x"), ("b", "x x x x"), ("a zz", "x y")]
    with caplog.at_level(logging.INFO, logger="attnkit"):
        examples, dropped = encode_pairs(pairs, tok, src_vocab, tok, tgt_vocab, max_len=3)
    assert examples == [([4, 5], [4]), ([4, UNK], [4, UNK])]
    assert dropped == {"empty": 2, "too_long": 2}
    assert "encoded 2 of 6 pairs; dropped 2 with an empty side, 2 over 3 pieces" in caplog.text
    assert sequence_lengths(examples) == ([3, 3], [2, 3])


def test_collate_hand_example() -> None:
    examples = [([5, 6, 7], [8]), ([9], [10, 11, 12])]
    batch = collate(examples, [1, 0])
    assert batch.src.tolist() == [[9, EOS, PAD, PAD], [5, 6, 7, EOS]]
    assert batch.src_keep.tolist() == [[True, True, False, False], [True] * 4]
    assert batch.tgt_in.tolist() == [[BOS, 10, 11, 12], [BOS, 8, PAD, PAD]]
    assert batch.tgt_out.tolist() == [[10, 11, 12, EOS], [8, EOS, PAD, PAD]]
    assert batch.tgt_keep.tolist() == [[True] * 4, [True, True, False, False]]
    assert (batch.n_src_tokens, batch.n_tgt_tokens) == (6, 6)
    assert batch.src.dtype == batch.tgt_in.dtype == batch.tgt_out.dtype == torch.long
    assert batch.src_keep.dtype == batch.tgt_keep.dtype == torch.bool
    assert bool(batch.src_keep.any(dim=1).all())  # every row has a key to attend to


def test_batch_to_moves_every_tensor() -> None:
    moved = collate([([5], [6])], [0]).to("meta")
    assert isinstance(moved, Batch)
    tensors = (moved.src, moved.src_keep, moved.tgt_in, moved.tgt_out, moved.tgt_keep)
    assert {t.device.type for t in tensors} == {"meta"}
    assert (moved.n_src_tokens, moved.n_tgt_tokens) == (2, 2)


@pytest.mark.parametrize("shuffle", [True, False])
def test_budget_and_every_index_once(lengths: tuple[list[int], list[int]], shuffle: bool) -> None:
    src, tgt = lengths
    batcher = TokenBatcher(src, tgt, max_tokens=256, shuffle=shuffle, seed=0)
    for epoch in range(3):
        batches = batcher.epoch(epoch)
        assert sorted(i for b in batches for i in b) == list(range(len(src)))
        for b in batches:
            over = padded(b, src) > 256 or padded(b, tgt) > 256
            assert not over or len(b) == 1
    singles = [b for b in batches if len(b) == 1 and max(src[b[0]], tgt[b[0]]) > 256]
    assert sorted(i for b in singles for i in b) == [500, 501, 502]  # over budget alone: own batch


def test_bucketing_keeps_padding_low(lengths: tuple[list[int], list[int]]) -> None:
    src, tgt = lengths
    batcher = TokenBatcher(src, tgt, max_tokens=256, shuffle=True, seed=0)
    bucketed = batcher.padding_ratio(batcher.epoch(0))
    order = list(range(len(src)))
    random.Random(0).shuffle(order)
    unsorted = [order[i : i + 8] for i in range(0, len(order), 8)]
    assert bucketed < 0.1 < batcher.padding_ratio(unsorted)


def test_padding_ratio_hand_example() -> None:
    batcher = TokenBatcher([2, 4, 3], [1, 1, 5], max_tokens=100, shuffle=False, seed=0)
    # Batch [0, 1]: src 2+4 real of 2*4 padded, tgt 1+1 of 2*1; batch [2]: 3 of 3, 5 of 5.
    # Real 16 of padded 18 -> 1/9 of the padded positions are padding.
    assert batcher.padding_ratio([[0, 1], [2]]) == pytest.approx(1 / 9)


def test_max_sentences_caps_the_batch_size() -> None:
    # Seven one-token examples fit one batch of 100 tokens; at most 3 per batch gives 3 + 3 + 1.
    batcher = TokenBatcher([1] * 7, [1] * 7, max_tokens=100, max_sentences=3, shuffle=False, seed=0)
    assert batcher.epoch(0) == [[0, 1, 2], [3, 4, 5], [6]]


def test_seeded_determinism(lengths: tuple[list[int], list[int]]) -> None:
    src, tgt = lengths
    one = TokenBatcher(src, tgt, max_tokens=256, shuffle=True, seed=7)
    two = TokenBatcher(src, tgt, max_tokens=256, shuffle=True, seed=7)
    assert one.epoch(3) == two.epoch(3)
    assert one.epoch(3) != one.epoch(4)
    assert one.epoch(3) != TokenBatcher(src, tgt, max_tokens=256, shuffle=True, seed=8).epoch(3)


def test_without_shuffle_batches_follow_length(lengths: tuple[list[int], list[int]]) -> None:
    src, tgt = lengths
    batches = TokenBatcher(src, tgt, max_tokens=256, shuffle=False, seed=0).epoch(0)
    flat = [i for b in batches for i in b]
    assert [(src[i], tgt[i]) for i in flat] == sorted((src[i], tgt[i]) for i in flat)


@pytest.mark.parametrize("world_size", [2, 3, 4])
def test_shards_are_disjoint_equal_and_covering(lengths: tuple[list[int], list[int]], world_size: int) -> None:
    src, tgt = lengths
    shards = [TokenBatcher(src, tgt, max_tokens=256, shuffle=True, seed=1, rank=r, world_size=world_size).epoch(2) for r in range(world_size)]
    assert len({len(shard) for shard in shards}) == 1
    indices = [i for shard in shards for b in shard for i in b]
    assert sorted(indices) == list(range(len(src)))  # disjoint and covering
    for shard in shards:
        for b in shard:
            assert len(b) == 1 or (padded(b, src) <= 256 and padded(b, tgt) <= 256)


def test_single_example_batches_that_cannot_split_evenly(caplog: pytest.LogCaptureFixture) -> None:
    nines = [9] * 5  # 5 examples, each alone over the budget: 5 batches for 2 ranks
    with caplog.at_level(logging.WARNING, logger="attnkit"):
        batchers = [TokenBatcher(nines, nines, max_tokens=5, shuffle=False, seed=0, rank=r, world_size=2) for r in (0, 1)]
        shards = [batcher.epoch(0) for batcher in batchers]
    assert [len(s) for s in shards] == [2, 2]
    assert "dropped 1 one-example batches" in caplog.text


def test_too_few_examples_for_the_ranks() -> None:
    with pytest.raises(DataError, match=r"^1 examples cannot give each of 2 ranks a batch$"):
        TokenBatcher([3], [3], max_tokens=10, shuffle=False, seed=0, rank=0, world_size=2)
