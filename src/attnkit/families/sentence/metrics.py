"""The overlap of a self-attentive sentence embedding's hops (Lin et al. 2017), reported by `task.py`."""

from __future__ import annotations

import torch
from torch import Tensor


def hop_overlap(a: Tensor) -> Tensor:
    """Mean pairwise overlap of the R attention hops of each example.

    The overlap of hops i and j is sum_s min(A_is, A_js): 1 when both put the same weight on every
    token, 0 when they attend to disjoint tokens (the histogram intersection of two distributions).
    Padding has weight 0 in every hop and adds nothing.

    Args:
        a: annotation matrix A ``(B, R, S)``, rows summing to 1.

    Returns:
        ``(B,)``: the mean over the R (R - 1) / 2 pairs i < j (0 when R = 1).
    """
    r = a.size(1)
    if r < 2:
        return a.new_zeros(a.size(0))
    pairwise = torch.minimum(a.unsqueeze(2), a.unsqueeze(1)).sum(dim=-1)  # (B, R, R)
    upper = torch.triu(torch.ones(r, r, dtype=torch.bool, device=a.device), diagonal=1)  # (R, R)
    return pairwise[:, upper].mean(dim=-1)  # (B,)
