"""Soft attention over an image grid (Xu et al., 2015, "Show, Attend and Tell", Sec. 3.1.2 and
4.2, "deterministic soft attention").

    e_ti = f_att(a_i, h_{t-1})               here the additive MLP w^T tanh(W_a a_i + W_h h_{t-1})
    alpha_ti = exp(e_ti) / sum_k exp(e_tk)
    z_t = sum_i alpha_ti a_i                 expected context over the L = gh * gw locations

The CNN feature map (B, gh, gw, C) is flattened to P = gh * gw cells at the edge of this module,
attention runs over P cells with ``AdditiveAttention``, and ``unflatten_weights`` turns weights
back into (B, Tq, gh, gw) maps for plotting.
"""

from __future__ import annotations

from torch import Tensor, nn

from attnkit.attention.additive import AdditiveAttention


def flatten_grid(features: Tensor) -> Tensor:
    """Flatten a channels-last grid to cells.

    Args:
        features: ``(B, gh, gw, C)``, or already flat ``(B, P, C)``.

    Returns:
        ``(B, P, C)`` with cells in row-major order (index = row * gw + col).
    """
    if features.dim() == 3:
        return features  # (B, P, C)
    b, gh, gw, c = features.shape
    return features.reshape(b, gh * gw, c)  # (B, P, C)


def unflatten_weights(weights: Tensor, gh: int, gw: int) -> Tensor:
    """Turn weights over cells back into maps over the grid.

    Args:
        weights: ``(B, Tq, P)`` with ``P = gh * gw``.
        gh: grid height.
        gw: grid width.

    Returns:
        ``(B, Tq, gh, gw)``.
    """
    b, tq, p = weights.shape
    if p != gh * gw:
        raise ValueError(f"unflatten_weights: P={p} is not gh*gw={gh}*{gw}")
    return weights.reshape(b, tq, gh, gw)  # (B, Tq, gh, gw)


class SpatialAttention(nn.Module):
    """Show-Attend-Tell soft attention of decoder states over image cells (additive score).

    Args:
        query_dim: width ``Dq`` of the decoder state h_{t-1}.
        feature_dim: channels ``C`` of the annotation vectors a_i.
        attn_dim: hidden width ``A`` of f_att.
    """

    def __init__(self, query_dim: int, feature_dim: int, attn_dim: int) -> None:
        super().__init__()
        self.f_att = AdditiveAttention(query_dim, feature_dim, attn_dim)

    def project_features(self, features: Tensor) -> Tensor:
        """W_a a_i for every cell, to compute once per image.

        Args:
            features: ``(B, gh, gw, C)`` or ``(B, P, C)``.

        Returns:
            ``(B, P, A)``.
        """
        return self.f_att.project_keys(flatten_grid(features))  # (B, P, A)

    def forward(
        self,
        query: Tensor,
        features: Tensor,
        mask: Tensor | None = None,
        *,
        need_weights: bool = True,
        projected_features: Tensor | None = None,
    ) -> tuple[Tensor, Tensor]:
        """Attend from decoder states to image cells.

        Args:
            query: decoder states ``(B, Tq, Dq)``.
            features: annotation vectors ``(B, gh, gw, C)`` or ``(B, P, C)``.
            mask: optional boolean keep-mask over cells, broadcastable to ``(B, Tq, P)``.
            need_weights: accepted for the common interface; the weights are always returned.
            projected_features: ``project_features(features)`` ``(B, P, A)`` computed earlier.

        Returns:
            context z ``(B, Tq, C)`` and weights alpha ``(B, Tq, P)``.
        """
        cells = flatten_grid(features)  # (B, P, C)
        return self.f_att(query, cells, cells, mask, projected_keys=projected_features)  # (B, Tq, C), (B, Tq, P)
