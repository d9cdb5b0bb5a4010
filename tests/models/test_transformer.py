"""The Transformer: equations of sec. 3, cached decoding, padding invariance, weight tying."""

import dataclasses
import math

import pytest
import torch
import torch.nn.functional as F

from attnkit.attention.positional import sinusoidal_encoding
from attnkit.decode.beam_state import expand_to_beams, gather_beams
from attnkit.models.transformer import FeedForward, Transformer
from attnkit.precision import quantize_int8

V = 23


def make(pre_norm=False, share=True, **kw):
    torch.manual_seed(0)
    args = dict(
        src_vocab_size=V,
        tgt_vocab_size=V,
        d_model=32,
        n_heads=4,
        d_ff=64,
        encoder_layers=2,
        decoder_layers=2,
        dropout=0.0,
        pre_norm=pre_norm,
        share_embeddings=share,
        tie_output=share,
    )
    args.update(kw)
    return Transformer(**args).eval()


def batch(B=3, S=7, T=6, seed=1):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, V, (B, S), generator=g)
    lengths = torch.tensor([S, S - 2, 3][:B])
    src_keep = torch.arange(S)[None, :] < lengths[:, None]  # (B, S)
    src = src.masked_fill(~src_keep, 0)
    tgt_in = torch.cat([torch.full((B, 1), 2), torch.randint(4, V, (B, T - 1), generator=g)], dim=1)
    return src, src_keep, tgt_in


def test_ffn_is_equation_2():
    # FFN(x) = max(0, x W1 + b1) W2 + b2 (Vaswani et al. eq. 2), computed by hand from the weights.
    torch.manual_seed(0)
    ffn = FeedForward(8, 16)
    x = torch.randn(2, 3, 8)
    expected = torch.clamp(x @ ffn.w_1.weight.T + ffn.w_1.bias, min=0) @ ffn.w_2.weight.T + ffn.w_2.bias
    torch.testing.assert_close(ffn(x), expected)


def test_embedding_is_scaled_and_positioned():
    model = make()
    tokens = torch.tensor([[5, 6, 7]])
    expected = model.src_embed.weight[tokens] * math.sqrt(32) + sinusoidal_encoding(3, 32)[None]
    torch.testing.assert_close(model.embed(tokens, model.src_embed), expected)


@pytest.mark.parametrize("pre_norm", [False, True])
def test_encoder_layer_residual_structure(pre_norm):
    # Post-norm: LayerNorm(x + Sublayer(x)); pre-norm: x + Sublayer(LayerNorm(x)) (sec. 3.1).
    model = make(pre_norm=pre_norm)
    layer = model.encoder_layers[0]
    x = torch.randn(2, 5, 32)
    keep = torch.ones(2, 1, 1, 5, dtype=torch.bool)
    norm1, norm2 = layer.res_attn.norm, layer.res_ffn.norm
    if pre_norm:
        h = norm1(x)
        y = x + layer.self_attn(h, h, h, keep, need_weights=False)[0]
        expected = y + layer.ffn(norm2(y))
    else:
        y = norm1(x + layer.self_attn(x, x, x, keep, need_weights=False)[0])
        expected = norm2(y + layer.ffn(y))
    torch.testing.assert_close(layer(x, keep)[0], expected)


@pytest.mark.parametrize("pre_norm, widths", [(False, {}), (True, {}), (False, {"d_k": 4, "d_v": 12})])
def test_cached_decoding_equals_full_forward(pre_norm, widths):
    model = make(pre_norm=pre_norm, **widths)
    src, src_keep, tgt_in = batch()
    full = F.log_softmax(model(src, src_keep, tgt_in), dim=-1)  # (B, T, V)
    state = model.init_state(model.encode(src, src_keep), src_keep)
    for t in range(tgt_in.size(1)):
        logits, state, attn = model.step(tgt_in[:, t : t + 1], state)
        torch.testing.assert_close(F.log_softmax(logits, dim=-1), full[:, t], atol=1e-5, rtol=1e-5)
        assert attn.shape == (3, 7)
        torch.testing.assert_close(attn.sum(-1), torch.ones(3))
        assert (attn[~src_keep] == 0).all()
    assert state.position == tgt_in.size(1) and state.self_kv[0].k.shape[2] == tgt_in.size(1)


@torch.no_grad()
def test_reordered_steps_copy_the_caches_once_and_equal_eager_reordering():
    """gather_beams picks only `rows`; the next step copies those cache rows as it appends to them."""
    model = make()
    src, src_keep, tgt_in = batch()
    start = model.init_state(model.encode(src, src_keep), src_keep)
    lazy = expand_to_beams(start, 2)  # rows (6,), the caches' 3 rows as stored
    eager = expand_to_beams(dataclasses.replace(start, rows=None), 2)  # every reorder copies the caches at once
    for t, index in enumerate([torch.tensor([1, 0, 2, 2, 5, 4]), torch.tensor([0, 0, 4, 5])]):
        prev = tgt_in[:, t : t + 1].repeat_interleave(2, dim=0)[: lazy.rows.size(0)]  # (R, 1)
        (a, lazy, _), (b, eager, _) = model.step(prev, lazy), model.step(prev, eager)
        torch.testing.assert_close(a, b, atol=0, rtol=0)
        lazy, eager = gather_beams(lazy, index, 2), gather_beams(eager, index, 2)
        assert lazy.self_kv[0].k.size(0) == 6 and eager.self_kv[0].k.size(0) == index.size(0)  # not copied yet
    prev = tgt_in[:2, 2:3].repeat_interleave(2, dim=0)  # (4, 1): the same tokens for both
    a, b = model.step(prev, lazy)[0], model.step(prev, eager)[0]
    torch.testing.assert_close(a, b, atol=0, rtol=0)


def test_padding_does_not_change_a_sentence():
    model = make()
    src, src_keep, tgt_in = batch()
    n = int(src_keep[2].sum())
    alone = model(src[2:3, :n], src_keep[2:3, :n], tgt_in[2:3])
    padded = model(src, src_keep, tgt_in)[2:3]
    torch.testing.assert_close(alone, padded, atol=1e-5, rtol=1e-5)


def test_tied_and_untied_weights():
    tied = make(share=True)
    assert tied.tgt_embed is tied.src_embed and tied.output is None
    x = torch.randn(2, 32)
    torch.testing.assert_close(tied.logits(x), x @ tied.src_embed.weight.T)
    untied = make(share=False)
    assert untied.tgt_embed is not untied.src_embed and untied.output is not None
    n_tied = sum(p.numel() for p in tied.parameters())
    n_untied = sum(p.numel() for p in untied.parameters())
    assert n_untied - n_tied == 2 * V * 32  # one more embedding and one output matrix
    with pytest.raises(ValueError, match="joint vocabulary"):
        make(share=True, tgt_vocab_size=V + 1)


def test_untie_output_keeps_the_logits_and_int8_reaches_every_linear():
    model = make(share=True)
    src, src_keep, tgt_in = batch()
    before = model(src, src_keep, tgt_in)  # (B, T, V)
    model.untie_output()
    assert isinstance(model.output, torch.nn.Linear) and model.output.weight is not model.tgt_embed.weight
    torch.testing.assert_close(model(src, src_keep, tgt_in), before, rtol=0, atol=0)
    quantized = quantize_int8(make(share=True))
    assert not any(isinstance(m, torch.nn.Linear) for m in quantized.modules())  # fused Q/K/V paths fall back to one call each
    with torch.inference_mode():
        close = quantized(src, src_keep, tgt_in).argmax(-1) == before.argmax(-1)  # (B, T)
    assert close.float().mean() > 0.8


def test_attention_maps_are_distributions():
    model = make()
    src, src_keep, tgt_in = batch()
    maps = model.attentions(src, src_keep, tgt_in)
    assert len(maps.encoder) == len(maps.cross) == len(maps.decoder_self) == 2
    assert maps.encoder[0].shape == (3, 4, 7, 7) and maps.cross[1].shape == (3, 4, 6, 7)
    causal = maps.decoder_self[0]
    assert causal.shape == (3, 4, 6, 6) and (causal.triu(1) == 0).all()
    for w in maps.encoder + maps.cross + maps.decoder_self:
        torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1]))
    assert (maps.cross[0].transpose(1, 3)[~src_keep] == 0).all()


def test_learned_positions_and_dropout_train_mode():
    model = make(learned_positions=True, dropout=0.3)
    src, src_keep, tgt_in = batch()
    model.train()
    a, b = model(src, src_keep, tgt_in), model(src, src_keep, tgt_in)
    assert not torch.allclose(a, b)  # dropout active in training
    model.eval()
    torch.testing.assert_close(model(src, src_keep, tgt_in), model(src, src_keep, tgt_in))


def test_head_mask_of_ones_leaves_logits_unchanged_and_a_zero_changes_them():
    # Michel et al.'s gates: all ones is the unmasked model; one head set to 0 changes the output.
    from attnkit.models.transformer import HeadMask

    model = make()
    src, src_keep, tgt_in = batch()
    ones = torch.ones(2, 4)  # (L, H)
    ref = model(src, src_keep, tgt_in)
    assert torch.equal(model(src, src_keep, tgt_in, HeadMask(ones, ones, ones)), ref)
    for kind in ("encoder", "decoder_self", "cross"):
        gates = ones.clone()
        gates[1, 2] = 0.0
        assert not torch.allclose(model(src, src_keep, tgt_in, HeadMask(**{kind: gates})), ref, atol=1e-4), kind


def test_head_mask_zero_equals_zeroing_that_heads_value_rows():
    # Gating head h's output by 0 is the same as zeroing its slice of W^O's input: check through the attention module.
    from attnkit.attention.multihead import MultiHeadAttention

    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4).eval()
    x = torch.randn(2, 5, 16)
    gates = torch.tensor([1.0, 0.0, 1.0, 1.0])
    got, _ = mha(x, x, x, head_mask=gates)
    with torch.no_grad():
        mha.out_proj.weight[:, 4:8] = 0.0  # the columns that head 1's context feeds
    expected, _ = mha(x, x, x)
    assert torch.allclose(got, expected, atol=1e-6)


def test_head_mask_in_cached_decoding_matches_the_teacher_forced_pass():
    from attnkit.models.transformer import HeadMask

    model = make()
    src, src_keep, tgt_in = batch(B=2)
    g = torch.Generator().manual_seed(3)
    mask = HeadMask(torch.rand(2, 4, generator=g), torch.rand(2, 4, generator=g), torch.rand(2, 4, generator=g))
    full = model(src, src_keep, tgt_in, mask)  # (B, T, V)
    state = model.init_state(model.encode(src, src_keep, head_mask=mask), src_keep)
    for t in range(tgt_in.size(1)):
        logits, state, _ = model.step(tgt_in[:, t : t + 1], state, head_mask=mask)
        assert torch.allclose(logits, full[:, t], atol=1e-5)
