"""Scaled dot-product attention (Vaswani et al., 2017, "Attention Is All You Need", eq. 1).

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V

Sec. 3.2.1 explains the scale: for unit-variance q and k the dot product q.k has variance d_k,
which pushes the softmax into regions of tiny gradient; dividing by sqrt(d_k) restores variance 1.

Two paths, kept side by side: the explicit one (``need_weights=True``) computes the scores e, the
weights alpha through ``masked_softmax`` and returns them; the fused one (``need_weights=False``)
calls ``torch.nn.functional.scaled_dot_product_attention``, whose boolean ``attn_mask`` uses the
same rule as attnkit (True = may attend), and returns ``None`` weights. On the CPU, rows of a few
queries (``FEW_QUERIES``: decoding steps) take the explicit path either way, which is faster there;
bf16 ones excepted, which attend in fp32 through the fused kernel.
The fused path needs at least one valid key per query row (the data layer guarantees it).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnkit.attention.masks import masked_softmax

# At most this many queries per row (a decoding step; K beams of a sentence querying its memory
# together), PyTorch's CPU flash kernel is slower than two batched matmuls (e.g. 1.56 ms against
# 0.71 ms for 320 rows x 4 heads x 1 query x 20 keys, one thread).
FEW_QUERIES = 8


def _few_queries(t: int) -> bool:
    """Whether T queries per row take the explicit path on the CPU: one always; up to FEW_QUERIES
    only without autograd, so that training keeps its kernels (and numbers)."""
    return t == 1 or (t <= FEW_QUERIES and not torch.is_grad_enabled())


def scaled_dot_product_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    dropout_p: float = 0.0,
    need_weights: bool = True,
    *,
    scale: float | None = None,
) -> tuple[Tensor, Tensor | None]:
    """softmax(Q K^T / sqrt(d_k)) V with a boolean keep-mask (Vaswani et al. 2017, eq. 1).

    Leading axes are free: ``(B, H, T, E)`` for multi-head, ``(B, T, E)`` for one head.

    Args:
        q: queries ``(..., T, E)``.
        k: keys ``(..., S, E)``.
        v: values ``(..., S, Ev)``.
        mask: boolean keep-mask broadcastable to ``(..., T, S)``, or ``None``.
        dropout_p: dropout on the attention weights (pass 0.0 outside training). The returned
            weights are the probabilities before dropout.
        need_weights: ``True`` runs the explicit path and returns the weights; ``False`` runs
            ``F.scaled_dot_product_attention`` and returns ``None``.
        scale: factor applied to Q K^T; default ``1 / sqrt(E)``.

    Returns:
        context ``(..., T, Ev)`` and weights ``(..., T, S)`` (or ``None``).
    """
    scale = 1.0 / math.sqrt(q.size(-1)) if scale is None else scale
    cpu = q.device.type == "cpu"
    if not need_weights and cpu and q.dtype == torch.bfloat16 and q.size(-2) > 1:
        # PyTorch's CPU flash-attention backward is ~4x slower in bf16 than in fp32 (measured
        # with torch 2.13 on Zen 4, benchmarks/train_tps.py), so bf16 runs attend in fp32 there.
        # Few queries too: the explicit path's fp32 sums, rounded to bf16, change some outputs.
        with torch.autocast("cpu", enabled=False):
            context = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), attn_mask=mask, dropout_p=dropout_p, scale=scale)  # (B, H, T, Ev)
        return context.to(q.dtype), None
    if not (need_weights or (cpu and _few_queries(q.size(-2)))):
        context = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p, scale=scale)  # (B, H, T, Ev)
        return context, None
    scores = torch.matmul(q * scale, k.transpose(-2, -1))  # (B, H, T, S)
    weights = masked_softmax(scores, mask)  # (B, H, T, S)
    dropped = F.dropout(weights, dropout_p) if dropout_p > 0.0 else weights  # (B, H, T, S)
    context = torch.matmul(dropped, v)  # (B, H, T, Ev)
    return context, weights if need_weights else None


class ScaledDotProductAttention(nn.Module):
    """Parameter-free module form of eq. 1 following the attnkit attention interface.

    Args:
        dropout: dropout on the attention weights, active in training mode only.
    """

    def __init__(self, dropout: float = 0.0) -> None:
        super().__init__()
        self.dropout = dropout

    def forward(self, query: Tensor, keys: Tensor, values: Tensor, mask: Tensor | None = None, *, need_weights: bool = True) -> tuple[Tensor, Tensor | None]:
        """Attend from ``query`` to ``keys``/``values``.

        Args:
            query: ``(B, T, E)`` (or ``(B, H, T, E)``).
            keys: ``(B, S, E)``.
            values: ``(B, S, Ev)``.
            mask: boolean keep-mask broadcastable to ``(B, T, S)``.
            need_weights: see ``scaled_dot_product_attention``.

        Returns:
            context ``(B, T, Ev)`` and weights ``(B, T, S)`` or ``None``.
        """
        p = self.dropout if self.training else 0.0
        return scaled_dot_product_attention(query, keys, values, mask, p, need_weights)
