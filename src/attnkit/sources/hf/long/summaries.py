"""Per-query summaries of attention rows, computed from one exact block at a time.

For query q with attention p over keys k <= q (rows sum to 1):

- `sink`: p[q, 0], the mass on the first token (an attention sink: Xiao et al. 2023, StreamingLLM);
- `entropy`: -sum_k p log p, in nats (0 for a head that looks at one key; log(q + 1) for a uniform one);
- `distance`: sum_k p (q - k), the mean distance attended back, in tokens;
- `local`: the mass on the `window` latest keys, q - window < k <= q (the query itself included).

Each is a (H, N) array per layer, and its mean over every query a (layers, heads) grid.
"""

from __future__ import annotations

import torch
from torch import Tensor

NAMES = ("sink", "entropy", "distance", "local")


def block_summaries(p: Tensor, lo: int, q0: int, window: int) -> dict[str, Tensor]:
    """The summaries of attention rows p (h, b, n) of queries q0.. over keys lo..: name -> (h, b)."""
    qpos = torch.arange(q0, q0 + p.size(1), device=p.device)[:, None]  # (b, 1)
    back = (qpos - torch.arange(lo, lo + p.size(2), device=p.device)[None, :]).float()  # (b, n): q - k
    sink = p[..., 0] if lo == 0 else p.new_zeros(p.shape[:2])  # (h, b)
    return {
        "sink": sink,
        "entropy": -torch.special.xlogy(p, p).sum(dim=-1),  # (h, b)
        "distance": (p * back).sum(dim=-1),  # (h, b)
        "local": (p * (back < window)).sum(dim=-1),  # (h, b)
    }


def without_sink(p: Tensor, lo: int) -> Tensor:
    """Rows p (h, b, n) with the first token's column removed (set to 0) and renormalised; a row with all its
    mass on the first token (query 0 always) becomes all zeros."""
    if lo > 0:
        return p
    rest = p.clone()  # (h, b, n)
    rest[..., 0] = 0
    total = rest.sum(dim=-1, keepdim=True)  # (h, b, 1)
    return torch.where(total > 0, rest / total.clamp_min(torch.finfo(p.dtype).tiny), rest)  # (h, b, n)
