"""Head importance and pruning (Michel et al. 2019, "Are Sixteen Heads Really Better than One?").

Each head's output is multiplied by a gate xi_h (the head mask, sec. 2.3, eq. "Att_h(x) -> xi_h
Att_h(x)"); the importance of head h is the expected sensitivity of the loss to its gate (sec. 4.1):

    I_h = E_{x ~ X} | dL(x) / d xi_h |      at xi = 1 (all heads on)

`head_importance` evaluates the callable loss once per batch with a (L, H) mask of ones that
requires grad and sums |dL/dxi| over batches (with batches of one example this is the paper's
expectation up to the factor 1/|X|). As in the paper (following Molchanov et al. 2017), the scores
are normalised per layer by their L2 norm unless `normalise=False`.

`pruning_order` sorts heads from least to most important; `pruning_curve` masks the first k heads
of an order and evaluates a metric, for the paper's Figure 3 (BLEU or accuracy as heads go, with a
random order beside it, `random_order`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

import torch
from torch import Tensor

from attnkit.errors import AttnkitError

Batch = TypeVar("Batch")
Head = tuple[int, int]


def head_importance(loss: Callable[[Tensor, Batch], Tensor], batches: Iterable[Batch], shape: tuple[int, int], normalise: bool = True) -> Tensor:
    """I_h = sum over batches of |d loss(mask, batch) / d mask| at mask = 1: -> (L, H).

    Args:
        loss: (head_mask (L, H), batch) -> scalar loss; it must multiply head (l, h)'s output by mask[l, h].
        batches: the data to average over.
        shape: (layers, heads).
        normalise: divide each layer's scores by their L2 norm.
    """
    total = torch.zeros(shape, dtype=torch.float64)  # (L, H)
    seen = 0
    for batch in batches:
        total += head_gradient(loss, batch, shape)
        seen += 1
    if not seen:
        raise AttnkitError("head importance: no batches given")
    return (normalise_layers(total) if normalise else total).float()  # (L, H)


def head_gradient(loss: Callable[[Tensor, Batch], Tensor], batch: Batch, shape: tuple[int, int]) -> Tensor:
    """|d loss(mask, batch) / d mask| at mask = 1, one batch's term of I_h: -> (L, H) float64."""
    mask = torch.ones(shape, requires_grad=True)  # (L, H)
    value = loss(mask, batch)
    if value.dim() != 0:
        raise AttnkitError(f"head importance: the loss must be a scalar, got shape {tuple(value.shape)}")
    (grad,) = torch.autograd.grad(value, mask)  # (L, H)
    return grad.detach().abs().double()  # (L, H)


def normalise_layers(total: Tensor) -> Tensor:
    """Each layer's (row's) scores divided by their L2 norm (Molchanov et al. 2017): (L, H) -> (L, H)."""
    return total / total.norm(dim=-1, keepdim=True).clamp_min(1e-20)  # (L, H)


def pruning_order(importance: Tensor) -> list[Head]:
    """All heads (layer, head), least important first (ties: lower layer, then lower head first)."""
    L, H = importance.shape
    flat = importance.reshape(-1).tolist()
    order = sorted(range(L * H), key=lambda i: (flat[i], i))
    return [(i // H, i % H) for i in order]


def random_order(shape: tuple[int, int], seed: int = 0) -> list[Head]:
    """All heads in a seeded random order (the baseline of Michel et al.'s Figure 3)."""
    L, H = shape
    perm = torch.randperm(L * H, generator=torch.Generator().manual_seed(seed)).tolist()
    return [(i // H, i % H) for i in perm]


def mask_first(order: Sequence[Head], k: int, shape: tuple[int, int]) -> Tensor:
    """A (L, H) mask of ones with the first k heads of `order` set to 0."""
    mask = torch.ones(shape)  # (L, H)
    for layer, head in order[:k]:
        mask[layer, head] = 0.0
    return mask


def pruning_curve(
    metric: Callable[[Tensor], float], order: Sequence[Head], shape: tuple[int, int], counts: Iterable[int] | None = None
) -> list[tuple[int, float]]:
    """The metric with the first k heads of `order` masked, for each k in `counts` (0..all when None).

    Returns:
        [(k, metric(mask_k)), ...] in the order of `counts`.
    """
    ks = range(len(order) + 1) if counts is None else counts
    curve = []
    for k in ks:
        if not 0 <= k <= len(order):
            raise AttnkitError(f"pruning curve: cannot mask {k} of {len(order)} heads")
        curve.append((k, float(metric(mask_first(order, k, shape)))))
    return curve


def heads_before_drop(curve: Sequence[tuple[int, float]], drop: float, higher_is_better: bool = True) -> int:
    """The most heads masked while the metric stays within `drop` of the curve's k = 0 value (curve in increasing k)."""
    if not curve or curve[0][0] != 0:
        raise AttnkitError("pruning curve: the first point must be k = 0 (no head masked)")
    base = curve[0][1]
    best = 0
    for k, value in curve:
        loss = base - value if higher_is_better else value - base
        if loss > drop:
            break
        best = k
    return best
