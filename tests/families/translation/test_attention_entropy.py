"""attention_entropy on hand-computed cases."""

from __future__ import annotations

import math

import pytest
import torch

from attnkit.families.translation.metrics import attention_entropy


def test_attention_entropy() -> None:
    uniform4 = torch.full((4,), 0.25)
    onehot = torch.tensor([0.0, 1.0, 0.0, 0.0])
    half = torch.tensor([0.5, 0.5, 0.0, 0.0])
    weights = torch.stack([uniform4, onehot, half])  # (3, 4): entropies ln 4, 0, ln 2
    assert attention_entropy(weights) == pytest.approx((math.log(4) + math.log(2)) / 3)
    # Row mask: leave the one-hot row out -> (ln 4 + ln 2) / 2.
    keep = torch.tensor([True, False, True])[:, None]  # (3, 1) broadcast over S
    assert attention_entropy(weights, keep) == pytest.approx((math.log(4) + math.log(2)) / 2)
    # Key mask on (B, T, S) weights: a left-out key's term -w ln w is not summed; only the uniform
    # row has weight there, so it drops from ln 4 to 3 · (1/4) ln 4.
    batch = weights.unsqueeze(0)  # (1, 3, 4)
    key_keep = torch.tensor([True, True, True, False])[None, None]  # (1, 1, S): the last key is padding
    assert attention_entropy(batch, key_keep) == pytest.approx((math.log(4) * 3 / 4 + math.log(2)) / 3)
