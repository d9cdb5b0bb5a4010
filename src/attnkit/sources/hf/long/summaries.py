"""Per-query summaries of attention rows, computed from one exact block at a time.

For query q with attention p over the keys it sees (k <= q in a decoder, every key in an encoder;
rows sum to 1):

- `sink`: p[q, 0], the mass on the first token (an attention sink: Xiao et al. 2023, StreamingLLM;
  an encoder's first token is its [CLS] or <s>);
- `entropy`: -sum_k p log p, in nats (0 for a head that looks at one key; log(q + 1) for a uniform
  one in a decoder, log N in an encoder);
- `distance`: sum_k p |q - k|, the mean distance attended, in tokens (back, in a decoder; either way,
  in an encoder);
- `local`: the mass on the keys within `window` of the query, |q - k| < window (the query itself
  included; in a decoder, the `window` latest keys).

Each is a (H, N) array per layer, and its mean over every query a (layers, heads) grid.
"""

from __future__ import annotations

import torch
from torch import Tensor

NAMES = ("sink", "entropy", "distance", "local")


def block_summaries(p: Tensor, scores: Tensor, keys: Tensor, lo: int, q0: int, window: int, causal: bool) -> dict[str, Tensor]:
    """The summaries of attention rows p (h, b, n), the softmax of `scores` (masked keys at the lowest float), of
    queries q0..q0+b over keys lo..: name -> (h, b); `keys` (N,) float32 are the key positions 0..N-1.

    Entropy is lse - sum_k p s (p = exp(s - lse)), lse = max s - log max p (p is largest where s is); a decoder's
    distance is q - sum_k p k (rows sum to 1, every key k <= q; a product with the key positions), an encoder's the
    product of p with |q - k|; the local mass sums only the band of keys q0 - window + 1 .. q0 + b - 1 + window that
    some row's window reaches (in a decoder, the keys after a query are masked: p is 0 there)."""
    b, n = p.shape[1:]
    qpos = keys[q0 : q0 + b]  # (b,)
    kpos = keys[lo : lo + n]  # (n,)
    start = max(0, q0 - window + 1 - lo)  # the band's first key, as an index into p's keys
    stop = min(n, q0 + b - 1 + window - lo)  # after the band's last key
    near = (qpos[:, None] - kpos[None, start:stop]).abs() < window  # (b, stop - start)
    lse = scores.amax(dim=-1) - p.amax(dim=-1).log_()  # (h, b)
    return {
        "sink": p[..., 0] if lo == 0 else p.new_zeros(p.shape[:2]),  # (h, b)
        "entropy": lse.sub_(torch.linalg.vecdot(p, scores)),  # (h, b): masked keys give 0 * lowest = 0
        "distance": qpos - torch.matmul(p, kpos) if causal else torch.linalg.vecdot(p, (qpos[:, None] - kpos[None, :]).abs()),  # (h, b)
        "local": torch.linalg.vecdot(p[..., start:stop], near.float()),  # (h, b)
    }
