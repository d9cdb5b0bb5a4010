"""perplexity and accuracy on hand-computed cases."""

from __future__ import annotations

import math

import pytest
import torch

from attnkit.evaluate.metrics import accuracy, perplexity


def test_perplexity() -> None:
    assert perplexity(3 * math.log(5), 3) == pytest.approx(5.0)  # each token had p = 1/5
    assert perplexity(torch.tensor(0.0), torch.tensor(10)) == 1.0
    assert perplexity(1e6, 1) == math.inf
    with pytest.raises(ValueError, match="positive number of tokens"):
        perplexity(1.0, 0)


def test_accuracy() -> None:
    assert accuracy([1, 2, 3], [1, 0, 3]) == pytest.approx(2 / 3)
    pred, gold = torch.tensor([[4, 5, 0], [6, 7, 7]]), torch.tensor([[4, 9, 0], [6, 7, 0]])
    assert accuracy(pred, gold, keep=gold != 0) == pytest.approx(3 / 4)  # pads left out
    with pytest.raises(ValueError, match="one shape"):
        accuracy([1, 2], [1])
