"""Kendall's tau-b against hand-counted pairs, and against scipy.stats.kendalltau (docs/design/libraries.md)."""

import math

import pytest
import torch

from attnkit.analysis.correlation import bootstrap_ci, kendall_tau
from attnkit.errors import AttnkitError


def test_identical_and_reversed_orders():
    x = torch.tensor([0.1, 0.4, 0.2, 0.9])
    assert kendall_tau(x, x * 3 + 1) == pytest.approx(1.0)
    assert kendall_tau(x, -x) == pytest.approx(-1.0)


def test_discordant_pairs_counted_by_hand():
    # x = 1..5, y = [3, 1, 2, 5, 4]: of the 10 pairs, (0,1), (0,2) and (3,4) are discordant, 7 concordant:
    # tau = (7 - 3) / 10 = 0.4.
    assert kendall_tau(torch.tensor([1.0, 2, 3, 4, 5]), torch.tensor([3.0, 1, 2, 5, 4])) == pytest.approx(0.4)


def test_ties_use_the_tau_b_denominator():
    # x = [1, 2, 2, 3], y = [1, 3, 2, 4]: pair (1,2) is tied in x; the other 5 pairs are concordant.
    # n0 = 6, n1 = 1, n2 = 0: tau_b = 5 / sqrt(5 * 6) = 0.912870929... (scipy.stats.kendalltau gives the same).
    got = kendall_tau(torch.tensor([1.0, 2, 2, 3]), torch.tensor([1.0, 3, 2, 4]))
    assert got == pytest.approx(5 / math.sqrt(30))
    # Ties in both: x = [1, 1, 2, 2], y = [1, 2, 2, 3]. Pairs: (0,1) x-tie; (0,2) c; (0,3) c; (1,2) y-tie; (1,3) c; (2,3) x-tie.
    # n_c = 3, n_d = 0, n1 = 2, n2 = 1: 3 / sqrt(4 * 5).
    assert kendall_tau(torch.tensor([1.0, 1, 2, 2]), torch.tensor([1.0, 2, 2, 3])) == pytest.approx(3 / math.sqrt(20))


def test_constant_vector_is_nan_and_bad_lengths_raise():
    assert math.isnan(kendall_tau(torch.ones(3), torch.tensor([1.0, 2, 3])))
    with pytest.raises(AttnkitError, match="one length"):
        kendall_tau(torch.ones(3), torch.ones(4))


def test_equals_scipy_kendalltau_with_and_without_ties():
    stats = pytest.importorskip("scipy.stats", reason="scipy is the analysis extra (make test installs it)")
    g = torch.Generator().manual_seed(0)
    for n in (2, 3, 7, 40, 200):
        for ties in (False, True):
            x, y = torch.randn(n, generator=g), torch.randn(n, generator=g)
            if ties:  # few distinct values: many pairs tied in one vector, in the other, or in both
                x, y = (v.mul(2).round() for v in (x, y))
            if len(set(x.tolist())) == 1 or len(set(y.tolist())) == 1:
                continue
            expected = stats.kendalltau(x.numpy(), y.numpy()).statistic  # variant "b" by default
            assert kendall_tau(x, y) == pytest.approx(expected, abs=1e-12), (n, ties)


def test_bootstrap_of_a_mean_of_zeros_and_ones_is_the_binomials_quantiles():
    """n values, k of them 1: a resample's mean is Binomial(n, k/n) / n, so the percentile interval is its quantiles."""
    binom = pytest.importorskip("scipy.stats").binom
    n, k = 50, 15
    values = torch.tensor([1.0] * k + [0.0] * (n - k))
    lo, hi = bootstrap_ci(values, resamples=20_000, seed=3)
    assert lo == pytest.approx(binom.ppf(0.025, n, k / n) / n, abs=1.01 / n)  # within one step of the lattice
    assert hi == pytest.approx(binom.ppf(0.975, n, k / n) / n, abs=1.01 / n)
    assert bootstrap_ci(values, resamples=2_000, seed=3) == bootstrap_ci(values, resamples=2_000, seed=3)  # seeded
    assert bootstrap_ci(torch.full((7,), 0.25), resamples=100) == pytest.approx((0.25, 0.25))


def test_bootstrap_refuses_nothing_to_resample():
    with pytest.raises(AttnkitError, match="at least one value"):
        bootstrap_ci(torch.tensor([]))
