"""The fast CPU dropout: the kept fraction is 1 - p, kept values are scaled by 1 / (1 - p), the
gradient goes through the same mask, it repeats under a seed, and it is the identity in eval mode."""

from __future__ import annotations

import pytest
import torch

from attnkit.models.dropout import Dropout, dropout, keep_mask


@pytest.mark.parametrize("p", [0.1, 0.3, 0.5])
def test_mask_keeps_one_minus_p(p: float) -> None:
    torch.manual_seed(0)
    keep = keep_mask(torch.Size([1000, 1001]), p, torch.device("cpu"))  # an odd count: the last 64-bit word is cut
    assert keep.shape == (1000, 1001) and keep.dtype == torch.bool
    n = keep.numel()
    assert abs(keep.float().mean().item() - (1 - p)) < 4 * (p * (1 - p) / n) ** 0.5  # 4 standard errors
    by_place = keep.flatten()[: n - n % 4].view(-1, 4).float().mean(dim=0)  # each of a word's four 16-bit places
    assert (by_place - (1 - p)).abs().max().item() < 4 * (p * (1 - p) / (n / 4)) ** 0.5


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_forward_and_backward_scale_the_kept_elements(dtype: torch.dtype) -> None:
    torch.manual_seed(1)
    x = torch.randn(64, 33, dtype=dtype, requires_grad=True)
    y = dropout(x, 0.25, training=True)
    kept = y != 0
    torch.testing.assert_close(y[kept], (x[kept] / 0.75).to(dtype))
    assert 0.6 < kept.float().mean().item() < 0.9
    g = torch.randn_like(y)
    y.backward(g)
    torch.testing.assert_close(x.grad, torch.where(kept, g / 0.75, torch.zeros_like(g)).to(dtype))


def test_seeded_runs_repeat_and_eval_is_identity() -> None:
    x = torch.randn(10, 20)
    torch.manual_seed(5)
    a = dropout(x, 0.1, training=True)
    torch.manual_seed(5)
    b = dropout(x, 0.1, training=True)
    assert torch.equal(a, b)
    layer = Dropout(0.3).eval()
    assert layer(x) is x
    assert torch.equal(Dropout(1.0)(x), torch.zeros_like(x)) and Dropout(0.0)(x) is x
