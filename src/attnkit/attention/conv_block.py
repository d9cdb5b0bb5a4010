"""Convolutional self-attention block (Zhang et al., 2019, "Self-Attention Generative Adversarial
Networks", Sec. 3, eqs. 1-3).

    s_ij = f(x_i)^T g(x_j),   f(x) = W_f x, g(x) = W_g x        (1x1 convolutions)
    beta_{j,i} = exp(s_ij) / sum_i exp(s_ij)                    (eq. 1) weights of position j over i
    o_j = v(sum_i beta_{j,i} h(x_i)),  h(x) = W_h x, v(x) = W_v x   (eq. 2)
    y_i = gamma o_i + x_i,  gamma initialised to 0               (eq. 3)

Positions are the P = gh * gw cells of the feature map; there is no 1/sqrt(d) scale in SAGAN.
Here g is the query convolution, f the key, h the value and v the output convolution.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from attnkit.attention.scaled_dot import scaled_dot_product_attention


class ConvSelfAttention(nn.Module):
    """SAGAN self-attention over the positions of a feature map, with a zero-initialised residual scale.

    Args:
        channels: input and output channels ``C``.
        reduction: ``C / reduction`` channels for queries, keys and values (8 in the paper).
    """

    def __init__(self, channels: int, reduction: int = 8) -> None:
        super().__init__()
        inner = max(channels // reduction, 1)
        self.q_conv = nn.Conv2d(channels, inner, kernel_size=1)  # W_g
        self.k_conv = nn.Conv2d(channels, inner, kernel_size=1)  # W_f
        self.v_conv = nn.Conv2d(channels, inner, kernel_size=1)  # W_h
        self.out_conv = nn.Conv2d(inner, channels, kernel_size=1)  # W_v
        self.gamma = nn.Parameter(torch.zeros(1))

    def forward(self, x: Tensor, *, need_weights: bool = True) -> tuple[Tensor, Tensor | None]:
        """Self-attention over the gh * gw positions of ``x``.

        Args:
            x: feature map ``(B, C, gh, gw)``.
            need_weights: ``False`` uses ``F.scaled_dot_product_attention`` and returns ``None``.

        Returns:
            y ``(B, C, gh, gw)`` and weights beta ``(B, P, P)`` (row j: position j over all i).
        """
        b, c, gh, gw = x.shape
        q = self.q_conv(x).flatten(2).transpose(1, 2)  # (B, P, C')
        k = self.k_conv(x).flatten(2).transpose(1, 2)  # (B, P, C')
        v = self.v_conv(x).flatten(2).transpose(1, 2)  # (B, P, C')
        # no 1/sqrt(d) scale in SAGAN
        o, weights = scaled_dot_product_attention(q, k, v, need_weights=need_weights, scale=1.0)  # (B, P, C')
        o = self.out_conv(o.transpose(1, 2).reshape(b, -1, gh, gw))  # (B, C, gh, gw)
        return self.gamma * o + x, weights  # (B, C, gh, gw)
