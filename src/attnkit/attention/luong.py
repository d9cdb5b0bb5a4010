"""Global attention of Luong, Pham and Manning (2015), "Effective Approaches to Attention-based
Neural Machine Translation": scores (eq. 8), weights (eq. 7), attentional hidden state (eq. 5).

    score(h_t, h_s) = h_t^T h_s                        "dot"
                    = h_t^T W_a h_s                    "general"
                    = v_a^T tanh(W_a [h_t; h_s])       "concat"          (eq. 8)
    a_t(s) = exp(score(h_t, h_s)) / sum_s' exp(score(h_t, h_s'))      (eq. 7)
    c_t = sum_s a_t(s) h_s
    h~_t = tanh(W_c [c_t; h_t])                                        (eq. 5)

The part of each score that depends only on the source (W_a h_s for "general", the h_s half of
W_a [h_t; h_s] for "concat") is returned by ``project_keys`` so a decoder computes it once.
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnkit.attention.masks import masked_softmax

Score = Literal["dot", "general", "concat"]


class LuongAttention(nn.Module):
    """Luong global attention with the score function chosen by ``score``.

    Args:
        query_dim: width ``Dq`` of the decoder state h_t.
        key_dim: width ``Dk`` of the source states h_s (must equal ``query_dim`` for "dot").
        score: "dot", "general" or "concat" (eq. 8).
        attn_dim: hidden width of "concat" (default ``query_dim``); unused otherwise.
    """

    def __init__(self, query_dim: int, key_dim: int, score: Score = "dot", attn_dim: int | None = None) -> None:
        super().__init__()
        if score not in ("dot", "general", "concat"):
            raise ValueError(f"LuongAttention: score must be 'dot', 'general' or 'concat', got {score!r}")
        if score == "dot" and query_dim != key_dim:
            raise ValueError(f"LuongAttention: 'dot' needs query_dim == key_dim, got {query_dim} and {key_dim}")
        self.score = score
        self.query_dim = query_dim
        if score == "general":
            self.w_a = nn.Linear(key_dim, query_dim, bias=False)  # h_t^T (W_a h_s)
        elif score == "concat":
            attn_dim = attn_dim or query_dim
            self.w_a = nn.Linear(query_dim + key_dim, attn_dim, bias=False)  # W_a [h_t; h_s]
            self.v_a = nn.Linear(attn_dim, 1, bias=False)

    def project_keys(self, keys: Tensor) -> Tensor:
        """The source-only part of the score, to compute once per source sequence.

        Args:
            keys: source states h_s ``(B, S, Dk)``.

        Returns:
            ``(B, S, Dk)`` (dot: h_s itself), ``(B, S, Dq)`` (general: W_a h_s) or ``(B, S, A)``
            (concat: the h_s columns of W_a applied to h_s).
        """
        if self.score == "dot":
            return keys  # (B, S, Dk)
        if self.score == "general":
            return self.w_a(keys)  # (B, S, Dq)
        return F.linear(keys, self.w_a.weight[:, self.query_dim :])  # (B, S, A)

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
        """Attend from decoder states h_t to source states.

        Args:
            query: h_t ``(B, Tq, Dq)``.
            keys: h_s ``(B, S, Dk)``; unused when ``projected_keys`` is given.
            values: vectors to average ``(B, S, Dv)`` (h_s in the paper).
            mask: boolean keep-mask broadcastable to ``(B, Tq, S)``.
            need_weights: accepted for the common interface; the weights are always returned.
            projected_keys: ``project_keys(keys)`` computed earlier.

        Returns:
            context c_t ``(B, Tq, Dv)`` and weights a_t ``(B, Tq, S)``.
        """
        pk = self.project_keys(keys) if projected_keys is None else projected_keys  # (B, S, Dq|A)
        if self.score == "concat":
            wq = F.linear(query, self.w_a.weight[:, : self.query_dim])  # (B, Tq, A)
            hidden = torch.tanh(wq.unsqueeze(2) + pk.unsqueeze(1))  # (B, Tq, S, A)
            scores = self.v_a(hidden).squeeze(-1)  # (B, Tq, S)
        else:
            scores = torch.bmm(query, pk.transpose(1, 2))  # (B, Tq, S)
        weights = masked_softmax(scores, mask)  # (B, Tq, S)
        context = torch.bmm(weights, values)  # (B, Tq, Dv)
        return context, weights


class AttentionalLayer(nn.Module):
    """The attentional hidden state h~_t = tanh(W_c [c_t; h_t]) (Luong et al. 2015, eq. 5).

    Args:
        context_dim: width of c_t.
        query_dim: width of h_t.
        out_dim: width of h~_t.
        bias: add a bias inside the tanh (the paper has none).
    """

    def __init__(self, context_dim: int, query_dim: int, out_dim: int, bias: bool = False) -> None:
        super().__init__()
        self.w_c = nn.Linear(context_dim + query_dim, out_dim, bias=bias)

    def forward(self, context: Tensor, query: Tensor) -> Tensor:
        """Combine the context and the decoder state.

        Args:
            context: c_t ``(B, Tq, Dc)``.
            query: h_t ``(B, Tq, Dq)``.

        Returns:
            h~_t ``(B, Tq, out_dim)``.
        """
        return torch.tanh(self.w_c(torch.cat([context, query], dim=-1)))  # (B, Tq, out_dim)
