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


def block_summaries(p: Tensor, scores: Tensor, keys: Tensor, lo: int, q0: int, window: int) -> dict[str, Tensor]:
    """The summaries of attention rows p (h, b, n), the softmax of `scores` (masked keys at the lowest float), of
    queries q0..q0+b over keys lo..: name -> (h, b); `keys` (N,) float32 are the key positions 0..N-1.

    Entropy is lse - sum_k p s (p = exp(s - lse)), lse = max s - log max p (p is largest where s is); distance
    is q - sum_k p k (rows sum to 1; a product with the key positions); the local mass sums only the band of keys
    q0 - window + 1 .. q0 + b that some row's window reaches."""
    b, n = p.shape[1:]
    qpos = keys[q0 : q0 + b]  # (b,)
    kpos = keys[lo : lo + n]  # (n,)
    start = max(0, q0 - window + 1 - lo)  # the band's first key, as an index into p's keys
    near = (qpos[:, None] - kpos[None, start:]) < window  # (b, n - start)
    lse = scores.amax(dim=-1) - p.amax(dim=-1).log_()  # (h, b)
    return {
        "sink": p[..., 0] if lo == 0 else p.new_zeros(p.shape[:2]),  # (h, b)
        "entropy": lse.sub_(torch.linalg.vecdot(p, scores)),  # (h, b): masked keys give 0 * lowest = 0
        "distance": qpos - torch.matmul(p, kpos),  # (h, b)
        "local": torch.linalg.vecdot(p[..., start:], near.float()),  # (h, b)
    }
