"""The attention maps every sequence model returns for plots and health metrics (one format)."""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor


@dataclass
class AttentionMaps:
    """Every attention map of one teacher-forced pass, per layer: (B, H, Tq, Tk) each.

    A model without a kind of attention leaves its list empty (an RNN decoder has no encoder or
    decoder self-attention; its cross-attention is one layer with one head).
    """

    encoder: list[Tensor]
    decoder_self: list[Tensor]
    cross: list[Tensor]
