"""perplexity, accuracy and attention_entropy on hand-computed cases."""

from __future__ import annotations

import math

import pytest
import torch

from attnkit.evaluate.metrics import accuracy, attention_entropy, confusion_matrix, hop_overlap, macro_f1, perplexity


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


def test_confusion_matrix_and_macro_f1() -> None:
    gold, pred = [0, 0, 1, 1, 2], [0, 1, 1, 1, 0]
    assert confusion_matrix(pred, gold, 3) == [[1, 1, 0], [0, 2, 0], [1, 0, 0]]
    # By hand: F1 = 2TP / (2TP + FP + FN); class 0: 2/(2+1+1) = 1/2, class 1: 4/(4+1+0) = 4/5, class 2: 0.
    assert macro_f1(pred, gold, 3) == pytest.approx((1 / 2 + 4 / 5 + 0) / 3)
    # A class absent from gold and predictions is left out of the mean.
    assert macro_f1([0, 1], [0, 1], 3) == pytest.approx(1.0)


def test_hop_overlap() -> None:
    same = torch.tensor([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0]])  # identical hops: overlap 1
    apart = torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.6, 0.4]])  # disjoint hops: overlap 0
    # Three hops; sums of element-wise minima: pair (1,2) 0.2 + 0.4 = 0.6, (1,3) 0.5, (2,3) 0.4 -> mean 0.5.
    three = torch.tensor([[0.2, 0.8, 0.0], [0.6, 0.4, 0.0], [0.0, 0.5, 0.5]])
    overlap = hop_overlap(torch.stack([same, apart, three[:2]]))  # (3,) for B = 3, R = 2
    assert overlap.tolist() == pytest.approx([1.0, 0.0, 0.6])
    assert hop_overlap(three.unsqueeze(0)).item() == pytest.approx(0.5)
    assert hop_overlap(torch.ones(2, 1, 4) / 4).tolist() == [0.0, 0.0]  # one hop: no pairs
