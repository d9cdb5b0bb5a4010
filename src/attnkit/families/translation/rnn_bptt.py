"""The teacher-forced loop of an attention LSTM decoder, with backpropagation through time written out.

Under autograd, each target step of `RNNSeq2Seq._step` is some thirty small operators, and the
backward pass computes the gradient of every weight, and of the (B, S, H) annotations and keys, once
per step and adds it to the previous steps'. Here the whole loop over T steps is one autograd
Function:
- forward: the equations of `RNNSeq2Seq._step` for one LSTM layer, step by step, each step's
  intermediates written into (T, B, ...) buffers;
- backward: the chain rule through the steps in reverse, keeping inside the loop only what the
  previous step needs (the gradients of h_{t-1}, c_{t-1} and the step's extra input); the
  gradients of the weights (W, W_c, W_a, v), the annotations and the keys are each one matrix
  multiply (or sum) over all T steps after it.

The LSTM is that of `nn.LSTM` (i, f, g, o = sigma, sigma, tanh, sigma of W [x; h_{t-1}] + b;
c_t = f c_{t-1} + i g; h_t = o tanh(c_t)); the attention equations are those of
`attention.luong` and `attention.additive`. Matrix multiplies run in the dtype of the weights
passed in (autocast's, cast once by the caller); everything element-wise (gates, cell states, the
tanh layers, the softmax) in float32 at least, which on a CPU is also the faster: `tanh` of a
(215, 16, 256) bf16 tensor takes 650 us on two cores, of a float32 one 113 us. `RNNSeq2Seq.fused` says when
a decoder trains through this loop; `tests/families/translation/test_rnn_bptt.py` checks outputs and gradients
against `_step` under autograd, in float64 and in bf16.
"""

from __future__ import annotations

import torch
from torch import Tensor


def _lstm(gates: Tensor, c_prev: Tensor, c: Tensor, tanh_c: Tensor, h: Tensor) -> None:
    """One LSTM step on pre-activations gates (B, 4H), activated in place (i, f, g, o); writes c, tanh(c), h (B, H)."""
    H = c.size(1)
    gates[:, : 2 * H].sigmoid_()  # i, f
    gates[:, 2 * H : 3 * H].tanh_()  # g
    gates[:, 3 * H :].sigmoid_()  # o
    i, f, g, o = gates.chunk(4, dim=1)  # each (B, H)
    torch.addcmul(f * c_prev, i, g, out=c)  # c_t = f c_{t-1} + i g
    torch.tanh(c, out=tanh_c)
    torch.mul(o, tanh_c, out=h)  # h_t = o tanh(c_t)


def _lstm_backward(dh: Tensor, dc_next: Tensor, gates: Tensor, c_prev: Tensor, tanh_c: Tensor, dgates: Tensor) -> Tensor:
    """Backward of `_lstm`: dh (B, H) of h_t and dc_next of c_t (from step t + 1) -> dgates (B, 4H),
    written, of the pre-activations; returns the gradient of c_{t-1} (B, H)."""
    i, f, g, o = gates.chunk(4, dim=1)  # activated, each (B, H)
    dc = torch.addcmul(dc_next, dh * o, 1 - tanh_c * tanh_c)  # (B, H)
    di, df, dg, do = dgates.chunk(4, dim=1)
    torch.mul(dc * g, i * (1 - i), out=di)
    torch.mul(dc * c_prev, f * (1 - f), out=df)
    torch.mul(dc * i, 1 - g * g, out=dg)
    torch.mul(dh * tanh_c, o * (1 - o), out=do)
    return dc * f  # (B, H)


def _softmax(scores: Tensor, drop: Tensor, acc: torch.dtype) -> Tensor:
    """a = softmax of scores (B, S) over the kept source positions (drop (B, S) marks padding), in `acc`."""
    return torch.softmax(scores.to(acc).masked_fill_(drop, torch.finfo(acc).min), dim=1)  # (B, S)


def _softmax_backward(dctx: Tensor, p: Tensor, memory: Tensor) -> Tensor:
    """Gradient of the scores (B, S) from that of c = sum_s a_s h_s, dctx (B, H); p (B, S) the weights a."""
    dp = torch.bmm(memory, dctx[:, :, None])[:, :, 0].to(p.dtype)  # (B, S) dL/da_s = h_s . dctx
    return p * (dp - (p * dp).sum(dim=1, keepdim=True))  # (B, S); 0 where a_s = 0


class _LuongLoop(torch.autograd.Function):
    """Luong et al. (2015) with input feeding: x_t = [E y_{t-1}; h~_{t-1}] into the LSTM, then
    score(h_t, h_s) = h_t . k_s (k_s = W_a h_s for "general", h_s for "dot"), a_t, c_t, and
    h~_t = tanh(W_c [c_t; h_t]), which is the step's output and the next step's feed."""

    @staticmethod
    def forward(ctx, gates_in: Tensor, h0: Tensor, c0: Tensor, w: Tensor, keys: Tensor, memory: Tensor, w_c: Tensor, keep: Tensor):
        # gates_in (B, T, 4H): the embeddings' part of the gates, biases included; h0, c0 (B, H);
        # w (4H, 2H) = [W_ih's feed columns | W_hh]; keys, memory (B, S, H); w_c (H, 2H); keep (B, S).
        # Matmul operands are in w's dtype; gates, cell states, h~ and the softmax in float32 at least.
        B, T, G = gates_in.shape
        H, S, acc = G // 4, keys.size(1), torch.promote_types(w.dtype, torch.float32)
        with torch.autocast(gates_in.device.type, enabled=False):
            x, u = w.new_empty(T, B, 2 * H), w.new_empty(T, B, 2 * H)  # [h~_{t-1}; h_{t-1}], [c_t; h_t]
            gates, c = gates_in.new_empty(T, B, G, dtype=acc), gates_in.new_empty(T + 1, B, H, dtype=acc)
            tanh_c, out, weights = torch.empty_like(c[1:]), torch.empty_like(c[1:]), gates_in.new_empty(T, B, S, dtype=acc)
            x[0, :, :H], x[0, :, H:], c[0] = 0, h0, c0
            steps, drop = gates_in.transpose(0, 1), ~keep
            for t in range(T):
                gates[t] = torch.addmm(steps[t], x[t], w.t())  # (B, 4H)
                _lstm(gates[t], c[t], c[t + 1], tanh_c[t], u[t, :, H:])
                h = u[t, :, H:]  # (B, H) h_t
                weights[t] = _softmax(torch.bmm(keys, h[:, :, None])[:, :, 0], drop, acc)  # (B, S) a_t
                torch.bmm(weights[t, :, None].to(w.dtype), memory, out=u[t, :, None, :H])  # (B, 1, H) c_t
                torch.tanh((u[t] @ w_c.t()).to(acc), out=out[t])  # (B, H) h~_t
                if t + 1 < T:
                    x[t + 1, :, :H], x[t + 1, :, H:] = out[t], h
        ctx.save_for_backward(x, gates, c, tanh_c, u, out, weights, w, keys, memory, w_c)
        ctx.dtypes = h0.dtype, c0.dtype
        weights = weights.transpose(0, 1)  # (B, T, S)
        ctx.mark_non_differentiable(weights)
        return out.transpose(0, 1), weights  # (B, T, H) h~

    @staticmethod
    def backward(ctx, d_out: Tensor, _: Tensor):
        x, gates, c, tanh_c, u, out, weights, w, keys, memory, w_c = ctx.saved_tensors
        T, B, H = out.shape
        d_out = d_out.transpose(0, 1)  # (T, B, H)
        dgates, d_ctx, du = torch.empty_like(gates, dtype=w.dtype), torch.empty_like(out, dtype=w.dtype), torch.empty_like(out, dtype=w.dtype)
        d_scores, dh_next, dc_next, d_feed = torch.empty_like(weights), torch.zeros_like(out[0]), torch.zeros_like(out[0]), torch.zeros_like(out[0])
        for t in range(T - 1, -1, -1):
            torch.mul(d_out[t] + d_feed, 1 - out[t] * out[t], out=du[t])  # (B, H) through h~'s tanh
            d_u = du[t] @ w_c  # (B, 2H) of [c_t; h_t]
            d_ctx[t] = d_u[:, :H]
            d_scores[t] = _softmax_backward(d_ctx[t], weights[t], memory)  # (B, S)
            dh = torch.bmm(d_scores[t, :, None].to(w.dtype), keys)[:, 0] + d_u[:, H:] + dh_next  # (B, H) of h_t
            dc_next = _lstm_backward(dh.to(out.dtype), dc_next, gates[t], c[t], tanh_c[t], dgates[t])
            dx = dgates[t] @ w  # (B, 2H) of [h~_{t-1}; h_{t-1}]
            d_feed, dh_next = dx[:, :H], dx[:, H:]
        flat = T * B
        dw = dgates.view(flat, -1).t() @ x.view(flat, -1)  # (4H, 2H)
        dw_c = du.view(flat, H).t() @ u.view(flat, -1)  # (H, 2H)
        d_keys = torch.bmm(d_scores.permute(1, 2, 0).to(w.dtype), u[:, :, H:].transpose(0, 1))  # (B, S, H): sum_t ds_t h_t
        d_memory = torch.bmm(weights.permute(1, 2, 0).to(w.dtype), d_ctx.transpose(0, 1))  # (B, S, H): sum_t a_t dc_t
        h_dtype, c_dtype = ctx.dtypes
        return dgates.transpose(0, 1), dh_next.to(h_dtype), dc_next.to(c_dtype), dw, d_keys, d_memory, dw_c, None


class _BahdanauLoop(torch.autograd.Function):
    """Bahdanau et al. (2015): e_t = v^T tanh(W_a s_{t-1} + U_a h_s), a_t, c_t, then the LSTM on
    [E y_{t-1}; c_t] gives s_t. Returns s_t and c_t for every step (the readout is the caller's)."""

    @staticmethod
    def forward(ctx, gates_in: Tensor, h0: Tensor, c0: Tensor, w: Tensor, keys: Tensor, memory: Tensor, w_a: Tensor, v: Tensor, keep: Tensor):
        # gates_in (B, T, 4H); h0, c0 (B, H); w (4H, 2H) = [W_ih's context columns | W_hh];
        # keys (B, S, A) = U_a h_s; memory (B, S, H); w_a (A, H); v (A,); keep (B, S).
        # Matmul operands are in w's dtype; gates, cell states, the tanh layer and the softmax in float32 at least.
        B, T, G = gates_in.shape
        H, S, A, acc = G // 4, keys.size(1), keys.size(2), torch.promote_types(w.dtype, torch.float32)
        with torch.autocast(gates_in.device.type, enabled=False):
            x = w.new_empty(T + 1, B, 2 * H)  # [c_t; s_{t-1}]
            gates, c = gates_in.new_empty(T, B, G, dtype=acc), gates_in.new_empty(T + 1, B, H, dtype=acc)
            tanh_c, hidden = torch.empty_like(c[1:]), gates_in.new_empty(T, B, S, A, dtype=acc)  # tanh(W_a s + U_a h)
            weights, uh, v_acc = gates_in.new_empty(T, B, S, dtype=acc), keys.to(acc), v.to(acc)
            x[0, :, H:], c[0] = h0, c0
            steps, drop = gates_in.transpose(0, 1), ~keep
            for t in range(T):
                torch.add(uh, (x[t, :, None, H:] @ w_a.t()), out=hidden[t]).tanh_()  # (B, S, A)
                weights[t] = _softmax(hidden[t] @ v_acc, drop, acc)  # (B, S) a_t
                torch.bmm(weights[t, :, None].to(w.dtype), memory, out=x[t, :, None, :H])  # (B, 1, H) c_t
                gates[t] = torch.addmm(steps[t], x[t], w.t())  # (B, 4H)
                _lstm(gates[t], c[t], c[t + 1], tanh_c[t], x[t + 1, :, H:])  # s_t
        ctx.save_for_backward(x, gates, c, tanh_c, hidden, weights, w, memory, w_a, v_acc)
        ctx.dtypes = h0.dtype, c0.dtype, keys.dtype, v.dtype
        weights = weights.transpose(0, 1)  # (B, T, S)
        ctx.mark_non_differentiable(weights)
        return x[1:, :, H:].transpose(0, 1), x[:-1, :, :H].transpose(0, 1), weights  # s (B, T, H), c (B, T, H)

    @staticmethod
    def backward(ctx, d_s: Tensor, d_c: Tensor, _: Tensor):
        x, gates, c, tanh_c, hidden, weights, w, memory, w_a, v = ctx.saved_tensors
        T, B, S, A = hidden.shape
        H = c.size(2)
        d_s, d_c = d_s.transpose(0, 1), d_c.transpose(0, 1)  # (T, B, H)
        dgates, d_ctx, d_wq = torch.empty_like(gates, dtype=w.dtype), torch.empty_like(c[1:], dtype=w.dtype), w.new_empty(T, B, A)
        dv, dh_next, dc_next = v.new_empty(T, A), torch.zeros_like(c[0]), torch.zeros_like(c[0])
        d_e_sum, h2_d_e = torch.zeros_like(weights[0]), torch.zeros_like(hidden[0])  # sum_t d_e_t (B, S); sum_t h_t^2 d_e_t (B, S, A)
        for t in range(T - 1, -1, -1):
            dc_next = _lstm_backward(d_s[t] + dh_next, dc_next, gates[t], c[t], tanh_c[t], dgates[t])
            dx = dgates[t] @ w  # (B, 2H) of [c_t; s_{t-1}]
            d_ctx[t] = d_c[t] + dx[:, :H]
            d_e = _softmax_backward(d_ctx[t], weights[t], memory)  # (B, S) of e_t
            torch.mm(d_e.view(1, B * S), hidden[t].view(B * S, A), out=dv[t : t + 1])  # (1, A) of v
            # d_hidden = (1 - h^2) (d_e v^T) (B, S, A), summed over s for W_a s_{t-1} and over t for U_a h_s:
            # v (sum_s d_e - sum_s h^2 d_e) and v (sum_t d_e - sum_t h^2 d_e), without forming it.
            h2 = hidden[t].square_()  # (B, S, A), in tanh's place
            d_wq[t] = v * (d_e.sum(dim=1, keepdim=True) - torch.bmm(d_e[:, None], h2)[:, 0])  # (B, A) of W_a s_{t-1}
            d_e_sum += d_e
            h2_d_e.addcmul_(h2, d_e[:, :, None])
            dh_next = (d_wq[t] @ w_a).to(c.dtype) + dx[:, H:]  # (B, H) of s_{t-1}
        flat = T * B
        dw = dgates.view(flat, -1).t() @ x[:-1].reshape(flat, -1)  # (4H, 2H)
        dw_a = d_wq.view(flat, A).t() @ x[:-1, :, H:].reshape(flat, H)  # (A, H)
        d_memory = torch.bmm(weights.permute(1, 2, 0).to(w.dtype), d_ctx.transpose(0, 1))  # (B, S, H)
        h_dtype, c_dtype, keys_dtype, v_dtype = ctx.dtypes
        d_keys = (v * (d_e_sum[:, :, None] - h2_d_e)).to(keys_dtype)  # (B, S, A): the d_hidden of every step
        return dgates.transpose(0, 1), dh_next.to(h_dtype), dc_next.to(c_dtype), dw, d_keys, d_memory, dw_a, dv.sum(dim=0).to(v_dtype), None


def luong_loop(gates_in: Tensor, h0: Tensor, c0: Tensor, w: Tensor, keys: Tensor, memory: Tensor, w_c: Tensor, keep: Tensor) -> tuple[Tensor, Tensor]:
    """`_LuongLoop` (see there for the shapes): -> h~ (B, T, H) and the attention weights (B, T, S)."""
    return _LuongLoop.apply(gates_in, h0, c0, w, keys, memory, w_c, keep)


def bahdanau_loop(
    gates_in: Tensor, h0: Tensor, c0: Tensor, w: Tensor, keys: Tensor, memory: Tensor, w_a: Tensor, v: Tensor, keep: Tensor
) -> tuple[Tensor, Tensor, Tensor]:
    """`_BahdanauLoop` (see there for the shapes): -> s (B, T, H), c (B, T, H) and the weights (B, T, S)."""
    return _BahdanauLoop.apply(gates_in, h0, c0, w, keys, memory, w_a, v, keep)
