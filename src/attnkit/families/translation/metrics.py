"""The entropy of attention distributions, a health figure of translation training (`task.py`)."""

from __future__ import annotations

import torch
from torch import Tensor


def attention_entropy(weights: Tensor, keep: Tensor | None = None) -> float:
    """Mean entropy, in nats, of attention distributions: mean over rows of -sum_s w_s log w_s.

    A uniform row over n keys has entropy log n, a one-hot row 0 (0 log 0 is taken as 0).

    Args:
        weights: (..., S) rows of attention weights, each a distribution over the last axis.
        keep: optional bool mask broadcastable to weights, True where an entry counts. Entries
            left out do not enter their row's sum; a row with no entry kept is left out of the
            mean. Pass e.g. `tgt_keep[:, :, None] & src_keep[:, None, :]` for (B, T, S) weights.

    Returns:
        The mean entropy over the rows that count (nan if none does).
    """
    terms = -torch.xlogy(weights, weights)  # (..., S)
    if keep is None:
        return terms.sum(dim=-1).mean().item()
    keep = keep.expand_as(weights)  # (..., S)
    entropy = terms.masked_fill(~keep, 0.0).sum(dim=-1)  # (...,)
    rows = keep.any(dim=-1)  # (...,)
    return entropy[rows].mean().item()
