"""Structured self-attention (Lin et al., 2017, "A Structured Self-attentive Sentence Embedding",
Sec. 2.1-2.2).

    A = softmax(W_s2 tanh(W_s1 H^T))      r x n annotation matrix, softmax over the n tokens
    M = A H                                r x 2u sentence embedding
    P = || A A^T - I ||_F^2                penalty that pushes the r hops to differ

H holds the n bi-LSTM states of width 2u. The r rows of W_s2 act as r learned queries ("hops").
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from attnkit.attention.masks import masked_softmax


class StructuredSelfAttention(nn.Module):
    """r-hop self-attention pooling: A = softmax(W_s2 tanh(W_s1 H^T)), M = A H.

    Args:
        d_in: width of the states H (2u for a bi-LSTM with u units per direction).
        d_a: hidden width of the scoring MLP.
        r: number of hops ``R``.
    """

    def __init__(self, d_in: int, d_a: int, r: int) -> None:
        super().__init__()
        self.w_s1 = nn.Linear(d_in, d_a, bias=False)
        self.w_s2 = nn.Linear(d_a, r, bias=False)

    def forward(self, h: Tensor, mask: Tensor | None = None, need_weights: bool = True) -> tuple[Tensor, Tensor]:
        """Pool token states into R hop vectors.

        Args:
            h: token states H ``(B, S, 2u)``.
            mask: boolean keep-mask over tokens ``(B, S)`` or ``(B, 1, S)``.
            need_weights: accepted for the common interface; A is always returned.

        Returns:
            M ``(B, R, 2u)`` and A ``(B, R, S)``.
        """
        if mask is not None and mask.dim() == 2:
            mask = mask.unsqueeze(1)  # (B, 1, S)
        scores = self.w_s2(torch.tanh(self.w_s1(h))).transpose(1, 2)  # (B, R, S)
        a = masked_softmax(scores, mask)  # (B, R, S)
        m = torch.einsum("brs,bsd->brd", a, h)  # (B, R, 2u)
        return m, a


def frobenius_penalty(a: Tensor, keep: Tensor | None = None) -> Tensor:
    """P = ||A A^T - I||_F^2 per example (Lin et al. 2017, Sec. 2.2); the batch mean is the caller's.

    Args:
        a: annotation matrix A ``(B, R, S)``.
        keep: optional keep-mask over tokens ``(B, S)`` or ``(B, 1, S)`` as given to ``forward``.
            An example with no valid token has all-zero A; with ``keep`` its identity term is
            dropped too, so it gets penalty 0 instead of R.

    Returns:
        ``(B,)``.
    """
    r = a.size(1)
    gram = torch.bmm(a, a.transpose(1, 2))  # (B, R, R)
    eye = torch.eye(r, dtype=a.dtype, device=a.device).expand_as(gram)  # (B, R, R)
    if keep is not None:
        has_token = keep.reshape(keep.size(0), -1).any(dim=1)  # (B,)
        eye = eye * has_token.to(a.dtype).view(-1, 1, 1)  # (B, R, R)
    return (gram - eye).pow(2).sum(dim=(1, 2))  # (B,)
