"""The classifier's confusion matrix and macro-F1 on hand-computed cases."""

from __future__ import annotations

import pytest

from attnkit.families.classification.metrics import confusion_matrix, macro_f1


def test_confusion_matrix_and_macro_f1() -> None:
    gold, pred = [0, 0, 1, 1, 2], [0, 1, 1, 1, 0]
    assert confusion_matrix(pred, gold, 3) == [[1, 1, 0], [0, 2, 0], [1, 0, 0]]
    # By hand: F1 = 2TP / (2TP + FP + FN); class 0: 2/(2+1+1) = 1/2, class 1: 4/(4+1+0) = 4/5, class 2: 0.
    assert macro_f1(pred, gold, 3) == pytest.approx((1 / 2 + 4 / 5 + 0) / 3)
    # A class absent from gold and predictions is left out of the mean.
    assert macro_f1([0, 1], [0, 1], 3) == pytest.approx(1.0)
