"""Beam search against a scripted decoder whose beams and scores are worked out by hand.

Script of sentence 7 (decode_toys.SCRIPT_7; every row also gives PAD .005, UNK .01, BOS .015):

    prefix   EOS   A     B     C
    ()       .05   .45   .35   .12
    (A)      .6    .05   .2    .12
    (B)      .09   .75   .08   .05
    (C)      .4    .25   .12   .2
    (B,A)    .95   .005  .01   .005
    (A,B)    .5    .2    .1    .17
    (A,C)    .35   .25   .22   .15

Beam 2 (2K = 4 candidates a step, products of the probabilities along the path):
  step 1: A .45, B .35, C .12, EOS .05          -> top 2 hold no EOS; beams A, B
  step 2: A·EOS .27, B·A .2625, A·B .09, A·C .054 -> A·EOS finished; beams B·A, A·B
  step 3: B·A·EOS .249375, A·B·EOS .045, A·B·A .018, A·B·C .0153
          -> B·A·EOS finished; the sentence now holds K = 2, done (A·B·EOS is not kept).
Beam 3 (2K = 6):
  step 1: beams A, B, C (EOS is 4th)
  step 2: A·EOS .27, B·A .2625, A·B .09, A·C .054, C·EOS .048, B·EOS .0315
          -> A·EOS finished; beams B·A, A·B, A·C
  step 3: B·A·EOS .249375, A·B·EOS .045, A·C·EOS .0189, A·B·A .018, ...
          -> B·A·EOS and A·B·EOS finished: 3 = K, done (A·C·EOS is not kept).

GNMT length penalty, |Y| counting EOS: lp(2) = 7^.6/6^.6 = 1.09690, lp(3) = 8^.6/6^.6 = 1.18840.
alpha = 0:   [A] log .27 = -1.30933  beats  [B,A] log .249375 = -1.38880.
alpha = 0.6: [B,A] -1.38880/1.18840 = -1.16863  beats  [A] -1.30933/1.09690 = -1.19366.
"""

from __future__ import annotations

import math

import pytest
import torch
from decode_toys import BOS, EOS, SCRIPT_7, A, B, C, ScriptedDecoder, scripted_src

from attnkit.decode.beam import beam_search, first_non_eos, top_candidates
from attnkit.decode.hypothesis import length_penalty

LOG_A = math.log(0.45) + math.log(0.6)  # [A] EOS
LOG_BA = math.log(0.35) + math.log(0.75) + math.log(0.95)  # [B, A] EOS
LOG_AB = math.log(0.45) + math.log(0.2) + math.log(0.5)  # [A, B] EOS
LP2 = 7**0.6 / 6**0.6  # lp with |Y| = 2, alpha = 0.6 (Wu et al. 2016, eq. 14)
LP3 = 8**0.6 / 6**0.6  # lp with |Y| = 3


def approx(x: float) -> object:
    return pytest.approx(x, rel=1e-6, abs=1e-6)  # float32 sums of float32 logs


def search(**kw: object) -> list:
    src, keep = scripted_src(7, length=3, pad_to=5)
    return beam_search(ScriptedDecoder({7: SCRIPT_7}), src, keep, **kw, bos=BOS, eos=EOS)[0]


def test_length_penalty_is_gnmt_eq_14() -> None:
    assert length_penalty(2, 0.6) == approx(1.0969026)  # (5+2)^.6 / 6^.6 = exp(.6 * ln(7/6))
    assert length_penalty(3, 0.6) == approx(1.1884016)  # (5+3)^.6 / 6^.6 = exp(.6 * ln(8/6))
    assert length_penalty(17, 0.0) == 1.0


def test_first_step_expands_beam_zero_only() -> None:
    # Both beams hold the same state; beam 1 starts at -inf, so all 4 candidates come from beam 0.
    log_probs = torch.tensor([SCRIPT_7[()], SCRIPT_7[()]]).log()  # (K=2, V)
    scores, rows, tokens = top_candidates(torch.tensor([0.0, float("-inf")]), log_probs, beam=2)
    assert rows.tolist() == [[0, 0, 0, 0]]
    assert tokens.tolist() == [[A, B, C, EOS]]
    assert first_non_eos(tokens, EOS, beam=2).tolist() == [[0, 1]]  # beams A, B


def test_step_two_candidates_by_hand() -> None:
    cum = torch.tensor([math.log(0.45), math.log(0.35)])  # beams A, B
    log_probs = torch.tensor([SCRIPT_7[(A,)], SCRIPT_7[(B,)]]).log()  # (2, V)
    scores, rows, tokens = top_candidates(cum, log_probs, beam=2)
    assert tokens.tolist() == [[EOS, A, B, C]]
    assert rows.tolist() == [[0, 1, 0, 0]]  # A·EOS, B·A, A·B, A·C
    expected = [math.log(p) for p in (0.27, 0.2625, 0.09, 0.054)]
    assert scores[0].tolist() == [approx(x) for x in expected]
    assert first_non_eos(tokens, EOS, beam=2).tolist() == [[1, 2]]  # B·A, A·B go on


@pytest.mark.parametrize(
    ("beam", "alpha", "expected"),
    [
        (2, 0.0, [([A], LOG_A, LOG_A), ([B, A], LOG_BA, LOG_BA)]),
        (2, 0.6, [([B, A], LOG_BA, LOG_BA / LP3), ([A], LOG_A, LOG_A / LP2)]),  # the penalty flips the winner
        (3, 0.0, [([A], LOG_A, LOG_A), ([B, A], LOG_BA, LOG_BA), ([A, B], LOG_AB, LOG_AB)]),
        (3, 0.6, [([B, A], LOG_BA, LOG_BA / LP3), ([A], LOG_A, LOG_A / LP2), ([A, B], LOG_AB, LOG_AB / LP3)]),
    ],
)
def test_nbest_tokens_and_scores_by_hand(beam: int, alpha: float, expected: list) -> None:
    hyps = search(beam=beam, alpha=alpha, nbest=beam)
    assert [h.tokens for h in hyps] == [tokens for tokens, _, _ in expected]
    assert [h.log_prob for h in hyps] == [approx(lp) for _, lp, _ in expected]
    assert [h.score for h in hyps] == [approx(score) for _, _, score in expected]
    assert all(h.finished for h in hyps)


def test_nbest_one_is_the_head_of_the_list() -> None:
    assert [h.tokens for h in search(beam=3, alpha=0.6, nbest=1)] == [[B, A]]
    assert [h.tokens for h in search(beam=3, alpha=0.0, nbest=1)] == [[A]]


def test_attention_rows_follow_each_hypothesis_history() -> None:
    # The scripted step attends to source position sum(prefix) % 3 (3 kept of 5 positions).
    for hyp in search(beam=3, alpha=0.0, nbest=3, return_attention=True):
        steps = hyp.tokens + [EOS]
        assert hyp.attention.shape == (len(steps), 3)
        expected = [sum(steps[:t]) % 3 for t in range(len(steps))]
        assert hyp.attention.argmax(-1).tolist() == expected
        assert hyp.attention.sum(-1).tolist() == [1.0] * len(steps)


def test_max_length_fills_nbest_with_unfinished() -> None:
    # max_len = floor(0 * 3 + 2) = 2 steps. After step 2 (docstring): [A] finished, beams B·A (.2625)
    # and A·B (.09) [, A·C (.054) with beam 3] alive and unfinished; |Y| = 2 without EOS.
    hyps = search(beam=2, alpha=0.6, nbest=2, max_len_a=0.0, max_len_b=2)
    assert [(h.tokens, h.finished) for h in hyps] == [([A], True), ([B, A], False)]
    assert hyps[1].log_prob == approx(math.log(0.2625))
    assert hyps[1].score == approx(math.log(0.2625) / LP2)
    hyps = search(beam=3, alpha=0.0, nbest=3, max_len_a=0.0, max_len_b=2, return_attention=True)
    assert [(h.tokens, h.finished) for h in hyps] == [([A], True), ([B, A], False), ([A, B], False)]
    assert [h.log_prob for h in hyps] == [approx(LOG_A), approx(math.log(0.2625)), approx(math.log(0.09))]
    assert [h.attention.shape[0] for h in hyps] == [2, 2, 2]  # an unfinished one has no EOS row


def test_max_length_one_step_never_empty() -> None:
    # One step: nothing finished; the beams A (.45) and B (.35) come back unfinished.
    hyps = search(beam=2, alpha=0.0, nbest=2, max_len_a=0.0, max_len_b=1)
    assert [(h.tokens, h.finished) for h in hyps] == [([A], False), ([B], False)]
    assert [h.log_prob for h in hyps] == [approx(math.log(0.45)), approx(math.log(0.35))]
    # With nbest = 1 and a finished hypothesis available, it comes first.
    assert [(h.tokens, h.finished) for h in search(beam=2, nbest=1, max_len_a=0.0, max_len_b=2)] == [([A], True)]


def test_sentences_leave_the_batch_without_changing_the_others() -> None:
    # Sentence 8 follows DEFAULT_ROW everywhere (EOS .5, A .2, B .17, C .1): with beam 2 it
    # finishes [] (.5) at step 1 and [A] (.2 * .5 = .1) at step 2, one step before sentence 7.
    model = ScriptedDecoder({7: SCRIPT_7})
    src7, keep7 = scripted_src(7, length=3, pad_to=6)
    src8, keep8 = scripted_src(8, length=6, pad_to=6)
    batch = beam_search(model, torch.cat([src8, src7]), torch.cat([keep8, keep7]), beam=2, alpha=0.0, nbest=2, bos=BOS, eos=EOS)
    assert [[h.tokens for h in nbest] for nbest in batch] == [[[], [A]], [[A], [B, A]]]
    assert [h.log_prob for h in batch[0]] == [approx(math.log(0.5)), approx(math.log(0.1))]
    alone7 = beam_search(model, src7, keep7, beam=2, alpha=0.0, nbest=2, bos=BOS, eos=EOS)[0]
    assert [(h.tokens, h.log_prob) for h in alone7] == [(h.tokens, h.log_prob) for h in batch[1]]


def test_rejects_nbest_above_beam() -> None:
    with pytest.raises(ValueError, match="nbest=3"):
        search(beam=2, nbest=3)
