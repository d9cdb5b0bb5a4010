"""Position information for attention models.

Sinusoidal encoding (Vaswani et al., 2017, "Attention Is All You Need", Sec. 3.5):

    PE(pos, 2i)   = sin(pos / 10000^(2i / d_model))
    PE(pos, 2i+1) = cos(pos / 10000^(2i / d_model))

For any fixed offset k, PE(pos + k) is a linear function of PE(pos): each (sin, cos) pair is
rotated by the angle k * omega_i, which is why the paper expected it to help attend by relative
position. Learned position embeddings (Gehring et al., 2017; Vaswani et al. Sec. 3.5 compare both)
are a table of d_model-vectors, one per position.

Both modules add the encoding to their input or concatenate it (``mode``). ``start`` is the
position of the first input token, so step-by-step decoding passes the current step. Scaling the
token embeddings by sqrt(d_model) (Sec. 3.4) is the model's job, not this module's.
"""

from __future__ import annotations

import math
from typing import Literal

import torch
from torch import Tensor, nn

Mode = Literal["add", "concat"]


def sinusoidal_encoding(
    length: int,
    d_model: int,
    *,
    start: int = 0,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> Tensor:
    """The sinusoidal table of Sec. 3.5 for positions ``start .. start + length - 1``.

    Computed in float64 and then cast, so large positions keep their precision.

    Args:
        length: number of positions ``T``.
        d_model: encoding width ``D`` (an odd width drops the last cosine).
        start: first position.
        device: device of the result.
        dtype: dtype of the result (default float32).

    Returns:
        ``(T, D)``: column 2i is sin(pos * omega_i), column 2i+1 is cos(pos * omega_i), with
        omega_i = 10000^(-2i / d_model).
    """
    pos = torch.arange(start, start + length, dtype=torch.float64, device=device)  # (T,)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64, device=device)  # (ceil(D/2),)
    omega = torch.exp(-math.log(10000.0) * two_i / d_model)  # (ceil(D/2),)
    angles = pos.unsqueeze(1) * omega.unsqueeze(0)  # (T, ceil(D/2))
    pe = torch.stack([angles.sin(), angles.cos()], dim=-1).flatten(1)[:, :d_model]  # (T, D)
    return pe.to(dtype or torch.float32)  # (T, D)


def _combine(x: Tensor, pe: Tensor, mode: Mode) -> Tensor:
    """Add ``pe`` (T, D) to ``x`` (B, T, D), or concatenate it to make (B, T, Dx + D)."""
    if mode == "add":
        return x + pe  # (B, T, D)
    return torch.cat([x, pe.expand(x.size(0), -1, -1)], dim=-1)  # (B, T, Dx + D)


def _check_mode(mode: str) -> None:
    if mode not in ("add", "concat"):
        raise ValueError(f"positional encoding: mode must be 'add' or 'concat', got {mode!r}")


class SinusoidalPositionalEncoding(nn.Module):
    """Adds (or concatenates) the fixed sinusoidal encoding; no parameters, no stored table.

    Args:
        d_model: encoding width ``D`` (must equal the input width for ``mode="add"``).
        mode: "add" (the paper) or "concat".
    """

    def __init__(self, d_model: int, mode: Mode = "add") -> None:
        super().__init__()
        _check_mode(mode)
        self.d_model = d_model
        self.mode = mode

    def forward(self, x: Tensor, start: int = 0) -> Tensor:
        """Give each token its position.

        Args:
            x: embeddings ``(B, T, Dx)``.
            start: position of ``x[:, 0]`` (the current step when decoding one token at a time).

        Returns:
            ``(B, T, D)`` for "add", ``(B, T, Dx + D)`` for "concat".
        """
        pe = sinusoidal_encoding(x.size(1), self.d_model, start=start, device=x.device, dtype=x.dtype)  # (T, D)
        return _combine(x, pe, self.mode)  # (B, T, D)


class LearnedPositionalEmbedding(nn.Module):
    """Adds (or concatenates) a learned embedding per position ``0 .. max_len - 1``.

    Args:
        max_len: number of positions that have an embedding.
        d_model: embedding width ``D``.
        mode: "add" or "concat".
    """

    def __init__(self, max_len: int, d_model: int, mode: Mode = "add") -> None:
        super().__init__()
        _check_mode(mode)
        self.mode = mode
        self.embedding = nn.Embedding(max_len, d_model)
        nn.init.normal_(self.embedding.weight, std=d_model**-0.5)

    def forward(self, x: Tensor, start: int = 0) -> Tensor:
        """Give each token its position.

        Args:
            x: embeddings ``(B, T, Dx)``.
            start: position of ``x[:, 0]``.

        Returns:
            ``(B, T, D)`` for "add", ``(B, T, Dx + D)`` for "concat".
        """
        t = x.size(1)
        max_len = self.embedding.num_embeddings
        if start + t > max_len:
            raise ValueError(f"LearnedPositionalEmbedding: positions up to {start + t - 1} but max_len={max_len}")
        positions = torch.arange(start, start + t, device=x.device)  # (T,)
        return _combine(x, self.embedding(positions).to(x.dtype), self.mode)  # (B, T, D)
