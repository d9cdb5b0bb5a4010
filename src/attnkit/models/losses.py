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
import torch.nn.functional as F
from torch import Tensor

from attnkit.precision import compute_dtype

# (256, 8000) float32 logits = 8 MB: measured fastest on 2 Zen 4 cores. With the projection, the rows
# are padded to whole blocks: oneDNN, which runs bf16 matmuls on a CPU, compiles a kernel for every
# new matmul shape (18 ms for a (C, 8000) x (8000, 256) one, measured with ONEDNN_VERBOSE=profile_create)
# and keeps a limited number, and a last block of its own size was a new shape at nearly every update.
ROWS_PER_BLOCK = 256
ROWS_PER_GROUP = 1024  # dL/dW is accumulated once per 4 blocks: one (V, D) cast and add instead of four


def _smoothed_cross_entropy(z: Tensor, gold: Tensor, keep: Tensor, epsilon: float, grad: Tensor) -> tuple[Tensor, Tensor]:
    """H(q', softmax(z)) and -log p(y), summed over kept rows; writes the gradient p - q' into `grad`.

    z (C, V) logits (the softmax runs in float32 at least, whatever z's dtype), gold (C,) long,
    keep (C,) bool, grad (C, V) contiguous, of the dtype the gradient is wanted in (the cast is
    part of its last pass). Rows not kept get a zero gradient.
    """
    V = z.size(1)
    log_p = torch.log_softmax(z, dim=-1, dtype=torch.promote_types(z.dtype, torch.float32))  # (C, V) one fused pass
    nll = -log_p.gather(1, gold[:, None]).squeeze(1)  # (C,) -log p(y)
    uniform = -log_p.mean(dim=-1)  # (C,) -(1/V) sum_k log p(k)
    loss = (1.0 - epsilon) * nll + epsilon * uniform  # (C,) H(q', p)
    p = log_p.exp_()  # (C, V) in log_p's memory
    p.scatter_add_(1, gold[:, None], p.new_full((p.size(0), 1), epsilon - 1.0))  # (C, V) p - (1 - eps) at y
    torch.sub(p, epsilon / V, out=grad)  # (C, V) p - q', cast to grad's dtype in the same pass
    if not bool(keep.all()):
        grad.mul_(keep[:, None])  # (C, V) ignored rows get no gradient
    return torch.where(keep, loss, 0.0).sum(), torch.where(keep, nll, 0.0).sum()


class _SmoothedCrossEntropy(torch.autograd.Function):
    """H(q', softmax(x W^T)) (or of softmax(x) when W is None) summed over kept rows.

    Both gradients are computed in the forward pass, block by block: dL/dz = p - q' for a block of
    logits, then dL/dx = (p - q') W and dL/dW += (p - q')^T x. Only (N, D) and (V, D) gradients are
    kept for the backward pass, which scales them by the incoming gradient.
    """

    @staticmethod
    def forward(ctx, x: Tensor, weight: Tensor | None, target: Tensor, epsilon: float, ignore_index: int, need_grad: bool):
        dtype = compute_dtype(x)
        acc = torch.promote_types(dtype, torch.float32)  # softmax and gradient sums: float32 at least
        xc = x.to(dtype)  # (N, D) or (N, V)
        w = None if weight is None else weight.to(dtype)  # (V, D)
        n_rows = x.size(0)
        if w is not None and n_rows % ROWS_PER_BLOCK:  # whole blocks: the matmuls keep a few shapes (ROWS_PER_BLOCK)
            pad = ROWS_PER_BLOCK - n_rows % ROWS_PER_BLOCK
            xc, target = F.pad(xc, (0, 0, 0, pad)), F.pad(target, (0, pad), value=ignore_index)  # (N', D), (N',)
        keep = target != ignore_index  # (N',)
        gold = target.masked_fill(~keep, 0)  # (N',)
        grad_x = torch.empty((xc.size(0), x.size(1)), dtype=acc, device=x.device) if need_grad else None
        grad_w = torch.zeros(weight.shape, dtype=acc, device=x.device) if need_grad and w is not None else None
        loss_sum = nll_sum = x.new_zeros((), dtype=acc)
        dz = torch.empty((min(xc.size(0), ROWS_PER_GROUP), x.size(1) if w is None else w.size(0)), dtype=acc if w is None else dtype, device=x.device)
        for group in range(0, xc.size(0), ROWS_PER_GROUP):  # dL/dW once per group of blocks
            n = min(ROWS_PER_GROUP, xc.size(0) - group)
            for start in range(0, n, ROWS_PER_BLOCK):
                stop = min(start + ROWS_PER_BLOCK, n)
                block, rows = slice(start, stop), slice(group + start, group + stop)
                z = xc[rows] if w is None else xc[rows] @ w.T  # (C, V)
                loss, nll = _smoothed_cross_entropy(z, gold[rows], keep[rows], epsilon, dz[block])  # dz: p - q'
                loss_sum, nll_sum = loss_sum + loss, nll_sum + nll
                if need_grad:
                    grad_x[rows] = dz[block] if w is None else dz[block] @ w  # (C, V) or (C, D)
            if need_grad and w is not None:
                grad_w += dz[:n].T @ xc[group : group + n]  # (V, D)
        ctx.save_for_backward(None if grad_x is None else grad_x[:n_rows], grad_w)
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
