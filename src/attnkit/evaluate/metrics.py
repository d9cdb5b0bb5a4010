"""Small evaluation metrics shared by the families: perplexity and accuracy (a family's own metrics live
in its package: macro-F1 in `families/classification/metrics.py`, BLEU in `families/translation/bleu.py`)."""

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
