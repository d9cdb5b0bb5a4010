"""perplexity, accuracy, the confusion matrix and macro-F1 on hand-computed cases."""

from __future__ import annotations

import math

import pytest
import torch

from attnkit.evaluate.metrics import accuracy, confusion_matrix, macro_f1, perplexity


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


def test_confusion_matrix_and_macro_f1() -> None:
    gold, pred = [0, 0, 1, 1, 2], [0, 1, 1, 1, 0]
    assert confusion_matrix(pred, gold, 3) == [[1, 1, 0], [0, 2, 0], [1, 0, 0]]
    # By hand: F1 = 2TP / (2TP + FP + FN); class 0: 2/(2+1+1) = 1/2, class 1: 4/(4+1+0) = 4/5, class 2: 0.
    assert macro_f1(pred, gold, 3) == pytest.approx((1 / 2 + 4 / 5 + 0) / 3)
    # A class absent from gold and predictions is left out of the mean.
    assert macro_f1([0, 1], [0, 1], 3) == pytest.approx(1.0)
