"""Additive attention (Bahdanau, Cho and Bengio, 2015, "Neural Machine Translation by Jointly
Learning to Align and Translate", eqs. 5-6 and Appendix A.1.2).

    e_ij = v_a^T tanh(W_a s_{i-1} + U_a h_j)       (alignment model, A.1.2)
    alpha_ij = exp(e_ij) / sum_k exp(e_ik)          (eq. 6)
    c_i = sum_j alpha_ij h_j                        (eq. 5)

U_a h_j does not depend on the decoder step i, so ``project_keys`` computes it once per source
sentence and *returns* it; an RNN decoder passes it back in through ``projected_keys`` at every
step (the module stores nothing between calls).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from attnkit.attention.masks import masked_softmax


class AdditiveAttention(nn.Module):
    """Bahdanau attention: e = v_a^T tanh(W_a s + U_a h), no biases as in Appendix A.1.2.

    Args:
        query_dim: width ``Dq`` of the decoder state s.
        key_dim: width ``Dk`` of the annotations h.
        attn_dim: width ``A`` of the hidden layer (n' in the paper).
    """

    def __init__(self, query_dim: int, key_dim: int, attn_dim: int) -> None:
        super().__init__()
        self.w_a = nn.Linear(query_dim, attn_dim, bias=False)
        self.u_a = nn.Linear(key_dim, attn_dim, bias=False)
        self.v_a = nn.Linear(attn_dim, 1, bias=False)

    def project_keys(self, keys: Tensor) -> Tensor:
        """U_a h_j for every key, to compute once per source sequence.

        Args:
            keys: annotations h ``(B, S, Dk)``.

        Returns:
            ``(B, S, A)``.
        """
        return self.u_a(keys)  # (B, S, A)

    def forward(
        self,
        query: Tensor,
        keys: Tensor,
        values: Tensor,
        mask: Tensor | None = None,
        *,
        need_weights: bool = True,
        projected_keys: Tensor | None = None,
    ) -> tuple[Tensor, Tensor]:
        """Attend from decoder states to the annotations.

        Args:
            query: decoder states s ``(B, Tq, Dq)`` (``Tq = 1`` inside an RNN step).
            keys: annotations h ``(B, S, Dk)``; unused when ``projected_keys`` is given.
            values: vectors to average ``(B, S, Dv)`` (the annotations again in the paper).
            mask: boolean keep-mask broadcastable to ``(B, Tq, S)``, e.g. ``(B, 1, S)``.
            need_weights: accepted for the common interface; the weights are always returned
                (there is no fused kernel for additive scores).
            projected_keys: ``project_keys(keys)`` ``(B, S, A)`` computed earlier.

        Returns:
            context c ``(B, Tq, Dv)`` and weights alpha ``(B, Tq, S)``.
        """
        uh = self.project_keys(keys) if projected_keys is None else projected_keys  # (B, S, A)
        ws = self.w_a(query)  # (B, Tq, A)
        hidden = torch.tanh(ws.unsqueeze(2) + uh.unsqueeze(1))  # (B, Tq, S, A)
        scores = self.v_a(hidden).squeeze(-1)  # (B, Tq, S)
        weights = masked_softmax(scores, mask)  # (B, Tq, S)
        context = torch.bmm(weights, values)  # (B, Tq, Dv)
        return context, weights
