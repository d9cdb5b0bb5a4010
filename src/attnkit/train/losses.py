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


class _SmoothedCrossEntropy(torch.autograd.Function):
    """H(q', softmax(z)) summed over kept rows, with its gradient p - q' computed in the forward pass.

    One (N, V) buffer holds softmax(z) and becomes the gradient in place, instead of the separate
    log_softmax, gather, zero-fill and add passes (each over N x V) that autograd would run.
    """

    @staticmethod
    def forward(ctx, logits: Tensor, target: Tensor, epsilon: float, ignore_index: int) -> tuple[Tensor, Tensor]:
        V = logits.size(-1)
        keep = target != ignore_index  # (N,)
        gold = target.masked_fill(~keep, 0).unsqueeze(1)  # (N, 1)
        z = logits.float()  # (N, V)
        z_max = z.amax(dim=-1, keepdim=True)  # (N, 1)
        grad = z - z_max  # (N, V) shifted logits; the one (N, V) buffer
        grad.exp_()  # (N, V) exp(z - max)
        sum_exp = grad.sum(dim=-1, keepdim=True)  # (N, 1)
        lse = (z_max + sum_exp.log()).squeeze(1)  # (N,) log sum_k exp z_k
        nll = lse - z.gather(1, gold).squeeze(1)  # (N,) -log p(y)
        uniform = lse - z.mean(dim=-1)  # (N,) -(1/V) sum_k log p(k)
        loss = (1.0 - epsilon) * nll + epsilon * uniform  # (N,) H(q', p)
        grad.div_(sum_exp).sub_(epsilon / V)  # (N, V) p - eps/V
        grad.scatter_add_(1, gold, torch.full_like(gold, epsilon - 1.0, dtype=grad.dtype))  # (N, V) p - q'
        grad.mul_(keep.unsqueeze(1))  # (N, V) ignored rows get no gradient
        ctx.save_for_backward(grad)
        ctx.logits_dtype = logits.dtype
        nll_sum = torch.where(keep, nll, 0.0).sum()  # ()
        ctx.mark_non_differentiable(nll_sum)
        return torch.where(keep, loss, 0.0).sum(), nll_sum

    @staticmethod
    def backward(ctx, grad_loss: Tensor, grad_nll: Tensor) -> tuple[Tensor, None, None, None]:
        (grad,) = ctx.saved_tensors
        return grad.mul_(grad_loss).to(ctx.logits_dtype), None, None, None


def label_smoothed_nll(
    logits: Tensor, target: Tensor, *, epsilon: float = 0.1, ignore_index: int = 0
) -> tuple[Tensor, Tensor]:
    """Label-smoothed cross-entropy and plain NLL, summed over the positions that count.

    H(q', p) = (1 - eps) * (-log p(y)) + (eps / V) * (-sum_k log p(k)), the module docstring's q'
    written out, with p = softmax(logits); eps = 0 gives the NLL. Every logit must be finite when
    eps > 0 (the uniform part touches all V classes). The gradient, p - q' on counted rows, is
    computed together with the loss (`_SmoothedCrossEntropy`), so the loss may be backpropagated
    once.

    Args:
        logits: (N, V) unnormalised scores (flatten (B, T, V) to (B*T, V)); log-probabilities work
            too, since log_softmax leaves them unchanged. Computed in float32 whatever their dtype.
        target: (N,) long gold classes.
        epsilon: eps, the mass spread uniformly over the V classes.
        ignore_index: target value whose positions are left out of both sums (padding).

    Returns:
        (loss_sum, nll_sum): 0-dim float32 tensors, sums over the positions where
        target != ignore_index of H(q', p) and of -log p(y). `nll_sum` carries no gradient; divide
        it by the token count for perplexity (`attnkit.evaluate.metrics.perplexity`).
    """
    if logits.dim() != 2 or target.shape != logits.shape[:1]:
        shapes = f"{tuple(logits.shape)} and {tuple(target.shape)}"
        raise ValueError(f"label_smoothed_nll expects logits (N, V) and target (N,), got {shapes}")
    return _SmoothedCrossEntropy.apply(logits, target, epsilon, ignore_index)
