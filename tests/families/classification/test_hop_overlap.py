"""hop_overlap on hand-computed cases."""

from __future__ import annotations

import pytest
import torch

from attnkit.families.classification.metrics import hop_overlap


def test_hop_overlap() -> None:
    same = torch.tensor([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0]])  # identical hops: overlap 1
    apart = torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.6, 0.4]])  # disjoint hops: overlap 0
    # Three hops; sums of element-wise minima: pair (1,2) 0.2 + 0.4 = 0.6, (1,3) 0.5, (2,3) 0.4 -> mean 0.5.
    three = torch.tensor([[0.2, 0.8, 0.0], [0.6, 0.4, 0.0], [0.0, 0.5, 0.5]])
    overlap = hop_overlap(torch.stack([same, apart, three[:2]]))  # (3,) for B = 3, R = 2
    assert overlap.tolist() == pytest.approx([1.0, 0.0, 0.6])
    assert hop_overlap(three.unsqueeze(0)).item() == pytest.approx(0.5)
    assert hop_overlap(torch.ones(2, 1, 4) / 4).tolist() == [0.0, 0.0]  # one hop: no pairs
