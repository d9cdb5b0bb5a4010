"""The generic attention layer, measured (tour page 4). One sub-command per idea:

    .venv/bin/python docs/tour/code/layer.py variance    # why divide by sqrt(d_k)
    .venv/bin/python docs/tour/code/layer.py positions   # PE(pos + k) is a linear map of PE(pos)
    .venv/bin/python docs/tour/code/layer.py masks       # padding and causal masks
    .venv/bin/python docs/tour/code/layer.py heads       # multi-head attention, head by head

Everything computed here is attnkit's (`attnkit.attention`); the script only draws random inputs
and prints what comes out.
"""

from __future__ import annotations

import argparse
import math

import torch

from attnkit.attention import (
    MultiHeadAttention,
    SinusoidalPositionalEncoding,
    causal_mask,
    combine_masks,
    masked_softmax,
    padding_mask,
    scaled_dot_product_attention,
    sinusoidal_encoding,
    split_heads,
)


def variance() -> None:
    """Var(q . k) = d_k for unit-variance q, k; the scale 1/sqrt(d_k) brings it back to 1."""
    torch.manual_seed(0)
    print(f"{'d_k':>5} {'var(q.k)':>9} {'/ d_k':>6} {'var(q.k/sqrt(d_k))':>19} {'max weight unscaled':>20} {'scaled':>7}")
    for d_k in (4, 16, 64, 256, 1024):
        q = torch.randn(256, 1, d_k)  # (B, T, E): one query per row
        k = torch.randn(256, 10, d_k)  # (B, S, E): ten keys
        raw = (q @ k.transpose(1, 2)).flatten()  # (B * S,) the dot products q . k
        _, w_raw = scaled_dot_product_attention(q, k, k, scale=1.0)  # (B, 1, S)
        _, w = scaled_dot_product_attention(q, k, k)  # (B, 1, S), scale 1/sqrt(d_k)
        scaled = raw / math.sqrt(d_k)
        print(f"{d_k:5d} {raw.var():9.1f} {raw.var() / d_k:6.2f} {scaled.var():19.2f} {w_raw.max(-1).values.mean():20.3f} {w.max(-1).values.mean():7.3f}")
    print("unscaled, the softmax saturates as d_k grows (one key takes almost all the weight, gradients vanish);")
    print("scaled, the scores keep variance ~1 and the weights stay spread at every d_k")


def positions() -> None:
    """For each offset k one matrix M_k (block-diagonal 2x2 rotations) maps PE(pos) to PE(pos + k)."""
    d_model, k = 16, 5
    pe = sinusoidal_encoding(20_000 + k, d_model, dtype=torch.float64)  # (T, D)
    omega = torch.exp(-math.log(10000.0) * torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)  # (D/2,)
    m_k = torch.zeros(d_model, d_model, dtype=torch.float64)
    for i, w in enumerate(omega.tolist()):  # [sin(a + b), cos(a + b)] = R(b) [sin a, cos a]
        c, s = math.cos(k * w), math.sin(k * w)
        m_k[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = torch.tensor([[c, s], [-s, c]])
    shifted = pe[:100] @ m_k.T  # (T, D): M_k PE(pos) for pos = 0..99
    print(f"rotation M_{k}: max |M_{k} PE(pos) - PE(pos+{k})| over pos 0..99 = {(shifted - pe[k : 100 + k]).abs().max():.1e}")
    spread = torch.arange(0, 20_000, 400)  # 50 positions over one period of the slowest pair (2 pi / w ~ 19,869)
    fit = torch.linalg.lstsq(pe[spread], pe[spread + k]).solution.T  # (D, D) fitted on those positions only
    print(f"least squares fit on pos 0, 400, ..., 19600, checked on pos 50..99: max error {(pe[50:100] @ fit.T - pe[50 + k : 100 + k]).abs().max():.1e}")
    x = torch.zeros(1, 6, d_model)  # (B, T, D)
    print("added:", tuple(SinusoidalPositionalEncoding(d_model)(x).shape), " concatenated:", tuple(SinusoidalPositionalEncoding(8, mode="concat")(x).shape))


def masks() -> None:
    """Padding and causal keep-masks, combined; masked keys get exactly 0 weight."""
    keep = padding_mask(torch.tensor([4, 2]))  # (B, 1, S): the second sentence has 2 real tokens
    both = combine_masks(keep, causal_mask(4))  # (B, T, S)
    weights = masked_softmax(torch.zeros(2, 4, 4), both)  # (B, T, S): equal scores, so uniform over what is kept
    torch.set_printoptions(precision=3)
    print("causal_mask(4):\n", causal_mask(4).int())
    print("weights, sentence of length 4 (causal):\n", weights[0])
    print("weights, sentence of length 2 (causal + padding):\n", weights[1])


def heads() -> None:
    """Multi-head self-attention: each head is eq. 1 on its own d_k-wide slice of the projections."""
    torch.manual_seed(0)
    mha = MultiHeadAttention(d_model=16, n_heads=4)
    x = torch.randn(1, 5, 16)  # (B, T, D)
    context, weights = mha(x, x, x, causal_mask(5))  # (B, T, D), (B, H, T, T)
    print("context", tuple(context.shape), "weights", tuple(weights.shape), f"(d_k = {mha.d_k})")
    q, k = split_heads(mha.q_proj(x), 4), split_heads(mha.k_proj(x), 4)  # (B, H, T, E)
    _, by_hand = scaled_dot_product_attention(q, k, k, causal_mask(5))  # (B, H, T, T)
    print(f"head weights recomputed from q_proj/k_proj and eq. 1: max difference {(by_hand - weights).abs().max():.1e}")
    ref = torch.nn.MultiheadAttention(16, 4, batch_first=True)
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([mha.q_proj.weight, mha.k_proj.weight, mha.v_proj.weight]))
        ref.in_proj_bias.copy_(torch.cat([mha.q_proj.bias, mha.k_proj.bias, mha.v_proj.bias]))
        ref.out_proj.load_state_dict(mha.out_proj.state_dict())
    ref_out, _ = ref(x, x, x, attn_mask=~causal_mask(5))  # torch's mask: True = may NOT attend
    print(f"torch.nn.MultiheadAttention with the same weights: max difference {(ref_out - context).abs().max():.1e}")
    print("query 4 (last), per head:", [[round(w, 2) for w in row] for row in weights[0, :, 4].tolist()])


def main() -> None:
    commands = {"variance": variance, "positions": positions, "masks": masks, "heads": heads}
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=commands)
    commands[parser.parse_args().what]()


if __name__ == "__main__":
    main()
