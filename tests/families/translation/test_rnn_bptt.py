"""`models.rnn_bptt`: the decoder loop with its hand-written backward gives the outputs and every
parameter's gradient of `RNNSeq2Seq._step` run under autograd (the path decoding uses)."""

from __future__ import annotations

import pytest
import torch

from attnkit.families.translation.rnn import RNNSeq2Seq

DECODERS = {"luong-general": {"attention": "luong", "score": "general"}, "luong-dot": {"attention": "luong", "score": "dot"},
            "bahdanau": {"attention": "bahdanau", "attn_dim": 6}}  # fmt: skip


def _model(decoder: str, dtype: torch.dtype = torch.float32) -> RNNSeq2Seq:
    torch.manual_seed(0)
    return RNNSeq2Seq(src_vocab_size=23, tgt_vocab_size=23, embed_dim=8, hidden=8, dropout=0.0, **DECODERS[decoder]).to(dtype)


def _batch() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    src, tgt = torch.randint(1, 23, (3, 6), generator=g), torch.randint(1, 23, (3, 5), generator=g)
    keep = torch.ones(3, 6, dtype=torch.bool)
    keep[0, 4:] = keep[2, 2:] = False  # padded sources
    return src.masked_fill(~keep, 0), keep, tgt


def _forward_backward(model: RNNSeq2Seq, fused: bool, monkeypatch: pytest.MonkeyPatch, autocast: bool = False) -> tuple[torch.Tensor, torch.Tensor, dict]:
    """Features, attention weights and parameter gradients of a teacher-forced pass, through the loop or `_step`."""
    src, keep, tgt = _batch()
    with monkeypatch.context() as patch:
        if not fused:
            patch.setattr(RNNSeq2Seq, "fused", property(lambda self: False))
        model.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            features, weights = model._teacher_forced(src, keep, tgt, 1.0)
        grad_out = torch.randn(features.shape, generator=torch.Generator().manual_seed(2), dtype=features.dtype)
        (features * grad_out).sum().backward()
    return features, weights, {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("decoder", DECODERS)
def test_loop_equals_autograd_through_steps_float64(decoder: str, monkeypatch: pytest.MonkeyPatch) -> None:
    model = _model(decoder, torch.float64)
    assert model.fused
    features, weights, grads = _forward_backward(model, True, monkeypatch)
    ref_features, ref_weights, ref_grads = _forward_backward(model, False, monkeypatch)
    torch.testing.assert_close(features, ref_features, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(weights.double(), ref_weights.double(), rtol=1e-6, atol=1e-7)  # softmax in float32 in `_step`
    assert grads.keys() == ref_grads.keys() and len(grads) >= 8
    for name, grad in grads.items():
        torch.testing.assert_close(grad, ref_grads[name], rtol=1e-6, atol=1e-7, msg=f"gradient of {name}")
    assert weights[0, :, 4:].abs().max() == 0 and weights[2, :, 2:].abs().max() == 0  # padding gets no attention


@pytest.mark.parametrize("decoder", DECODERS)
def test_loop_under_bf16_autocast_is_as_close_to_float32_as_autograd(decoder: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # bf16 rounds both paths alike (the shared encoder too): the loop may be no further from float32 than autograd is.
    model = _model(decoder)
    exact, _, exact_grads = _forward_backward(model, True, monkeypatch)  # float32
    errors = {}
    for fused in (True, False):
        features, _, grads = _forward_backward(model, fused, monkeypatch, autocast=True)
        assert (features.float() - exact).abs().max() < 0.02
        errors[fused] = {name: ((grad - exact_grads[name]).norm() / exact_grads[name].norm()).item() for name, grad in grads.items()}
    for name, error in errors[True].items():
        assert error <= 1.25 * errors[False][name] + 0.02, f"{name}: bf16 gradient {error:.3f} from float32, autograd's {errors[False][name]:.3f}"


@pytest.mark.parametrize(("change", "fused"), [({}, True), ({"cell": "gru"}, False), ({"layers": 2}, False), ({"score": "concat"}, False),
                                               ({"input_feed": False}, False), ({"attention": "context"}, False)])  # fmt: skip
def test_which_decoders_train_through_the_loop(change: dict, fused: bool) -> None:
    model = RNNSeq2Seq(src_vocab_size=23, tgt_vocab_size=23, embed_dim=8, hidden=8, **{"attention": "luong", **change})
    assert model.fused is fused
