"""Small evaluation metrics: perplexity, accuracy, and the entropy of attention distributions."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor


def perplexity(nll_sum: float | Tensor, n_tokens: int | Tensor) -> float:
    """exp(nll_sum / n_tokens): the perplexity of a model on a set of tokens.

    Args:
        nll_sum: summed negative log-likelihood (natural log) of the tokens, e.g. the `nll_sum`
            of `attnkit.models.losses.label_smoothed_nll`, not its label-smoothed loss.
        n_tokens: number of tokens scored (padding excluded).

    Returns:
        The perplexity; inf if it overflows a float.

    Raises:
        ValueError: if n_tokens is not positive.
    """
    n = float(n_tokens)
    if n <= 0:
        raise ValueError(f"perplexity needs a positive number of tokens, got {n_tokens}")
    try:
        return math.exp(float(nll_sum) / n)
    except OverflowError:
        return math.inf


def accuracy(pred: Tensor | Sequence[int], gold: Tensor | Sequence[int], *, keep: Tensor | None = None) -> float:
    """Fraction of positions where pred equals gold.

    Args:
        pred: predicted labels, any shape (a tensor or a flat sequence).
        gold: gold labels, same shape.
        keep: optional bool tensor of that shape, True where a position counts (e.g. non-pad).

    Returns:
        The accuracy in [0, 1].

    Raises:
        ValueError: if the shapes differ or no position counts.
    """
    pred_t, gold_t = torch.as_tensor(pred), torch.as_tensor(gold)
    if pred_t.shape != gold_t.shape:
        shapes = f"{tuple(pred_t.shape)} and {tuple(gold_t.shape)}"
        raise ValueError(f"accuracy needs pred and gold of one shape, got {shapes}")
    correct = pred_t == gold_t
    if keep is not None:
        correct = correct[keep]
    if correct.numel() == 0:
        raise ValueError("accuracy of zero positions")
    return correct.float().mean().item()


def attention_entropy(weights: Tensor, keep: Tensor | None = None) -> float:
    """Mean entropy, in nats, of attention distributions: mean over rows of -sum_s w_s log w_s.

    A uniform row over n keys has entropy log n, a one-hot row 0 (0 log 0 is taken as 0).

    Args:
        weights: (..., S) rows of attention weights, each a distribution over the last axis.
        keep: optional bool mask broadcastable to weights, True where an entry counts. Entries
            left out do not enter their row's sum; a row with no entry kept is left out of the
            mean. Pass e.g. `tgt_keep[:, :, None] & src_keep[:, None, :]` for (B, T, S) weights.

    Returns:
        The mean entropy over the rows that count (nan if none does).
    """
    terms = -torch.xlogy(weights, weights)  # (..., S)
    if keep is None:
        return terms.sum(dim=-1).mean().item()
    keep = keep.expand_as(weights)  # (..., S)
    entropy = terms.masked_fill(~keep, 0.0).sum(dim=-1)  # (...,)
    rows = keep.any(dim=-1)  # (...,)
    return entropy[rows].mean().item()


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
