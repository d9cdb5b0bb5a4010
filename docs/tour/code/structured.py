"""A structured self-attentive sentence embedding and its penalty, by hand (tour page 6).

`StructuredSelfAttention` computes A = softmax(W_s2 tanh(W_s1 H^T)) (r hops over the n words) and
M = A H; `frobenius_penalty` is ||A A^T - I||_F^2. The script prints the shapes for random states,
and the penalty of three hand-made A: r identical one-hot hops (r(r - 1)), r one-hot hops on
different words (0), and r uniform hops.

    .venv/bin/python docs/tour/code/structured.py
"""

from __future__ import annotations

import torch

from attnkit.attention import StructuredSelfAttention, frobenius_penalty


def main() -> None:
    torch.manual_seed(0)
    attn = StructuredSelfAttention(d_in=2 * 8, d_a=10, r=4)
    H = torch.randn(1, 6, 16)  # (B, n, 2u) bi-LSTM states of 6 words
    M, A = attn(H)  # (B, r, 2u), (B, r, n)
    print("A", tuple(A.shape), "rows sum to", [round(x, 4) for x in A.sum(-1)[0].tolist()], " M", tuple(M.shape))
    print(f"M = A H: max |M - A @ H| = {(M - A @ H).abs().max():.1e}")
    r, n = 4, 6
    same = torch.zeros(1, r, n)
    same[:, :, 2] = 1.0  # every hop on word 3
    different = torch.eye(n)[:r][None]  # hop k on word k
    uniform = torch.full((1, r, n), 1.0 / n)
    for name, a in (("identical one-hot hops", same), ("one-hot hops on different words", different), ("uniform hops", uniform)):
        print(f"{name:>32}: penalty {frobenius_penalty(a).item():.3f}")
    print(f"r(r - 1) = {r * (r - 1)}; the penalty pushes the hops apart")


if __name__ == "__main__":
    main()
