"""Training losses.

`label_smoothed_nll` is the label-smoothed cross-entropy of Szegedy et al. (2016), "Rethinking
the Inception Architecture for Computer Vision", sec. 7, used with eps_ls = 0.1 by Vaswani et al.
(2017), "Attention Is All You Need", sec. 5.4. The target distribution mixes the one-hot label
with the uniform distribution over the V classes:

    q'(k) = (1 - eps) * delta(k, y) + eps / V

and the loss is the cross-entropy H(q', p) = -sum_k q'(k) log p(k).

The logits may be given as they are, or as decoder features and the output projection
(`logits = features @ weight^T`): then the (N, V) logits never exist whole, and the projection, the
loss and both gradients are computed a block of rows at a time, in cache (`ROWS_PER_BLOCK`).
"""

from __future__ import annotations

import torch
from torch import Tensor

ROWS_PER_BLOCK = 256  # (256, 8000) float32 logits = 8 MB: measured fastest on 2 Zen 4 cores


def _smoothed_cross_entropy(z: Tensor, gold: Tensor, keep: Tensor, epsilon: float) -> tuple[Tensor, Tensor, Tensor]:
    """H(q', softmax(z)) and -log p(y), summed over kept rows, and the gradient p - q' (C, V).

    z (C, V) float32 logits, gold (C,) long, keep (C,) bool. Rows not kept get a zero gradient.
    """
    V = z.size(1)
    log_p = torch.log_softmax(z, dim=-1)  # (C, V) one fused pass
    nll = -log_p.gather(1, gold[:, None]).squeeze(1)  # (C,) -log p(y)
    uniform = -log_p.mean(dim=-1)  # (C,) -(1/V) sum_k log p(k)
    loss = (1.0 - epsilon) * nll + epsilon * uniform  # (C,) H(q', p)
    grad = log_p.exp_().sub_(epsilon / V)  # (C, V) p - eps/V, in log_p's memory
    grad.scatter_add_(1, gold[:, None], grad.new_full((grad.size(0), 1), epsilon - 1.0))  # (C, V) p - q'
    if not bool(keep.all()):
        grad.mul_(keep[:, None])  # (C, V) ignored rows get no gradient
    return torch.where(keep, loss, 0.0).sum(), torch.where(keep, nll, 0.0).sum(), grad


def _compute_dtype(x: Tensor) -> torch.dtype:
    """The matmul dtype: autocast's when it is on for x's device, else x's own."""
    device = x.device.type
    return torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else x.dtype


class _SmoothedCrossEntropy(torch.autograd.Function):
    """H(q', softmax(x W^T)) (or of softmax(x) when W is None) summed over kept rows.

    Both gradients are computed in the forward pass, block by block: dL/dz = p - q' for a block of
    logits, then dL/dx = (p - q') W and dL/dW += (p - q')^T x. Only (N, D) and (V, D) gradients are
    kept for the backward pass, which scales them by the incoming gradient.
    """

    @staticmethod
    def forward(ctx, x: Tensor, weight: Tensor | None, target: Tensor, epsilon: float, ignore_index: int, need_grad: bool):
        dtype = _compute_dtype(x)
        acc = torch.promote_types(dtype, torch.float32)  # softmax and gradient sums: float32 at least
        xc = x.to(dtype)  # (N, D) or (N, V)
        w = None if weight is None else weight.to(dtype)  # (V, D)
        keep = target != ignore_index  # (N,)
        gold = target.masked_fill(~keep, 0)  # (N,)
        grad_x = torch.empty(x.shape, dtype=acc, device=x.device) if need_grad else None
        grad_w = torch.zeros(weight.shape, dtype=acc, device=x.device) if need_grad and w is not None else None
        loss_sum = nll_sum = x.new_zeros((), dtype=acc)
        for start in range(0, x.size(0), ROWS_PER_BLOCK):
            rows = slice(start, start + ROWS_PER_BLOCK)
            z = xc[rows].to(acc) if w is None else (xc[rows] @ w.T).to(acc)  # (C, V)
            loss, nll, z = _smoothed_cross_entropy(z, gold[rows], keep[rows], epsilon)  # z becomes p - q'
            loss_sum, nll_sum = loss_sum + loss, nll_sum + nll
            if not need_grad:
                continue
            if w is None:
                grad_x[rows] = z  # (C, V)
            else:
                dz = z.to(dtype)  # (C, V)
                grad_x[rows] = dz @ w  # (C, D)
                grad_w += dz.T @ xc[rows]  # (V, D)
        ctx.save_for_backward(grad_x, grad_w)
        ctx.dtypes = (x.dtype, None if weight is None else weight.dtype)
        ctx.mark_non_differentiable(nll_sum)
        return loss_sum, nll_sum

    @staticmethod
    def backward(ctx, grad_loss: Tensor, grad_nll: Tensor):
        grad_x, grad_w = ctx.saved_tensors
        if grad_x is None:
            raise RuntimeError("label_smoothed_nll: no gradient was computed (called without autograd)")
        x_dtype, w_dtype = ctx.dtypes
        grad_x = grad_x.mul_(grad_loss).to(x_dtype)
        grad_w = None if grad_w is None else grad_w.mul_(grad_loss).to(w_dtype)
        return grad_x, grad_w, None, None, None, None


def label_smoothed_nll(x: Tensor, target: Tensor, *, weight: Tensor | None = None, epsilon: float = 0.1, ignore_index: int = 0) -> tuple[Tensor, Tensor]:
    """Label-smoothed cross-entropy and plain NLL, summed over the positions that count.

    H(q', p) = (1 - eps) * (-log p(y)) + (eps / V) * (-sum_k log p(k)), the module docstring's q'
    written out, with p = softmax(logits); eps = 0 gives the NLL. Every logit must be finite when
    eps > 0 (the uniform part touches all V classes). The gradient, p - q' on counted rows, is
    computed together with the loss, so the loss may be backpropagated once.

    Args:
        x: (N, V) logits (flatten (B, T, V) to (B*T, V)); log-probabilities work too, since
            log_softmax leaves them unchanged. With `weight`, (N, D) features instead.
        target: (N,) long gold classes.
        weight: (V, D) output projection: logits = x @ weight^T, never materialised whole. Matmuls
            run in autocast's dtype when autocast is on; the softmax always in float32.
        epsilon: eps, the mass spread uniformly over the V classes.
        ignore_index: target value whose positions are left out of both sums (padding).

    Returns:
        (loss_sum, nll_sum): 0-dim float32 tensors (float64 for float64 input), sums over the positions where
        target != ignore_index of H(q', p) and of -log p(y). `nll_sum` carries no gradient; divide
        it by the token count for perplexity (`attnkit.evaluate.metrics.perplexity`).
    """
    width = x.size(-1) if weight is None else weight.size(1)
    if x.dim() != 2 or target.shape != x.shape[:1] or x.size(1) != width:
        shapes = f"{tuple(x.shape)}, {tuple(target.shape)}" + ("" if weight is None else f", weight {tuple(weight.shape)}")
        raise ValueError(f"label_smoothed_nll expects x (N, V) or (N, D) with weight (V, D), and target (N,); got {shapes}")
    need_grad = torch.is_grad_enabled() and (x.requires_grad or (weight is not None and weight.requires_grad))
    return _SmoothedCrossEntropy.apply(x, weight, target, epsilon, ignore_index, need_grad)
