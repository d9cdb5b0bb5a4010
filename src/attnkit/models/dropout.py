"""Dropout (Srivastava et al., 2014) with the keep-mask drawn 16 random bits per element.

`nn.Dropout` on a CPU draws each mask element with `bernoulli_`, one generator call per element:
a sixth of an M30K-small update (docs/training.md, the profile). Here one 64-bit draw gives four
elements: each element is kept when its 16 bits, read as a signed integer, are at least
-32768 + round(p * 65536), so p is used to within 1/131072. Forward and backward each apply the
mask and the 1 / (1 - p) scale in one pass (`aten.native_dropout_backward`, the kernel PyTorch's
own dropout uses for its backward). Other devices keep `F.dropout` (fused on CUDA). The mask comes
from PyTorch's generator, so `torch.manual_seed` makes runs repeat.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

_BITS = 16  # random bits per element
_LEVELS = 1 << _BITS


def keep_mask(shape: torch.Size, p: float, device: torch.device) -> Tensor:
    """A boolean mask of `shape`, each element True with probability 1 - p (to within 2^-17)."""
    n = shape.numel()
    words = torch.empty((n + 3) // 4, dtype=torch.int64, device=device).random_(-(1 << 63), (1 << 63) - 1)  # (ceil(n / 4),)
    bits = words.view(torch.int16)[:n].view(shape)  # 16 uniform bits per element
    return bits >= round(p * _LEVELS) - _LEVELS // 2


class _MaskedScale(torch.autograd.Function):
    """y = x * mask / (1 - p), and the same for the gradient."""

    @staticmethod
    def forward(ctx, x: Tensor, p: float) -> Tensor:  # type: ignore[override]
        keep = keep_mask(x.shape, p, x.device)
        ctx.save_for_backward(keep)
        ctx.scale = 1.0 / (1.0 - p)
        return torch.ops.aten.native_dropout_backward(x, keep, ctx.scale)

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor, None]:  # type: ignore[override]
        (keep,) = ctx.saved_tensors
        return torch.ops.aten.native_dropout_backward(grad, keep, ctx.scale), None


def dropout(x: Tensor, p: float, training: bool) -> Tensor:
    """`F.dropout(x, p, training)`, with the fast mask on a CPU."""
    if not training or p == 0.0:
        return x
    if x.device.type != "cpu" or p >= 1.0:
        return F.dropout(x, p, training)
    return _MaskedScale.apply(x, p)


class Dropout(nn.Dropout):
    """`nn.Dropout` with the fast CPU mask (`dropout`)."""

    def forward(self, x: Tensor) -> Tensor:
        return dropout(x, self.p, self.training)
