import math

import numpy as np
import pytest
import torch

from attnkit.attention.masks import causal_mask, combine_masks, padding_mask
from attnkit.attention.scaled_dot import FEW_QUERIES, ScaledDotProductAttention, scaled_dot_product_attention


def _reference_loops(q, k, v, keep):
    """Eq. 1 of Vaswani et al. recomputed with numpy, one query row at a time."""
    q, k, v, keep = (t.detach().numpy() for t in (q, k, v, keep))
    b_n, t_n, e = q.shape
    s_n = k.shape[1]
    context = np.zeros((b_n, t_n, v.shape[2]))
    weights = np.zeros((b_n, t_n, s_n))
    for b in range(b_n):
        for t in range(t_n):
            kept = [s for s in range(s_n) if keep[b, t, s]]
            if not kept:
                continue  # the mask rule: a row with no key gets zero weights and zero context
            e_row = np.array([q[b, t] @ k[b, s] / math.sqrt(e) for s in kept])
            alpha = np.exp(e_row - e_row.max())
            alpha /= alpha.sum()
            weights[b, t, kept] = alpha
            context[b, t] = sum(a * v[b, s] for a, s in zip(alpha, kept))
    return torch.from_numpy(context), torch.from_numpy(weights)


def test_matches_equation_1_by_hand_loops(assert_mask_rule):
    q, k, v = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 6)
    keep = combine_masks(padding_mask(torch.tensor([5, 2])), causal_mask(3, 5)).expand(2, 3, 5)
    context, weights = scaled_dot_product_attention(q, k, v, keep)
    ref_context, ref_weights = _reference_loops(q, k, v, keep)
    torch.testing.assert_close(context.double(), ref_context, atol=1e-6, rtol=0)
    torch.testing.assert_close(weights.double(), ref_weights, atol=1e-6, rtol=0)
    assert_mask_rule(weights, keep)


def test_fused_path_equals_explicit_path():
    q, k, v = torch.randn(2, 3, 4, 8), torch.randn(2, 3, 6, 8), torch.randn(2, 3, 6, 8)
    keep = padding_mask(torch.tensor([6, 3])).unsqueeze(1)  # (B, 1, 1, S)
    explicit, weights = scaled_dot_product_attention(q, k, v, keep)
    fused, none = scaled_dot_product_attention(q, k, v, keep, need_weights=False)
    assert none is None
    torch.testing.assert_close(fused, explicit, atol=1e-6, rtol=0)


def test_all_masked_row_gives_zeros(assert_mask_rule):
    q, k, v = torch.randn(1, 2, 4), torch.randn(1, 3, 4), torch.randn(1, 3, 4)
    keep = torch.tensor([[[True, False, True], [False, False, False]]])
    context, weights = scaled_dot_product_attention(q, k, v, keep)
    assert_mask_rule(weights, keep)
    assert (context[0, 1] == 0).all()


@pytest.mark.parametrize("need_weights", [True, False])
def test_gradcheck_float64(need_weights):
    q = torch.randn(2, 2, 3, 4, dtype=torch.float64, requires_grad=True)
    k = torch.randn(2, 2, 5, 4, dtype=torch.float64, requires_grad=True)
    v = torch.randn(2, 2, 5, 3, dtype=torch.float64, requires_grad=True)
    keep = padding_mask(torch.tensor([5, 2])).unsqueeze(1)
    if need_weights:  # the explicit path also handles an all-masked row; SDPA's contract excludes it
        keep = keep & torch.tensor([True, True, False]).view(1, 1, 3, 1)
    assert torch.autograd.gradcheck(lambda q, k, v: scaled_dot_product_attention(q, k, v, keep, need_weights=need_weights)[0], (q, k, v))


def test_scaling_argument_of_section_3_2_1():
    # Vaswani et al. footnote 4: for q, k with independent N(0, 1) entries, q.k has mean 0 and
    # variance d_k. With 10,000 samples the sample variance has relative std error ~sqrt(2/N) = 1.4 %,
    # so the +-10 % bounds below are about 7 standard errors wide.
    g = torch.Generator().manual_seed(1234)
    d_k, n = 512, 10_000
    q, k = torch.randn(n, d_k, generator=g), torch.randn(n, d_k, generator=g)
    dots = (q * k).sum(-1)
    assert 0.9 * d_k < dots.var().item() < 1.1 * d_k
    assert 0.9 < (dots / math.sqrt(d_k)).var().item() < 1.1
    # Consequence: without the scale the softmax over 16 keys is nearly one-hot (tiny gradients);
    # with it, the largest weight is far from 1. Thresholds chosen far from the seeded values.
    q, k = torch.randn(200, 1, d_k, generator=g), torch.randn(200, 16, d_k, generator=g)
    v = torch.randn(200, 16, 4, generator=g)
    _, scaled = scaled_dot_product_attention(q, k, v)  # (200, 1, 16)
    _, unscaled = scaled_dot_product_attention(q, k, v, scale=1.0)  # (200, 1, 16)
    assert unscaled.max(-1).values.mean() > 0.8  # seeded value 0.93
    assert scaled.max(-1).values.mean() < 0.5  # seeded value 0.25


def test_module_dropout_only_in_training():
    attn = ScaledDotProductAttention(dropout=0.5)
    q, k = torch.randn(2, 3, 4), torch.randn(2, 5, 4)
    eye = torch.eye(5).expand(2, 5, 5)  # values = identity, so context = the (dropped) weights
    attn.eval()
    context, weights = attn(q, k, eye)
    torch.testing.assert_close(context, weights)
    attn.train()
    context, weights = attn(q, k, eye)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 3))  # returned weights: before dropout
    # inverted dropout: every dropped weight is 0 or weight / (1 - p)
    kept = context != 0
    torch.testing.assert_close(context[kept], weights[kept] / 0.5)
    assert 0 < kept.sum() < kept.numel()


@pytest.mark.parametrize("t", [1, 2, 8, 9])
def test_few_queries_take_the_explicit_path_on_cpu_without_grad(t, monkeypatch):
    # Decoding steps (a few queries per row) skip the fused kernel on the CPU and compute the same;
    # with autograd on (training), only one query does.
    q, k, v = torch.randn(4, 2, t, 8), torch.randn(4, 2, 6, 8), torch.randn(4, 2, 6, 8)
    keep = padding_mask(torch.tensor([6, 3, 1, 5])).unsqueeze(1)  # (B, 1, 1, S)
    expected = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=keep)
    calls = []
    fused = torch.nn.functional.scaled_dot_product_attention
    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", lambda *a, **kw: calls.append(1) or fused(*a, **kw))
    with torch.no_grad():
        context, _ = scaled_dot_product_attention(q, k, v, keep, need_weights=False)
    assert len(calls) == (t > FEW_QUERIES)
    torch.testing.assert_close(context, expected, atol=1e-6, rtol=0)
    calls.clear()
    scaled_dot_product_attention(q, k, v, keep, need_weights=False)
    assert len(calls) == (t > 1)


def test_bf16_few_queries_attend_in_fp32_through_the_fused_kernel():
    # bf16 keeps the fused kernel in fp32 for a few queries too: the explicit path's fp32 sums,
    # rounded to bf16, changed 3 of 1,000 beam-5 translations of a trained m30k model.
    q, k, v = (torch.randn(3, 2, 4, 8).bfloat16() for _ in range(3))
    with torch.no_grad():
        context, _ = scaled_dot_product_attention(q, k, v, need_weights=False)
        expected = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float())
    assert context.dtype == torch.bfloat16
    assert torch.equal(context, expected.bfloat16())
