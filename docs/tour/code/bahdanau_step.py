"""One step of a Bahdanau decoder, by the equations and by attnkit (tour page 2).

Builds a small `RNNSeq2Seq(attention="bahdanau")`, encodes a 6-token source and runs the first
decoder step with `model.step`. Then it recomputes that step's attention from the paper's
equations with the model's own weights, e_{t,i} = v_a^T tanh(W_a s_{t-1} + U_a h_i),
a_t = softmax(e_t), c_t = sum_i a_{t,i} h_i, and prints both.

    .venv/bin/python docs/tour/code/bahdanau_step.py
"""

from __future__ import annotations

import torch

from attnkit.families.translation.rnn import RNNSeq2Seq


def main() -> None:
    torch.manual_seed(0)
    model = RNNSeq2Seq(src_vocab_size=20, tgt_vocab_size=20, attention="bahdanau", embed_dim=8, hidden=8, dropout=0.0).eval()
    src = torch.tensor([[5, 9, 4, 7, 12, 3]])  # (B, S): five tokens and EOS (id 3)
    src_keep = torch.ones_like(src, dtype=torch.bool)  # (B, S)
    with torch.no_grad():
        state = model.init_state(model.encode(src, src_keep), src_keep)
        h, s_prev = state.memory, state.hidden[:, -1]  # annotations h (B, S, H), decoder state s_{t-1} (B, H)
        logits, new_state, weights = model.step(torch.tensor([[2]]), state)  # BOS in: (B, V), state, a_t (B, S)
        attn = model.attn
        e = attn.v_a(torch.tanh(attn.w_a(s_prev)[:, None] + attn.u_a(h))).squeeze(-1)  # (B, S) e_{t,i}
        a = torch.softmax(e, dim=-1)  # (B, S)
        c = (a[:, :, None] * h).sum(1)  # (B, H) c_t
        c_model, _ = attn(s_prev[:, None], h, h)  # (B, 1, H) the module's context
    torch.set_printoptions(precision=4, sci_mode=False)
    print("e_t (by the equation):     ", e[0])
    print("a_t = softmax(e_t):        ", a[0], f"sum {a.sum():.4f}")
    print("a_t from model.step:       ", weights[0])
    print(f"max |a_t(equation) - a_t(model)| = {(a - weights).abs().max():.1e}")
    print(f"max |c_t(equation) - c_t(AdditiveAttention)| = {(c - c_model[:, 0]).abs().max():.1e}")
    print("s_t = G(y_{t-1}, s_{t-1}, c_t): the state moved by", f"{(new_state.hidden[:, -1] - s_prev).norm():.4f}")


if __name__ == "__main__":
    main()
