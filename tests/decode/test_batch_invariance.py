"""A sentence decodes the same alone or in a padded batch of 8 (greedy and beam search)."""

from __future__ import annotations

import pytest
import torch
from decode_toys import PAD, ToyGRU, random_batch

from attnkit.data.vocab import BOS, EOS
from attnkit.decode.beam import beam_search
from attnkit.decode.greedy import greedy


def alone(src: torch.Tensor, keep: torch.Tensor, i: int) -> tuple[torch.Tensor, torch.Tensor]:
    length = int(keep[i].sum())
    return src[i : i + 1, :length], keep[i : i + 1, :length]


def test_batch_invariant_beam_search() -> None:
    model = ToyGRU().eval()
    src, keep = random_batch(8, seed=2)
    src = torch.cat([src, torch.full((8, 3), PAD)], dim=1)  # extra padding beyond the longest
    keep = src != PAD
    kw = dict(beam=3, alpha=0.6, nbest=3, max_len_b=0, return_attention=True)
    batch = beam_search(model, src, keep, **kw, bos=BOS, eos=EOS)
    assert {h.finished for nbest in batch for h in nbest} == {True, False}
    # Beams 1..K-1 start at -inf, so the K copies of a sentence never yield duplicate hypotheses.
    assert all(len({tuple(h.tokens) for h in nbest}) == 3 for nbest in batch)
    for i in range(8):
        [single] = beam_search(model, *alone(src, keep, i), **kw, bos=BOS, eos=EOS)
        assert [h.tokens for h in single] == [h.tokens for h in batch[i]]
        assert [h.finished for h in single] == [h.finished for h in batch[i]]
        for a, b in zip(single, batch[i]):
            assert a.score == pytest.approx(b.score, abs=1e-5)
            assert a.log_prob == pytest.approx(b.log_prob, abs=1e-5)
            assert a.attention.shape == b.attention.shape == (len(a.tokens) + a.finished, int(keep[i].sum()))
            torch.testing.assert_close(a.attention, b.attention, atol=1e-5, rtol=0)


def test_batch_invariant_greedy() -> None:
    model = ToyGRU().eval()
    src, keep = random_batch(8, seed=4)
    batch = greedy(model, src, keep, max_len_b=0, bos=BOS, eos=EOS)
    for i in range(8):
        [single] = greedy(model, *alone(src, keep, i), max_len_b=0, bos=BOS, eos=EOS)
        assert (single.tokens, single.finished) == (batch[i].tokens, batch[i].finished)
        assert single.log_prob == pytest.approx(batch[i].log_prob, abs=1e-5)
