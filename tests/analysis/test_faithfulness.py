"""The faithfulness metrics (`analysis.faithfulness`) against hand-computed cases.

The toy model's p(y | kept tokens) is a sum of token weights, p = sum_i w_i keep_i, so every figure
can be worked out on paper: with w = (0.4, 0.1, 0.3, 0.2) (p(y | x) = 1) and the ranking by w,
0 2 3 1, removing the top 1 leaves 0.6 and the top 2 leaves 0.3.
"""

from __future__ import annotations

import pytest
import torch

from attnkit.analysis.faithfulness import CURVE, deletion_area, faithfulness, faithfulness_of_rankings, leave_one_out, random_scores, ranking, top_k
from attnkit.errors import AttnkitError

W = torch.tensor([0.4, 0.1, 0.3, 0.2], dtype=torch.float64)


def linear(w: torch.Tensor):
    """keep (N, T) -> sum of the kept tokens' weights (N,), counting the masks it is asked."""
    calls = []

    def predict(keep: torch.Tensor) -> torch.Tensor:
        calls.append(keep.shape)
        return keep.to(w.dtype) @ w  # (N,)

    predict.calls = calls
    return predict


def test_bins_take_the_ceiling_of_the_share_without_float_noise():
    assert [top_k(d, 10) for d in (0.01, 0.05, 0.10, 0.20, 0.50)] == [1, 1, 1, 2, 5]  # ERASER's bins on 10 tokens
    assert top_k(0.07, 100) == 7 and top_k(0.0, 5) == 0 and top_k(1.0, 5) == 5  # 0.07 * 100 = 7.000000000000001
    with pytest.raises(AttnkitError, match="in \\[0, 1\\]"):
        top_k(1.5, 4)


def test_ranking_is_by_score_and_ties_keep_their_order():
    assert ranking(W).tolist() == [0, 2, 3, 1]
    assert ranking(torch.tensor([1.0, 2.0, 1.0, 2.0])).tolist() == [1, 3, 0, 2]


def test_comprehensiveness_sufficiency_aopc_and_the_deletion_area_by_hand():
    predict = linear(W)
    m = faithfulness(predict, W, 1.0, fractions=(0.25, 0.5), points=(0.0, 0.25, 0.5, 0.75, 1.0))
    # comprehensiveness: 1 - 0.6, 1 - 0.3; sufficiency: 1 - 0.4 (top 1 only), 1 - 0.7 (tokens 0 and 2)
    assert m.comprehensiveness == pytest.approx([0.4, 0.7], abs=1e-12)
    assert m.sufficiency == pytest.approx([0.6, 0.3], abs=1e-12)
    assert m.comprehensiveness_aopc == pytest.approx(0.55, abs=1e-12)
    assert m.sufficiency_aopc == pytest.approx(0.45, abs=1e-12)
    assert m.curve == pytest.approx([1.0, 0.6, 0.3, 0.1, 0.0], abs=1e-12)
    # trapezoids of width 0.25: (1 + 0.6)/2 + (0.6 + 0.3)/2 + (0.3 + 0.1)/2 + (0.1 + 0)/2 = 1.5, times 0.25
    assert deletion_area(m.curve, (0.0, 0.25, 0.5, 0.75, 1.0)) == pytest.approx(0.375, abs=1e-12)
    assert predict.calls == [(7, 4)]  # 2 + 2 + 5 masks in one batch, less the curve's two that are the bins' "without" ones


def test_the_default_bins_and_curve_on_ten_tokens():
    w = torch.arange(10, 0, -1, dtype=torch.float64) / 55  # 10/55 .. 1/55, ranked in position order
    m = faithfulness(linear(w), w, 1.0)
    kept = [1 - float(w[:k].sum()) for k in (1, 1, 1, 2, 5)]
    assert m.comprehensiveness == pytest.approx([1 - p for p in kept], abs=1e-12)
    assert m.curve == pytest.approx([1 - float(w[:k].sum()) for k in range(11)], abs=1e-12)
    assert len(CURVE) == 11 and CURVE[0] == 0.0 and CURVE[-1] == 1.0


def test_leave_one_out_gives_each_tokens_own_weight():
    assert leave_one_out(linear(W), 4, 1.0).tolist() == pytest.approx(W.tolist(), abs=1e-12)


def test_the_random_floor():
    assert torch.equal(random_scores(7, 3), random_scores(7, 3)) and not torch.equal(random_scores(7, 3), random_scores(7, 4))
    # A random ranking removes, on average, k/T of the total weight: E[comprehensiveness_k] = k / T here.
    w = torch.tensor([0.5, 0.2, 0.1, 0.1, 0.05, 0.05], dtype=torch.float64)
    runs = [faithfulness(linear(w), random_scores(6, seed), 1.0, fractions=(1 / 6, 0.5)) for seed in range(1000)]
    mean = [sum(r.comprehensiveness[j] for r in runs) / len(runs) for j in range(2)]
    assert mean == pytest.approx([1 / 6, 0.5], abs=0.02)  # std of one draw <= 0.16, of the mean <= 0.005
    oracle = faithfulness(linear(w), w, 1.0, fractions=(1 / 6, 0.5))
    assert oracle.comprehensiveness == pytest.approx([0.5, 0.8], abs=1e-12) and oracle.comprehensiveness_aopc > sum(mean) / 2


def test_nan_scores_are_refused():
    with pytest.raises(AttnkitError, match="NaN"):
        ranking(torch.tensor([0.1, float("nan")]))


def test_several_rankings_are_one_batch_and_each_as_on_its_own():
    """faithfulness_of_rankings against `faithfulness` of each ranking in a plain loop."""
    w = torch.tensor([0.05, 0.3, 0.1, 0.25, 0.2, 0.1], dtype=torch.float64)
    scores = {"w": w, "reversed": -w, "random": random_scores(6, 1), "flat": torch.zeros(6, dtype=torch.float64)}
    predict = linear(w)
    got = faithfulness_of_rankings(predict, scores, 1.0)
    assert list(got) == list(scores) and len(predict.calls) == 1
    for name, s in scores.items():
        want = faithfulness(linear(w), s, 1.0)
        assert got[name] == want, name
    assert faithfulness_of_rankings(predict, {}, 1.0) == {}
