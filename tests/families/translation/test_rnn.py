"""RNN encoder-decoders: every decoder variant decodes step by step exactly as in its teacher-forced
pass, ignores source padding, gives beam 1 == greedy, and plugs into the shared trainer."""

from __future__ import annotations

import pytest
import torch

from attnkit.data.vocab import BOS, EOS, PAD
from attnkit.decode.beam import beam_search
from attnkit.decode.greedy import greedy
from attnkit.families.translation.forcing import teacher_forcing_ratio
from attnkit.families.translation.rnn import RNNSeq2Seq

VARIANTS = {
    "none": dict(attention="none"),
    "context": dict(attention="context"),
    "bahdanau": dict(attention="bahdanau"),
    "luong-dot": dict(attention="luong", score="dot"),
    "luong-general": dict(attention="luong", score="general"),
    "luong-concat": dict(attention="luong", score="concat"),
    "luong-no-feed": dict(attention="luong", score="general", input_feed=False),
    "bahdanau-gru-2layers": dict(attention="bahdanau", cell="gru", layers=2, bidirectional=False),
}


def tiny(**kw) -> RNNSeq2Seq:
    torch.manual_seed(0)
    return RNNSeq2Seq(src_vocab_size=13, tgt_vocab_size=13, embed_dim=8, hidden=12, dropout=0.0, **kw).eval()


def batch(seed: int = 1) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, 13, (3, 6), generator=g)
    src[1, 4:] = PAD  # a shorter sentence
    tgt_in = torch.cat([torch.full((3, 1), BOS), torch.randint(4, 13, (3, 4), generator=g)], dim=1)
    return src, src != PAD, tgt_in


@pytest.mark.parametrize("variant", VARIANTS)
def test_steps_equal_the_teacher_forced_pass(variant: str) -> None:
    model = tiny(**VARIANTS[variant])
    src, keep, tgt_in = batch()
    with torch.no_grad():
        full = model(src, keep, tgt_in).log_softmax(-1)  # (B, T, V)
        state = model.init_state(model.encode(src, keep), keep)
        for t in range(tgt_in.size(1)):
            logits, state, attn = model.step(tgt_in[:, t : t + 1], state)
            torch.testing.assert_close(logits.log_softmax(-1), full[:, t], atol=1e-5, rtol=1e-5)
            if VARIANTS[variant]["attention"] in ("bahdanau", "luong"):
                assert attn.shape == (3, 6) and torch.allclose(attn.sum(-1), torch.ones(3))
                assert attn[1, 4:].abs().max() == 0  # padding gets no attention
            else:
                assert attn is None


@pytest.mark.parametrize("variant", VARIANTS)
def test_source_padding_changes_nothing(variant: str) -> None:
    model = tiny(**VARIANTS[variant])
    src, keep, tgt_in = batch()
    padded = torch.cat([src, torch.full((3, 5), PAD)], dim=1)
    with torch.no_grad():
        torch.testing.assert_close(model(padded, padded != PAD, tgt_in), model(src, keep, tgt_in), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("variant", VARIANTS)
def test_beam_one_equals_greedy(variant: str) -> None:
    model = tiny(**VARIANTS[variant])
    src, keep, _ = batch(seed=3)
    g = greedy(model, src, keep, max_len_b=6, bos=BOS, eos=EOS)
    b = beam_search(model, src, keep, beam=1, alpha=0.0, max_len_b=6, bos=BOS, eos=EOS)
    assert [h.tokens for h in g] == [nbest[0].tokens for nbest in b]
    assert [h.log_prob for h in g] == pytest.approx([nbest[0].log_prob for nbest in b], abs=1e-5)


def test_attention_maps_in_the_common_format() -> None:
    src, keep, tgt_in = batch()
    maps = tiny(attention="bahdanau").attentions(src, keep, tgt_in)
    assert (maps.encoder, maps.decoder_self) == ([], []) and maps.cross[0].shape == (3, 1, 5, 6)
    assert tiny(attention="none").attentions(src, keep, tgt_in).cross == []


def test_teacher_forcing_zero_feeds_own_predictions() -> None:
    # With ratio 0 every input after BOS is the model's own argmax, so the gold tokens after BOS
    # cannot change the output; with ratio 1 they do.
    model = tiny(attention="bahdanau")
    src, keep, tgt_in = batch()
    other = tgt_in.clone()
    other[:, 1:] = 4
    with torch.no_grad():
        own_a, own_b = (model.features(src, keep, t, teacher_forcing=0.0) for t in (tgt_in, other))
        gold_a, gold_b = (model.features(src, keep, t) for t in (tgt_in, other))
    torch.testing.assert_close(own_a, own_b)
    assert not torch.allclose(gold_a, gold_b)
    torch.testing.assert_close(gold_a[:, 0], own_a[:, 0])  # the first step sees BOS either way


def test_scheduled_sampling_decays() -> None:
    assert teacher_forcing_ratio(10, ratio=0.7, decay="constant") == 0.7
    assert teacher_forcing_ratio(100, ratio=1.0, decay="linear", slope=0.001, min_ratio=0.5) == pytest.approx(0.9)
    assert teacher_forcing_ratio(10_000, ratio=1.0, decay="linear", slope=0.001, min_ratio=0.5) == 0.5
    assert teacher_forcing_ratio(2, ratio=1.0, decay="exponential", k=0.9) == pytest.approx(0.81)
    k = 100.0
    assert teacher_forcing_ratio(300, ratio=1.0, decay="inverse_sigmoid", k=k) == pytest.approx(k / (k + 2.718281828459045**3))


def test_bad_sizes_are_refused() -> None:
    with pytest.raises(ValueError, match="tie_output needs hidden == embed_dim"):
        RNNSeq2Seq(src_vocab_size=5, tgt_vocab_size=5, embed_dim=8, hidden=12, tie_output=True)
    with pytest.raises(ValueError, match="even hidden size"):
        RNNSeq2Seq(src_vocab_size=5, tgt_vocab_size=5, hidden=11)


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_written_out_cell_equals_torch_rnn(cell: str) -> None:
    """`_cell` (the decoder's step on the module's weights) against `nn.LSTM`/`nn.GRU` itself."""
    model = tiny(attention="context", cell=cell, layers=2, bidirectional=False)
    g = torch.Generator().manual_seed(3)
    B, E, H = 3, 8, 12
    x = torch.randn(B, E + H, generator=g)  # the first layer's input: an embedding and a context
    h0, c0 = torch.randn(B, 2, H, generator=g), torch.randn(B, 2, H, generator=g)
    with torch.no_grad():
        gates_in = model._input_projection(x[:, :E])
        hidden, c = model._cell(gates_in, x[:, E:], h0, c0 if cell == "lstm" else None, model._cell_weights(x))
        state = (h0.transpose(0, 1).contiguous(), c0.transpose(0, 1).contiguous()) if cell == "lstm" else h0.transpose(0, 1).contiguous()
        _, final = model.rnn(x[:, None], state)
    torch.testing.assert_close(hidden, (final[0] if cell == "lstm" else final).transpose(0, 1))
    if cell == "lstm":
        torch.testing.assert_close(c, final[1].transpose(0, 1))


def test_step_loop_equals_one_rnn_call() -> None:
    """Without input feeding, Luong's teacher-forced pass runs `nn.LSTM` over all steps at once; the
    step-by-step loop (taken when feeding) gives the same features on the same weights."""
    model = tiny(attention="luong", score="general", input_feed=False)
    src, keep, tgt_in = batch()
    with torch.no_grad():
        parallel = model.features(src, keep, tgt_in)
        looped = model.features(src, keep, tgt_in, teacher_forcing=1.0 - 1e-12)  # the loop, every token gold
    torch.testing.assert_close(looped, parallel)
