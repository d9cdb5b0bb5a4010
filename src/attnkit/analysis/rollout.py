"""Attention rollout (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers", sec. 3).

Each layer's attention is averaged over heads (or a chosen head set) and the residual connection
is added as an identity: A' = 0.5 A + 0.5 I, rows renormalised to sum to 1 (the paper's eq. for
the "raw attention updated by residual connections"). Rollout then multiplies the layers from the
input up (the paper's recursive eq. for A~(l_i)):

    rollout_1 = A'_1,     rollout_l = A'_l rollout_{l-1},     rollout = A'_L ... A'_1   (T, T)

Row q of the result is how much query position q of the last layer draws on each input token.

Encoder-decoder models (`cross_rollout`): a decoder position reads the encoder only through cross
attention C (T_tgt, S), over the encoder's *last-layer outputs*; each of those mixes the input
tokens by the encoder rollout R_enc (S, S). The source relevance of target position t is therefore

    cross_rollout = C R_enc                                                      (T_tgt, S)

with C the head mean (or chosen heads) of one decoder layer's cross attention, no identity added
(the cross-attention sub-layer's residual carries the decoder's own stream, not the source), or the
mean of C over all decoder layers. Rows sum to 1 because both factors are row-stochastic.
The decoder's self-attention is not composed in: its residual stream holds target tokens only.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from attnkit.errors import AttnkitError


def _check(layers: Sequence[Tensor], what: str) -> None:
    if not layers:
        raise AttnkitError(f"{what}: no attention layers given")
    for i, a in enumerate(layers):
        if a.dim() != 3:
            raise AttnkitError(f"{what}: layer {i} has shape {tuple(a.shape)}, expected (heads, queries, keys)")


def head_mean(a: Tensor, heads: Sequence[int] | None = None) -> Tensor:
    """(H, Tq, Tk) -> (Tq, Tk): the mean over all heads or over the heads in `heads`."""
    if heads is not None:
        if not heads or max(heads) >= a.size(0) or min(heads) < -a.size(0):
            raise AttnkitError(f"head set {list(heads)} does not fit a layer of {a.size(0)} heads")
        a = a[list(heads)]  # (h, Tq, Tk)
    return a.float().mean(dim=0)  # (Tq, Tk)


def with_residual(a: Tensor) -> Tensor:
    """A' = 0.5 A + 0.5 I, rows renormalised: (T, T) -> (T, T)."""
    eye = torch.eye(a.size(-1), dtype=a.dtype, device=a.device)  # (T, T)
    aug = 0.5 * a + 0.5 * eye  # (T, T)
    return aug / aug.sum(dim=-1, keepdim=True)  # (T, T)


def augmented(layers: Sequence[Tensor], heads: Sequence[int] | None = None, residual: bool = True) -> list[Tensor]:
    """Per layer (H, T, T) -> per layer A' (T, T): head mean, then the residual identity if asked."""
    _check(layers, "rollout")
    out = []
    for a in layers:
        m = head_mean(a, heads)  # (T, T)
        if m.size(0) != m.size(1):
            raise AttnkitError(f"rollout: self-attention must be square, got {tuple(m.shape)}")
        out.append(with_residual(m) if residual else m)
    return out


def rollout_per_layer(layers: Sequence[Tensor], heads: Sequence[int] | None = None, residual: bool = True) -> Tensor:
    """Rollout after each layer: (L, T, T), entry l = A'_l ... A'_1 (layers numbered from the input)."""
    mats = augmented(layers, heads, residual)
    joint = [mats[0]]
    for a in mats[1:]:
        joint.append(a @ joint[-1])  # (T, T)
    return torch.stack(joint)  # (L, T, T)


def rollout(layers: Sequence[Tensor], heads: Sequence[int] | None = None, residual: bool = True) -> Tensor:
    """Attention rollout A'_L ... A'_1 of self-attention layers (H, T, T), input layer first: -> (T, T)."""
    return rollout_per_layer(layers, heads, residual)[-1]  # (T, T)


def cross_rollout(
    encoder: Sequence[Tensor], cross: Sequence[Tensor], heads: Sequence[int] | None = None, layer: int | None = -1, residual: bool = True
) -> Tensor:
    """Cross attention composed with the encoder's rollout: C R_enc (T_tgt, S).

    Args:
        encoder: the encoder's self-attention per layer, (H, S, S), input layer first.
        cross: the decoder's cross attention per layer, (H, T_tgt, S).
        heads: the heads to average (all when None), for both.
        layer: the decoder layer whose cross attention is C; None averages C over all layers.
        residual: add the identity to the encoder layers (A' = 0.5 A + 0.5 I).
    """
    _check(cross, "cross rollout")
    r_enc = rollout(encoder, heads, residual)  # (S, S)
    if layer is None:
        c = torch.stack([head_mean(a, heads) for a in cross]).mean(dim=0)  # (T_tgt, S)
    else:
        if not -len(cross) <= layer < len(cross):
            raise AttnkitError(f"cross rollout: decoder layer {layer} does not exist ({len(cross)} layers)")
        c = head_mean(cross[layer], heads)  # (T_tgt, S)
    if c.size(-1) != r_enc.size(0):
        raise AttnkitError(f"cross rollout: cross attention has {c.size(-1)} source positions, the encoder {r_enc.size(0)}")
    return c @ r_enc  # (T_tgt, S)
