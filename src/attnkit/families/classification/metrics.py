"""The sentence family's metrics: the confusion matrix and macro-F1 of a classifier (`task.py`, `infer.py`),
and the overlap of a self-attentive sentence embedding's hops (Lin et al. 2017), reported by `task.py`."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor


def hop_overlap(a: Tensor) -> Tensor:
    """Mean pairwise overlap of the R attention hops of each example.

    The overlap of hops i and j is sum_s min(A_is, A_js): 1 when both put the same weight on every
    token, 0 when they attend to disjoint tokens (the histogram intersection of two distributions).
    Padding has weight 0 in every hop and adds nothing.

    Args:
        a: annotation matrix A ``(B, R, S)``, rows summing to 1.

    Returns:
        ``(B,)``: the mean over the R (R - 1) / 2 pairs i < j (0 when R = 1).
    """
    r = a.size(1)
    if r < 2:
        return a.new_zeros(a.size(0))
    pairwise = torch.minimum(a.unsqueeze(2), a.unsqueeze(1)).sum(dim=-1)  # (B, R, R)
    upper = torch.triu(torch.ones(r, r, dtype=torch.bool, device=a.device), diagonal=1)  # (R, R)
    return pairwise[:, upper].mean(dim=-1)  # (B,)


def confusion_matrix(pred: Sequence[int], gold: Sequence[int], n_classes: int) -> list[list[int]]:
    """Counts ``[gold][pred]``: row i holds the examples of class i, column j those predicted as j."""
    counts = [[0] * n_classes for _ in range(n_classes)]
    for p, g in zip(pred, gold, strict=True):
        counts[g][p] += 1
    return counts


def macro_f1(pred: Sequence[int], gold: Sequence[int], n_classes: int) -> float:
    """Unweighted mean over classes of F1 = 2 TP / (2 TP + FP + FN).

    Classes that occur neither in ``gold`` nor in ``pred`` are left out of the mean (their F1 is
    undefined); the others count, so a class never predicted has F1 0.
    """
    counts = confusion_matrix(pred, gold, n_classes)
    scores = []
    for c in range(n_classes):
        tp = counts[c][c]
        fn = sum(counts[c]) - tp
        fp = sum(row[c] for row in counts) - tp
        if tp + fn + fp:
            scores.append(2 * tp / (2 * tp + fp + fn))
    if not scores:
        raise ValueError("macro-F1 of zero examples")
    return sum(scores) / len(scores)
