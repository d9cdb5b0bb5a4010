"""A step's best tokens and their log-probabilities, over the whole vocabulary.

`best_tokens` returns exactly what `torch.topk` returns (and, for k = 1, `torch.argmax`: the first
of tied maxima), faster on the CPU. `topk` keeps a heap of (value, index) pairs over all V logits
of a row; here the row is first cut into blocks of `BLOCK` logits and only the blocks holding the
k + 1 largest maxima are searched. Every one of the row's k + 1 largest logits lies in one of
them: any logit outside is at most the smallest of those maxima, each of which is itself a logit
of its block. The k + 1-th value tells ties apart: a row whose k + 1 largest values are all
distinct has one top-k set and one order, which both searches find; a row with a tie (or a NaN)
among them is searched again with `torch.topk` itself, whose order of tied values no shortcut
reproduces.

`token_log_probs` normalises a step's logits (log_softmax) and reads the chosen tokens' entries.
Greedy and beam search both call these two, so beam search with K = 1 still adds exactly the
numbers greedy search adds.
"""

from __future__ import annotations

import torch
from torch import Tensor

BLOCK = 64  # logits per block: one amax per block, vectorised over the row


def best_tokens(logits: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """The k largest logits of each row and their tokens, largest first (as `torch.topk`).

    Args:
        logits: (N, V) float.
        k: 1 <= k <= V.

    Returns:
        values (N, k) and tokens (N, k) long.
    """
    N, V = logits.shape
    full = V // BLOCK  # (N, full, BLOCK) blocks, then a tail of V % BLOCK logits
    if logits.device.type != "cpu" or full <= k + 1:
        return _exact(logits, k)
    head = logits[:, : full * BLOCK].unflatten(1, (full, BLOCK))  # (N, full, BLOCK)
    _, blocks = head.amax(dim=2).topk(k + 1, dim=1)  # (N, k+1) the blocks of the largest maxima
    members = (blocks.unsqueeze(2) * BLOCK + torch.arange(BLOCK, device=logits.device)).flatten(1)  # (N, (k+1) BLOCK)
    tail = torch.arange(full * BLOCK, V, device=logits.device).expand(N, -1)  # (N, V % BLOCK)
    members = torch.cat([members, tail], dim=1)  # (N, M)
    values, picked = logits.gather(1, members).topk(k + 1, dim=1)  # (N, k+1)
    tokens = members.gather(1, picked)  # (N, k+1)
    tied = (values[:, 1:] == values[:, :-1]).any(dim=1) | values.isnan().any(dim=1)  # (N,)
    values, tokens = values[:, :k].contiguous(), tokens[:, :k].contiguous()  # (N, k)
    if tied.any():
        rows = tied.nonzero().squeeze(1)  # (N',)
        exact_values, exact_tokens = _exact(logits.index_select(0, rows), k)  # (N', k)
        values, tokens = values.index_copy(0, rows, exact_values), tokens.index_copy(0, rows, exact_tokens)  # (N, k)
    return values, tokens


def _exact(logits: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """`torch.topk`, or for k = 1 `max`, which returns the first of tied maxima (as `argmax`)."""
    values, tokens = logits.max(dim=1, keepdim=True) if k == 1 else logits.topk(k, dim=1)  # (N, k)
    return values, tokens


def token_log_probs(logits: Tensor, tokens: Tensor) -> Tensor:
    """log softmax(logits) at `tokens`, in float32.

    Args:
        logits: (N, V) a step's scores, any float dtype.
        tokens: (N, P) long.

    Returns:
        (N, P) float32.
    """
    return logits.float().log_softmax(dim=1).gather(1, tokens)  # (N, P)
