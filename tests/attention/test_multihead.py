"""MultiHeadAttention: parity with torch.nn.MultiheadAttention, caching, mask rule, gradients."""

import pytest
import torch
from torch import nn

from attnkit.attention.cache import KVCache
from attnkit.attention.masks import causal_mask, combine_masks, padding_mask
from attnkit.attention.multihead import MultiHeadAttention, merge_heads, split_heads

ATOL = 1e-5  # fp32 max abs difference allowed against the reference


def torch_copy(ours: MultiHeadAttention, kdim=None, vdim=None) -> nn.MultiheadAttention:
    """The reference: torch.nn.MultiheadAttention holding our weights."""
    bias = ours.q_proj.bias is not None
    ref = nn.MultiheadAttention(ours.d_model, ours.n_heads, bias=bias, kdim=kdim, vdim=vdim, batch_first=True)
    with torch.no_grad():
        if ref._qkv_same_embed_dim:
            ref.in_proj_weight.copy_(torch.cat([ours.q_proj.weight, ours.k_proj.weight, ours.v_proj.weight]))
        else:
            ref.q_proj_weight.copy_(ours.q_proj.weight)
            ref.k_proj_weight.copy_(ours.k_proj.weight)
            ref.v_proj_weight.copy_(ours.v_proj.weight)
        if bias:
            ref.in_proj_bias.copy_(torch.cat([ours.q_proj.bias, ours.k_proj.bias, ours.v_proj.bias]))
            ref.out_proj.bias.copy_(ours.out_proj.bias)
        ref.out_proj.weight.copy_(ours.out_proj.weight)
    return ref


def assert_parity(ours_out, ref_module, q, k, v, key_padding_mask=None, attn_mask=None):
    context, weights = ours_out
    ref_context, ref_weights = ref_module(q, k, v, key_padding_mask=key_padding_mask, attn_mask=attn_mask, average_attn_weights=False)
    _, ref_mean = ref_module(q, k, v, key_padding_mask=key_padding_mask, attn_mask=attn_mask)
    assert (context - ref_context).abs().max() < ATOL
    assert (weights - ref_weights).abs().max() < ATOL
    assert (weights.mean(dim=1) - ref_mean).abs().max() < ATOL  # the reference averages heads


@pytest.mark.parametrize("bias", [True, False])
def test_self_attention_with_padding_matches_torch(bias):
    mha = MultiHeadAttention(32, 4, bias=bias)
    x = torch.randn(3, 7, 32)
    keep = padding_mask(torch.tensor([7, 4, 1]))  # (B, 1, S)
    ref = torch_copy(mha)
    # torch's key_padding_mask is True = ignore: invert our keep-mask (only ever inside tests)
    assert_parity(mha(x, x, x, keep), ref, x, x, x, key_padding_mask=~keep.squeeze(1))


def test_self_attention_causal_matches_torch():
    mha = MultiHeadAttention(32, 8)
    x = torch.randn(2, 6, 32)
    keep = causal_mask(6)  # (T, S)
    assert_parity(mha(x, x, x, keep), torch_copy(mha), x, x, x, attn_mask=~keep)


def test_cross_attention_with_other_key_and_value_widths_matches_torch():
    mha = MultiHeadAttention(16, 2, kdim=12, vdim=20)
    q, k, v = torch.randn(2, 5, 16), torch.randn(2, 9, 12), torch.randn(2, 9, 20)
    keep = padding_mask(torch.tensor([9, 3]))
    ref = torch_copy(mha, kdim=12, vdim=20)
    assert_parity(mha(q, k, v, keep), ref, q, k, v, key_padding_mask=~keep.squeeze(1))


def test_cross_attention_over_memory_matches_torch():
    mha = MultiHeadAttention(16, 4)
    q, memory = torch.randn(2, 5, 16), torch.randn(2, 9, 16)
    keep = padding_mask(torch.tensor([9, 6]))
    ref = torch_copy(mha)
    assert_parity(mha(q, memory, memory, keep), ref, q, memory, memory, key_padding_mask=~keep.squeeze(1))


def test_sdpa_path_matches_torch_and_explicit_path():
    mha = MultiHeadAttention(32, 4)
    x = torch.randn(3, 7, 32)
    keep = combine_masks(padding_mask(torch.tensor([7, 5, 2])), causal_mask(7))  # (B, T, S)
    fused, none = mha(x, x, x, keep, need_weights=False)
    explicit, _ = mha(x, x, x, keep)
    assert none is None
    assert (fused - explicit).abs().max() < ATOL
    ref_context, _ = torch_copy(mha)(x, x, x, attn_mask=~keep.repeat_interleave(4, dim=0), need_weights=False)
    assert (fused - ref_context).abs().max() < ATOL


def test_forward_equals_attend_of_project_kv():
    mha = MultiHeadAttention(16, 4)
    x, memory = torch.randn(2, 5, 16), torch.randn(2, 8, 16)
    # fused q/k/v (self-attention) and fused k/v (attention over a memory) projections
    for keys, keep in ((x, padding_mask(torch.tensor([5, 3]))), (memory, padding_mask(torch.tensor([8, 3])))):
        context, weights = mha(x, keys, keys, keep)
        ref_context, ref_weights = mha.attend(x.clone(), mha.project_kv(keys.clone(), keys.clone()), keep)
        torch.testing.assert_close(context, ref_context, atol=1e-6, rtol=0)
        torch.testing.assert_close(weights, ref_weights, atol=1e-6, rtol=0)


def test_incremental_decoding_with_cache_equals_full_causal_pass():
    mha = MultiHeadAttention(16, 4).eval()
    x = torch.randn(2, 6, 16)
    full_context, full_weights = mha(x, x, x, causal_mask(6))
    cache = KVCache(torch.zeros(2, 4, 0, 4), torch.zeros(2, 4, 0, 4))  # empty: S = 0
    for t in range(6):
        x_t = x[:, t : t + 1]  # (B, 1, D)
        cache = cache.append(mha.project_kv(x_t, x_t))
        context, weights = mha.attend(x_t, cache, causal_mask(1, t + 1))
        torch.testing.assert_close(context, full_context[:, t : t + 1], atol=1e-6, rtol=0)
        torch.testing.assert_close(weights[:, :, 0], full_weights[:, :, t, : t + 1], atol=1e-6, rtol=0)
        step_fused, _ = mha.attend(x_t, cache, need_weights=False)
        torch.testing.assert_close(step_fused, context, atol=1e-6, rtol=0)


def test_reordering_the_cache_equals_reordering_the_output():
    mha = MultiHeadAttention(16, 4)
    q, memory = torch.randn(3, 1, 16), torch.randn(3, 5, 16)
    cache = mha.project_kv(memory, memory)
    index = torch.tensor([2, 0, 0])
    reordered, _ = mha.attend(q[index], cache.reorder(index))
    context, _ = mha.attend(q, cache)
    torch.testing.assert_close(reordered, context[index])


def test_mask_rule_and_all_masked_row(assert_mask_rule):
    mha = MultiHeadAttention(16, 2)
    x = torch.randn(2, 4, 16)
    keep = combine_masks(padding_mask(torch.tensor([4, 0])), causal_mask(4))  # example 1: no key at all
    context, weights = mha(x, x, x, keep)
    assert_mask_rule(weights, keep.unsqueeze(1))
    # no key: zero weights, so the context is out_proj(0) = the output bias
    torch.testing.assert_close(context[1], mha.out_proj.bias.expand(4, 16))


def test_split_and_merge_heads_are_inverse():
    x = torch.arange(2 * 3 * 8.0).view(2, 3, 8)
    heads = split_heads(x, 4)
    assert heads.shape == (2, 4, 3, 2)
    assert torch.equal(heads[1, 2, 0], x[1, 0, 4:6])  # head h holds features h*E .. h*E+E-1
    assert torch.equal(merge_heads(heads), x)


@pytest.mark.parametrize("need_weights", [True, False])
def test_gradcheck_float64(need_weights):
    mha = MultiHeadAttention(8, 2).double()
    q = torch.randn(2, 3, 8, dtype=torch.float64, requires_grad=True)
    kv = torch.randn(2, 4, 8, dtype=torch.float64, requires_grad=True)
    keep = padding_mask(torch.tensor([4, 2]))
    assert torch.autograd.gradcheck(lambda q, kv: mha(q, kv, kv, keep, need_weights=need_weights)[0], (q, kv))
    x = torch.randn(2, 3, 8, dtype=torch.float64, requires_grad=True)  # fused self-attention path
    assert torch.autograd.gradcheck(lambda x: mha(x, x, x, causal_mask(3), need_weights=need_weights)[0], (x,))


def test_dropout_acts_in_training_only_and_weights_stay_probabilities():
    mha = MultiHeadAttention(16, 2, dropout=0.5)
    x = torch.randn(2, 5, 16)
    mha.eval()
    a, _ = mha(x, x, x)
    b, _ = mha(x, x, x)
    assert torch.equal(a, b)
    mha.train()
    c, weights = mha(x, x, x)
    assert not torch.allclose(c, a)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 2, 5))


def test_heads_must_divide_d_model():
    with pytest.raises(ValueError, match="divisible"):
        MultiHeadAttention(10, 3)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_matches_torch_on_both_paths(assert_mask_rule):
    mha = MultiHeadAttention(64, 4).cuda()
    ref = torch_copy(mha).cuda()
    x = torch.randn(3, 9, 64, device="cuda")
    keep = padding_mask(torch.tensor([9, 5, 1], device="cuda"))  # (B, 1, S)
    context, weights = mha(x, x, x, keep)
    ref_context, ref_weights = ref(x, x, x, key_padding_mask=~keep.squeeze(1), average_attn_weights=False)
    assert (context - ref_context).abs().max() < ATOL
    assert (weights - ref_weights).abs().max() < ATOL
    fused, _ = mha(x, x, x, keep, need_weights=False)
    assert (fused - ref_context).abs().max() < ATOL
    empty = combine_masks(keep, torch.tensor([True] * 8 + [False], device="cuda").view(1, 9, 1))  # last row: no key
    _, weights = mha(x, x, x, empty)
    assert_mask_rule(weights, empty.unsqueeze(1))


def _per_head_reference(mha: MultiHeadAttention, q, k, v, keep):
    """Sec. 3.2.2 computed head by head with plain matmuls: head_i = softmax(Q W_i^Q (K W_i^K)^T / sqrt(d_k)) V W_i^V."""
    heads = []
    for i in range(mha.n_heads):
        rows_k, rows_v = slice(i * mha.d_k, (i + 1) * mha.d_k), slice(i * mha.d_v, (i + 1) * mha.d_v)
        qi = q @ mha.q_proj.weight[rows_k].T + mha.q_proj.bias[rows_k]  # (B, T, d_k)
        ki = k @ mha.k_proj.weight[rows_k].T + mha.k_proj.bias[rows_k]  # (B, S, d_k)
        vi = v @ mha.v_proj.weight[rows_v].T + mha.v_proj.bias[rows_v]  # (B, S, d_v)
        scores = (qi @ ki.transpose(1, 2)) / mha.d_k**0.5  # (B, T, S)
        heads.append(scores.masked_fill(~keep, float("-inf")).softmax(-1) @ vi)  # (B, T, d_v)
    return torch.cat(heads, dim=-1) @ mha.out_proj.weight.T + mha.out_proj.bias  # (B, T, D)


@pytest.mark.parametrize("d_k, d_v", [(4, 12), (16, 2), (8, 8)])
def test_d_k_and_d_v_set_apart_from_d_model_over_h(d_k, d_v):
    """Table 3 row (B): d_k (and d_v) need not be d_model / h; every path agrees with the per-head formula."""
    torch.manual_seed(0)
    mha = MultiHeadAttention(24, 4, d_k=d_k, d_v=d_v).eval()  # 24 / 4 = 6: neither width is the default
    assert (mha.q_proj.out_features, mha.v_proj.out_features, mha.out_proj.in_features) == (4 * d_k, 4 * d_v, 4 * d_v)
    x, memory = torch.randn(2, 5, 24), torch.randn(2, 7, 24)
    keep = (torch.arange(7)[None, :] < torch.tensor([7, 4])[:, None])[:, None, :]  # (B, 1, S)
    expected = _per_head_reference(mha, x, memory, memory, keep)
    for need_weights in (True, False):
        context, _ = mha(x, memory, memory, keep, need_weights=need_weights)  # the fused K/V path
        torch.testing.assert_close(context, expected, atol=ATOL, rtol=0)
        context, _ = mha(x, memory, memory.clone(), keep, need_weights=need_weights)  # separate projections
        torch.testing.assert_close(context, expected, atol=ATOL, rtol=0)
    self_keep = torch.ones(2, 1, 5, dtype=torch.bool)
    torch.testing.assert_close(mha(x, x, x)[0], _per_head_reference(mha, x, x, x, self_keep), atol=ATOL, rtol=0)  # fused Q/K/V


@pytest.mark.parametrize("d_k, d_v", [(4, 4), (4, 12)])
def test_attend_incremental_equals_append_then_attend(d_k, d_v):
    # One Q/K/V matmul per step gives what project_kv + append + attend give, cache included.
    mha = MultiHeadAttention(16, 4, d_k=d_k, d_v=d_v).eval()
    x = torch.randn(3, 5, 16)
    cache = ref_cache = KVCache(torch.zeros(3, 4, 0, d_k), torch.zeros(3, 4, 0, d_v))  # empty: S = 0
    for t in range(5):
        x_t = x[:, t : t + 1]  # (B, 1, D)
        context, weights, cache = mha.attend_incremental(x_t, cache, causal_mask(1, t + 1))
        ref_cache = ref_cache.append(mha.project_kv(x_t, x_t))
        ref_context, ref_weights = mha.attend(x_t, ref_cache, causal_mask(1, t + 1))
        torch.testing.assert_close(context, ref_context, atol=1e-6, rtol=0)
        torch.testing.assert_close(weights, ref_weights, atol=1e-6, rtol=0)
        torch.testing.assert_close(cache.k, ref_cache.k, atol=1e-6, rtol=0)
        torch.testing.assert_close(cache.v, ref_cache.v, atol=1e-6, rtol=0)
    _, none, _ = mha.attend_incremental(x[:, :1], KVCache(cache.k[:, :, :0], cache.v[:, :, :0]), need_weights=False)
    assert none is None
