"""`ferret_aopc`: ferret-xai's bins, rationale and mean, checked on a predict whose every value is known."""

import pytest
import torch

from attnkit.analysis.faithfulness import ferret_aopc, ferret_aopc_of_rankings


def additive(weights):
    """keep (N, T) -> the sum of the kept tokens' weights (N,): p(y | kept) of a made-up model."""
    w = torch.tensor(weights, dtype=torch.float64)
    return lambda keep: (keep.double() * w).sum(dim=1)


def test_bins_floor_skip_empty_and_repeated_rationales():
    # T = 5: floor(d * 5) = 0, 1, 1, 2, 2, 3, 3, 4, 4, 5 for d = 0.1 ... 1.0. Scores rank tokens 2, 0, 4, 1, 3;
    # only 2 and 0 are positive, so the rationales are {2} (k = 1) and {2, 0} (k = 2 and up): two bins left.
    w = [0.1, 0.2, 0.3, 0.15, 0.25]
    p = sum(w)
    comp, suff = ferret_aopc(additive(w), torch.tensor([0.5, -0.1, 0.9, -0.3, 0.0]), p)
    assert comp == pytest.approx(((0.3) + (0.3 + 0.1)) / 2)  # p - p(without the rationale)
    assert suff == pytest.approx(((p - 0.3) + (p - 0.4)) / 2)  # p - p(the rationale only)


def test_no_positive_score_gives_ferrets_defaults():
    assert ferret_aopc(additive([0.5, 0.5]), torch.tensor([-1.0, 0.0]), 1.0) == (0.0, 1.0)


def test_fractions_that_take_no_token_are_skipped():
    # T = 3 and d = 0.1, 0.2: floor is 0 both times, so only d = 0.5 (k = 1) counts.
    w = [0.2, 0.3, 0.5]
    comp, suff = ferret_aopc(additive(w), torch.tensor([1.0, 2.0, 3.0]), 1.0, fractions=(0.1, 0.2, 0.5))
    assert (comp, suff) == (pytest.approx(0.5), pytest.approx(0.5))


def test_several_rankings_are_one_call_of_predict_with_each_ones_figures():
    """`ferret_aopc_of_rankings` gives each ranking's `ferret_aopc`, from one call that holds each distinct input once."""
    w = [0.1, 0.2, 0.3, 0.15, 0.25, 0.05, 0.4]
    calls = []

    def predict(keep):
        calls.append(keep)
        return additive(w)(keep)

    rankings = {"a": torch.tensor([0.5, -0.1, 0.9, -0.3, 0.0, 0.2, 0.1]), "b": torch.tensor([0.5, -0.1, 0.9, -0.3, 0.0, 0.2, 0.1]),
                "c": torch.tensor([3.0, 2.0, 1.0, 0.5, 0.4, 0.3, 0.2]), "none": -torch.ones(7)}  # fmt: skip
    together = ferret_aopc_of_rankings(predict, rankings, sum(w))
    assert len(calls) == 1 and len(calls[0]) == len({tuple(row.tolist()) for row in calls[0]})
    alone = {name: ferret_aopc(additive(w), s, sum(w)) for name, s in rankings.items()}
    assert together == {name: (pytest.approx(c), pytest.approx(s)) for name, (c, s) in alone.items()}
    assert together["none"] == (0.0, 1.0)
