"""Greedy search: the scripted decoder by hand, and beam 1 == greedy on a random recurrent model."""

from __future__ import annotations

import math

import pytest
import torch
from decode_toys import SCRIPT_7, A, ScriptedDecoder, ToyGRU, random_batch, scripted_src

from attnkit.data.vocab import BOS, EOS
from attnkit.decode.beam import beam_search
from attnkit.decode.greedy import greedy


def approx(x: float) -> object:
    return pytest.approx(x, rel=1e-6, abs=1e-6)


def test_scripted_greedy_by_hand() -> None:
    # SCRIPT_7 (see test_beam.py): argmax of () is A (.45), argmax of (A) is EOS (.6).
    src, keep = scripted_src(7, length=3, pad_to=5)
    [hyp] = greedy(ScriptedDecoder({7: SCRIPT_7}), src, keep, return_attention=True, bos=BOS, eos=EOS)
    assert (hyp.tokens, hyp.finished) == ([A], True)
    assert hyp.log_prob == approx(math.log(0.45) + math.log(0.6))
    assert hyp.score == hyp.log_prob  # greedy applies no length penalty
    # Attention at source position sum(prefix) % 3: prefixes () and (A,) -> 0, 4 % 3 = 1; pads cut off.
    assert hyp.attention.tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]


def test_scripted_greedy_cut_at_max_length() -> None:
    # max_len = floor(0 * 3 + 1) = 1 step: A is generated, EOS never is.
    src, keep = scripted_src(7, length=3, pad_to=5)
    [hyp] = greedy(ScriptedDecoder({7: SCRIPT_7}), src, keep, max_len_a=0.0, max_len_b=1, return_attention=True, bos=BOS, eos=EOS)
    assert (hyp.tokens, hyp.finished, hyp.log_prob) == ([A], False, approx(math.log(0.45)))
    assert hyp.attention.shape == (1, 3)


def test_greedy_max_length_is_per_sentence() -> None:
    # max_len = floor(1.0 * source_length + 0): each sentence has its own step limit. A finished
    # hypothesis used at most limit - 1 tokens before its EOS; an unfinished one exactly limit.
    model = ToyGRU().eval()
    src, keep = random_batch(8, seed=0)
    hyps = greedy(model, src, keep, max_len_a=1.0, max_len_b=0, bos=BOS, eos=EOS)
    limits = keep.sum(1).tolist()  # [4, 5, 7, 2, 3, 5, 3, 3]
    for hyp, limit in zip(hyps, limits):
        assert len(hyp.tokens) + hyp.finished <= limit
        assert hyp.finished or len(hyp.tokens) == limit
    assert len({len(h.tokens) for h in hyps if not h.finished}) > 2  # several limits were hit


def test_beam_one_equals_greedy_on_a_batch() -> None:
    model = ToyGRU().eval()
    src, keep = random_batch(8, seed=1)
    expected = greedy(model, src, keep, max_len_b=0, return_attention=True, bos=BOS, eos=EOS)
    assert {h.finished for h in expected} == {True, False}  # both endings are exercised
    for alpha in (0.0, 0.6):
        got = beam_search(model, src, keep, beam=1, alpha=alpha, max_len_b=0, return_attention=True, bos=BOS, eos=EOS)
        for [hyp], ref in zip(got, expected):
            assert hyp.tokens == ref.tokens
            assert hyp.log_prob == ref.log_prob  # the same float32 additions in the same order
            assert hyp.finished == ref.finished
            assert torch.equal(hyp.attention, ref.attention)


def test_greedy_runs_without_grad() -> None:
    model = ToyGRU()
    src, keep = random_batch(2, seed=0)
    with torch.enable_grad():
        [hyp, _] = greedy(model, src, keep, max_len_b=3, return_attention=True, bos=BOS, eos=EOS)
    assert not hyp.attention.requires_grad and hyp.attention.is_inference()
