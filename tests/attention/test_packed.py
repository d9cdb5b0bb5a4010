"""Weights packed for oneDNN: the same numbers as F.linear, packed once, repacked when they change."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from attnkit.attention import packed
from attnkit.attention.packed import PackedCache, PackedLinear, pack_linears
from attnkit.decode.beam import beam_search
from attnkit.decode.greedy import greedy
from attnkit.models.transformer import Transformer
from attnkit.precision import quantize_int8

BF16 = pytest.mark.skipif(not torch.ops.mkldnn._is_mkldnn_bf16_supported(), reason="oneDNN has no bf16 kernels on this CPU")


def weights(d_out: int = 48, d_in: int = 32) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(d_out, d_in) / d_in**0.5, torch.randn(d_out)


@pytest.mark.parametrize("shape", [(5, 32), (3, 1, 32), (2, 7, 32), (64, 32)])
@pytest.mark.parametrize("bias", [True, False])
def test_packed_linear_equals_f_linear(shape, bias):
    w, b = weights()
    b = b if bias else None
    x = torch.randn(*shape)
    cache = PackedCache()
    with torch.inference_mode():
        y = packed.linear(x, w, b, cache, "w")
        relu = packed.linear(x, w, b, cache, "w", relu=True)
    assert "w" in cache  # it did take the packed path
    torch.testing.assert_close(y, F.linear(x, w, b), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(relu, F.relu(F.linear(x, w, b)), atol=1e-5, rtol=1e-5)
    assert (relu >= 0).all() and (relu == 0).any()


def test_non_contiguous_and_empty_inputs():
    w, b = weights()
    x = torch.randn(6, 4, 32)
    cache = PackedCache()
    with torch.no_grad():
        torch.testing.assert_close(packed.linear(x[:, 1], w, b, cache, "w"), F.linear(x[:, 1], w, b), atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(packed.linear(x.transpose(0, 1), w, b, cache, "w"), F.linear(x.transpose(0, 1), w, b), atol=1e-5, rtol=1e-5)
        assert packed.linear(x[:0], w, b, cache, "w").shape == (0, 4, 48)


@BF16
def test_bf16_packed_linear_equals_f_linear():
    w, b = (t.bfloat16() for t in weights())
    x = torch.randn(9, 32).bfloat16()
    cache = PackedCache()
    with torch.inference_mode():
        y = packed.linear(x, w, b, cache, "w")
    assert "w" in cache and y.dtype == torch.bfloat16
    torch.testing.assert_close(y, F.linear(x, w, b))


def test_packed_once_and_again_when_the_weight_changes_in_place():
    w, b = weights()
    x = torch.randn(4, 32)
    cache = PackedCache()
    with torch.no_grad():
        packed.linear(x, w, b, cache, "w")
        first = cache["w"].value
        packed.linear(x, w, b, cache, "w")
        assert cache["w"].value is first  # kept, not packed again
        w.mul_(2.0)  # version bump: an optimiser step, load_state_dict
        y = packed.linear(x, w, b, cache, "w")
    assert cache["w"].value is not first
    torch.testing.assert_close(y, F.linear(x, w, b), atol=1e-5, rtol=1e-5)


def test_a_replaced_weight_is_packed_again_and_sources_are_held():
    lin = pack_linears(nn.Sequential(nn.Linear(32, 48)))[0]
    x = torch.randn(4, 32)
    with torch.no_grad():
        lin(x)
        assert lin.packed_cache["weight"].sources[0] is lin.weight  # held: its address cannot be reused
        lin.weight = nn.Parameter(torch.randn(48, 32))
        torch.testing.assert_close(lin(x), F.linear(x, lin.weight, lin.bias), atol=1e-5, rtol=1e-5)


def test_kept_stamps_inference_tensors_without_a_version():
    with torch.inference_mode():
        w = torch.randn(3, 3)
    cache: dict = {}
    assert packed.kept(cache, "sum", (w, None), lambda: w.sum()) is packed.kept(cache, "sum", (w,), lambda: w.sum() + 1)
    assert cache["sum"].stamp == ((w.data_ptr(), -1),)


def test_grad_path_is_f_linear_and_packs_nothing():
    lin = pack_linears(nn.Sequential(nn.Linear(32, 48)))[0]
    x = torch.randn(4, 32, requires_grad=True)
    y = lin(x)
    torch.testing.assert_close(y, F.linear(x, lin.weight, lin.bias), atol=0, rtol=0)
    y.sum().backward()
    assert lin.weight.grad is not None and x.grad is not None
    assert not lin.packed_cache
    with torch.autocast("cpu", dtype=torch.bfloat16), torch.no_grad():  # autocast: F.linear's cast, not packed fp32
        assert lin(x).dtype == torch.bfloat16
    assert not lin.packed_cache


def make_transformer(activation: str = "relu", tie: bool = True) -> Transformer:
    torch.manual_seed(0)
    model = Transformer(src_vocab_size=200, tgt_vocab_size=200, d_model=32, n_heads=4, d_ff=64, encoder_layers=2, decoder_layers=2,
                        dropout=0.0, activation=activation, share_embeddings=tie, tie_output=tie, output_bias=True)  # fmt: skip
    with torch.no_grad():  # peaked distributions, and EOS likely enough that some hypotheses end early
        model.output_weight.mul_(2.0)
        model.final_logits_bias[3] = 2.5
    return model.eval()


def test_pack_linears_keeps_parameters_and_state_dict():
    model = make_transformer()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    pack_linears(model)
    after = model.state_dict()
    assert list(after) == list(before)
    assert all(torch.equal(after[k], before[k]) for k in before)
    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    assert linears and all(type(m) is PackedLinear for m in linears)
    assert isinstance(model.packed_cache, PackedCache)  # the tied output projection's
    assert all(isinstance(layer.self_attn.packed_cache, PackedCache) for layer in model.decoder_layers)


def test_pack_linears_leaves_quantised_linears():
    model = pack_linears(quantize_int8(make_transformer()))
    assert not any(isinstance(m, PackedLinear) for m in model.modules())
    src, keep = sources()
    with torch.inference_mode():
        greedy(model, src, keep, bos=2, eos=3, max_len_b=12)  # runs: the int8 modules are called as before


def sources() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(3)
    src = torch.randint(4, 200, (6, 9), generator=g)
    keep = torch.arange(9)[None, :] < torch.tensor([9, 4, 7, 2, 9, 5])[:, None]  # (B, S)
    return src.masked_fill(~keep, 0), keep


def decode_all(model: nn.Module, device: str = "cpu") -> list:
    src, keep = (t.to(device) for t in sources())
    found = [(h.tokens, h.log_prob) for h in greedy(model, src, keep, bos=2, eos=3, max_len_b=12)]
    for nbest in beam_search(model, src, keep, beam=5, nbest=3, alpha=0.6, bos=2, eos=3, max_len_b=12):
        found += [(h.tokens, h.score) for h in nbest]
    return found


def assert_same_outputs(a: list, b: list, tol: float) -> None:
    assert [tokens for tokens, _ in a] == [tokens for tokens, _ in b]
    assert [score for _, score in a] == pytest.approx([score for _, score in b], abs=tol)


@pytest.mark.parametrize(("activation", "tie"), [("relu", True), ("gelu", False)])
def test_packed_transformer_decodes_the_same(activation, tie):
    model = make_transformer(activation, tie)
    plain = decode_all(model)
    packed_model = pack_linears(copy.deepcopy(model))
    assert_same_outputs(decode_all(packed_model), plain, 1e-5)
    assert any(isinstance(m, PackedLinear) and m.packed_cache for m in packed_model.modules())  # it did pack
    layer = packed_model.decoder_layers[0]
    assert "qkv.packed" in layer.self_attn.packed_cache and "kv.packed" in layer.cross_attn.packed_cache  # stacked, packed
    if tie:
        assert "output" in packed_model.packed_cache
    copied = copy.deepcopy(packed_model)  # oneDNN's tensors have no storage: copies start empty
    assert not copied.packed_cache
    assert_same_outputs(decode_all(copied), plain, 1e-5)


@BF16
def test_packed_bf16_transformer_decodes_the_same():
    model = make_transformer().bfloat16()
    plain = decode_all(model)
    assert_same_outputs(decode_all(pack_linears(copy.deepcopy(model))), plain, 1e-2)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_packing_is_a_no_op_on_cuda():
    model = make_transformer().cuda()
    packed_model = pack_linears(copy.deepcopy(model))
    assert_same_outputs(decode_all(packed_model, "cuda"), decode_all(model, "cuda"), 0.0)
    assert not any(m.packed_cache for m in packed_model.modules() if hasattr(m, "packed_cache"))


def lstm_cells() -> tuple[nn.LSTMCell, nn.LSTMCell]:
    torch.manual_seed(0)
    cell = nn.LSTMCell(24, 40)
    return cell.eval(), pack_linears(nn.Sequential(copy.deepcopy(cell)))[0]


@pytest.mark.parametrize("batch", [1, 3, 64])
def test_packed_lstm_cell_equals_nn_lstm_cell(batch):
    plain, cell = lstm_cells()
    assert type(cell) is packed.PackedLSTMCell
    x, h, c = torch.randn(batch, 24), torch.randn(batch, 40), torch.randn(batch, 40)
    with torch.no_grad():
        expected = plain(x, (h, c))
        for _ in range(2):  # packed on the first call, kept for the second
            got = cell(x, (h, c))
            for a, b in zip(got, expected):
                torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)
    assert set(cell.packed_cache) == {"stacked", "stacked.packed"}


@BF16
def test_bf16_packed_lstm_cell_equals_nn_lstm_cell():
    plain, cell = lstm_cells()
    plain, cell = plain.to(torch.bfloat16), cell.to(torch.bfloat16)
    x, h, c = (torch.randn(8, n, dtype=torch.bfloat16) for n in (24, 40, 40))
    with torch.no_grad():
        for a, b in zip(cell(x, (h, c)), plain(x, (h, c))):
            torch.testing.assert_close(a.float(), b.float(), atol=2e-2, rtol=2e-2)
    assert cell.packed_cache


def test_packed_lstm_cell_trains_as_nn_lstm_cell_and_packs_nothing():
    plain, cell = lstm_cells()
    x = torch.randn(4, 24)
    for a, b in zip(cell(x), plain(x)):  # no state given, and autograd on: nn.LSTMCell's own path
        torch.testing.assert_close(a, b, atol=0, rtol=0)
    cell(x, (torch.zeros(4, 40), torch.zeros(4, 40)))[0].sum().backward()
    assert cell.weight_ih.grad is not None and not cell.packed_cache
