"""Rank correlation between attention-derived scores and attributions (Jain & Wallace 2019, sec. 4.1).

Kendall's tau-b (Kendall 1945), which corrects for ties:

    tau_b = (n_c - n_d) / sqrt((n_0 - n_1)(n_0 - n_2))

over all pairs i < j: n_c concordant pairs (both vectors order i, j the same way), n_d discordant
pairs, n_0 = n(n - 1)/2, n_1 pairs tied in the first vector, n_2 pairs tied in the second (a pair
tied in both counts in both). It is scipy.stats.kendalltau's default (variant "b"); scipy is not a
dependency (the `analysis` extra), and `attnkit faithfulness` runs without it, so it is computed here
over all pairs, O(n^2) for n tokens (docs/design/libraries.md; the tests compare it with scipy's). A
constant vector gives NaN, as in scipy.

`bootstrap_ci`: the percentile bootstrap confidence interval of a mean (of the per-text taus, over the texts).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from attnkit.errors import AttnkitError


def kendall_tau(x: Tensor, y: Tensor) -> float:
    """Kendall's tau-b of two score vectors of the same length n >= 2 (NaN if either is constant)."""
    x, y = (torch.as_tensor(v).detach().to(torch.float64).reshape(-1) for v in (x, y))
    if x.numel() != y.numel() or x.numel() < 2:
        raise AttnkitError(f"Kendall tau: needs two vectors of one length >= 2, got {x.numel()} and {y.numel()}")
    n = x.numel()
    i, j = torch.triu_indices(n, n, offset=1)  # all pairs i < j
    dx, dy = torch.sign(x[j] - x[i]), torch.sign(y[j] - y[i])  # (n0,)
    s = float((dx * dy).sum())  # n_c - n_d
    n0 = n * (n - 1) // 2
    n1, n2 = int((dx == 0).sum()), int((dy == 0).sum())
    if n1 == n0 or n2 == n0:
        return math.nan
    return s / math.sqrt((n0 - n1) * (n0 - n2))


def bootstrap_ci(values: Tensor, resamples: int = 10_000, level: float = 0.95, seed: int = 0) -> tuple[float, float]:
    """The percentile bootstrap confidence interval of the mean of `values` (n,) (Efron & Tibshirani 1993, ch. 13):
    `resamples` means of n values drawn with replacement (a seeded generator), their (1 - level)/2 and
    (1 + level)/2 quantiles (linear interpolation between order statistics, numpy's default)."""
    v = torch.as_tensor(values, dtype=torch.float64).reshape(-1)
    if v.numel() == 0 or not 0 < level < 1:
        raise AttnkitError(f"bootstrap: needs at least one value and a level in (0, 1), got {v.numel()} values, level {level}")
    g = torch.Generator().manual_seed(seed)
    means = torch.empty(resamples, dtype=torch.float64)  # (N,)
    for start in range(0, resamples, 1000):  # 1000 resamples at a time: (1000, n) indices
        k = min(1000, resamples - start)
        means[start : start + k] = v[torch.randint(v.numel(), (k, v.numel()), generator=g)].mean(dim=1)
    lo, hi = torch.quantile(means, torch.tensor([(1 - level) / 2, (1 + level) / 2], dtype=torch.float64)).tolist()
    return lo, hi
