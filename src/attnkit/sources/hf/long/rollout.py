"""Rollout for chosen output rows, layer by layer from the top, in O(rows x N) memory.

attnkit's rollout (`attnkit.analysis.rollout`, Abnar & Zuidema 2020) is A'_L ... A'_1 with
A'_l = (0.5 A_l + 0.5 I) / rowsum, A_l the head mean of layer l (rowsum is 1: A_l's rows are softmax rows); row q of it is e_q A'_L ... A'_1.
So the rows R (m, N) start as e_q and take one layer at a time, top first: R <- R A'_l, where
R A_l = sum_q R[:, q] A_l[q, :] is summed over exact blocks of A_l's rows as they are recomputed.
The result equals those rows of the full rollout, which is never formed. An encoder's layers take the
same formula: its rows reach every position, before and after q, so its rollout row q (row 0: the
[CLS] a classifier head reads) spreads over the whole input, where a decoder's stays on 0..q.
"""

from __future__ import annotations

import torch
from torch import Tensor


class RolloutStep:
    """R A'_l for rows R (m, N), accumulated from exact blocks of layer l's rows."""

    def __init__(self, rows: Tensor) -> None:
        self.rows = rows  # (m, N): R before this layer
        self.out = torch.zeros_like(rows)  # (m, N): R A'_l so far

    def add(self, p: Tensor, lo: int, q0: int) -> None:
        """Add rows p (H, b, n) of queries q0.. over keys lo.. (their head mean is A_l's block)."""
        h, b, n = p.shape
        w = self.rows[:, q0 : q0 + b]  # (m, b); the rows of 0.5 A + 0.5 I sum to 1 already (softmax rows)
        spread = (w / h).repeat(1, h).to(p.device)  # (m, h b): the head mean folded into one product
        self.out[:, lo : lo + n] += 0.5 * torch.matmul(spread, p.reshape(h * b, n)).cpu()  # (m, n)
        self.out[:, q0 : q0 + b] += 0.5 * w


def start(queries: list[int], length: int) -> Tensor:
    """The rows e_q (m, N) rollout starts from."""
    rows = torch.zeros(len(queries), length)  # (m, N)
    rows[torch.arange(len(queries)), torch.tensor(queries)] = 1.0
    return rows
