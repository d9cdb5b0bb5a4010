"""Training losses.

`label_smoothed_nll` is the label-smoothed cross-entropy of Szegedy et al. (2016), "Rethinking
the Inception Architecture for Computer Vision", sec. 7, used with eps_ls = 0.1 by Vaswani et al.
(2017), "Attention Is All You Need", sec. 5.4. The target distribution mixes the one-hot label
with the uniform distribution over the V classes:

    q'(k) = (1 - eps) * delta(k, y) + eps / V

and the loss is the cross-entropy H(q', p) = -sum_k q'(k) log p(k).
"""

from __future__ import annotations

import torch
from torch import Tensor


def label_smoothed_nll(
    log_probs: Tensor, target: Tensor, *, epsilon: float = 0.1, ignore_index: int = 0
) -> tuple[Tensor, Tensor]:
    """Label-smoothed cross-entropy and plain NLL, summed over the positions that count.

    H(q', p) = (1 - eps) * (-log p(y)) + (eps / V) * (-sum_k log p(k)), which is the module
    docstring's q' written out; eps = 0 gives the NLL. Every log-probability must be finite when
    eps > 0 (the uniform part touches all V classes, so a class masked to -inf makes it inf).

    Args:
        log_probs: (N, V) normalised log-probabilities (flatten (B, T, V) to (B*T, V)).
        target: (N,) long gold classes.
        epsilon: eps, the mass spread uniformly over the V classes.
        ignore_index: target value whose positions are left out of both sums (padding).

    Returns:
        (loss_sum, nll_sum): 0-dim tensors, sums over the positions where target != ignore_index
        of H(q', p) and of -log p(y). Divide by the number of such tokens for a mean; `nll_sum`
        gives the perplexity (`attnkit.evaluate.metrics.perplexity`). Both keep their graph.
    """
    if log_probs.dim() != 2 or target.shape != log_probs.shape[:1]:
        shapes = f"{tuple(log_probs.shape)} and {tuple(target.shape)}"
        raise ValueError(f"label_smoothed_nll expects log_probs (N, V) and target (N,), got {shapes}")
    keep = target != ignore_index  # (N,)
    gold = target.masked_fill(~keep, 0)  # (N,) a valid index where ignored
    nll = -log_probs.gather(1, gold.unsqueeze(1)).squeeze(1)  # (N,)
    loss = nll  # (N,) eps = 0 needs no uniform part (which a -inf log-prob would turn into NaN)
    if epsilon != 0:
        uniform = -log_probs.sum(dim=-1) / log_probs.size(-1)  # (N,) -(1/V) sum_k log p(k)
        loss = (1.0 - epsilon) * nll + epsilon * uniform  # (N,)
    zero = torch.zeros((), dtype=loss.dtype, device=loss.device)
    return torch.where(keep, loss, zero).sum(), torch.where(keep, nll, zero).sum()
