"""The Show-Attend-Tell decoder: gradcheck of its attention step, the decoding protocol (beam 1 =
greedy, batch invariance), the doubly stochastic penalty, and the cached features."""

from __future__ import annotations

import dataclasses
import logging

import numpy as np
import pytest
import torch
from PIL import Image

from attnkit.data.vocab import BOS, EOS
from attnkit.decode.beam import beam_search
from attnkit.decode.beam_state import check_batch_first, expand_to_beams
from attnkit.decode.greedy import greedy
from attnkit.families.captioning import lite0
from attnkit.families.captioning.encoders import SmallCNN, cached_features, grid_features
from attnkit.families.captioning.images import ImageSource
from attnkit.families.captioning.model import ShowAttendTell, doubly_stochastic


def tiny(**kwargs) -> ShowAttendTell:
    torch.manual_seed(0)
    options = dict(vocab_size=12, encoder=SmallCNN(2, 4), encoder_channels=16, grid=4, feature_dim=8, embed_dim=6, hidden_dim=10,
                   attn_dim=5, dropout=0.0)  # fmt: skip
    return ShowAttendTell(**{**options, **kwargs}).eval()


def test_attention_step_gradcheck_float64():
    model = tiny(self_attention=1).double()
    model.blocks[0].gamma.data.fill_(0.5)
    cells = torch.randn(2, 16, 16, dtype=torch.float64, requires_grad=True)  # (B, P, C)
    h = torch.randn(2, 10, dtype=torch.float64, requires_grad=True)  # (B, H)

    def step(cells, h):
        state = model.init_state(model.encode(cells, None))
        state.h = h
        z, alpha = model.context(state)  # z_t = beta_t sum_i alpha_ti a_i
        return z, alpha

    assert torch.autograd.gradcheck(step, (cells, h), eps=1e-6, atol=1e-5)
    z, alpha = step(cells, h)
    assert torch.allclose(alpha.sum(-1), torch.ones(2, dtype=torch.float64))


def test_state_is_batch_first_and_step_shapes():
    model = tiny()
    state = model.init_state(model.encode(torch.randn(3, 16, 16), None))
    check_batch_first(state, 3)
    logits, state, alpha = model.step(torch.full((3, 1), BOS), state)
    assert logits.shape == (3, 12) and alpha.shape == (3, 16)


@pytest.mark.parametrize("attention", ["soft", "mean"])
def test_beam_one_equals_greedy_and_batch_invariance(attention):
    model = tiny(attention=attention)
    cells = torch.randn(4, 16, 16)  # (B, P, C)
    keep = torch.ones(4, 16, dtype=torch.bool)
    limits = dict(max_len_a=0.0, max_len_b=9, bos=BOS, eos=EOS, return_attention=True)
    g = greedy(model, cells, keep, **limits)
    b = beam_search(model, cells, keep, beam=1, alpha=0.0, **limits)
    for gh, (bh,) in zip(g, b):
        assert gh.tokens == bh.tokens
        assert gh.log_prob == pytest.approx(bh.log_prob, abs=1e-5)
        assert torch.allclose(gh.attention, bh.attention, atol=1e-6)
    alone = greedy(model, cells[2:3], keep[2:3], **limits)[0]
    assert alone.tokens == g[2].tokens and alone.log_prob == pytest.approx(g[2].log_prob, abs=1e-5)
    beams = beam_search(model, cells, keep, beam=3, nbest=3, alpha=0.0, **limits)
    assert all(len(n) == 3 and n[0].score >= n[1].score >= n[2].score for n in beams)


@pytest.mark.parametrize("attention", ["soft", "mean"])
def test_beams_share_their_images_annotations(attention):
    """K beams of an image query its one row of annotations: the same step as K copies of the image."""
    model = tiny(attention=attention).eval()
    with torch.no_grad():
        shared = expand_to_beams(model.init_state(model.encode(torch.randn(2, 16, 16), None)), 3)
        assert shared.features.size(0) == 2 and shared.h.size(0) == 6  # annotations per image, h per beam
        shared = dataclasses.replace(shared, h=torch.randn_like(shared.h))  # the beams have moved apart
        copied = dataclasses.replace(shared, features=shared.features.repeat_interleave(3, 0),
                                     projected=None if shared.projected is None else shared.projected.repeat_interleave(3, 0))  # fmt: skip
        prev = torch.randint(4, 12, (6, 1))
        logits, _, alpha = model.step(prev, shared)  # (6, V), (6, P)
        logits_copied, _, alpha_copied = model.step(prev, copied)
    torch.testing.assert_close(logits, logits_copied, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(alpha, alpha_copied, atol=1e-6, rtol=1e-6)


def test_mean_context_is_uniform():
    model = tiny(attention="mean")
    state = model.init_state(model.encode(torch.randn(2, 16, 16), None))
    _, alpha = model.context(state)
    assert torch.allclose(alpha, torch.full((2, 16), 1 / 16))


def test_doubly_stochastic_penalty_by_hand():
    alpha = torch.tensor([[[0.5, 0.5], [1.0, 0.0], [0.3, 0.7]]])  # (N=1, T=3, P=2); the last step is padding
    keep = torch.tensor([[True, True, False]])
    # sum_t alpha = (1.5, 0.5): (1 - 1.5)^2 + (1 - 0.5)^2 = 0.5
    assert doubly_stochastic(alpha, keep).tolist() == pytest.approx([0.5])


def test_cached_features_equal_recomputed(tmp_path):
    folder = tmp_path / "images"
    folder.mkdir()
    rng = np.random.default_rng(0)
    for i in range(3):
        Image.fromarray(rng.integers(0, 255, (40, 50, 3), dtype=np.uint8)).save(folder / f"{i}.png")
    torch.manual_seed(0)
    encoder = lite0.EfficientNetLite0().eval()
    source = ImageSource(folder)
    names = ["2.png", "0.png", "1.png"]
    first = cached_features(tmp_path / "cache", source, names, 64, encoder)
    again = cached_features(tmp_path / "cache", source, names, 64, encoder)  # read back, not recomputed
    with torch.inference_mode():
        recomputed = grid_features(encoder, source.load(names, size=64))  # (3, 4, 1280)
    assert first.shape == (3, 4, 1280) and first.dtype == torch.float16
    assert torch.equal(first, again)
    assert torch.allclose(first.float(), recomputed, atol=2e-3, rtol=1e-3)  # in the order asked for
    (folder / "0.png").write_bytes((folder / "1.png").read_bytes())  # other bytes: another key
    changed = cached_features(tmp_path / "cache", ImageSource(folder), ["0.png", "1.png"], 64, encoder)
    assert torch.equal(changed[0], changed[1]) and len(list((tmp_path / "cache" / "prepared").iterdir())) == 2


def test_only_the_named_images_are_read_and_computed(tmp_path, caplog):
    folder = tmp_path / "images"
    folder.mkdir()
    Image.fromarray(np.zeros((32, 32, 3), dtype=np.uint8)).save(folder / "named.png")
    (folder / "other.png").write_bytes(b"not an image")  # another split's file: never opened
    encoder = lite0.EfficientNetLite0().eval()
    with caplog.at_level(logging.INFO, logger="attnkit"):
        features = cached_features(tmp_path / "cache", ImageSource(folder), ["named.png", "named.png"], 32, encoder)
    assert features.shape == (2, 1, 1280) and torch.equal(features[0], features[1])
    assert any("computing Lite0 features of 1 images" in r.getMessage() for r in caplog.records)  # each image once
    (folder / "other.png").write_bytes(b"changed")  # not one of the names: the same key, read back
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="attnkit"):
        cached_features(tmp_path / "cache", ImageSource(folder), ["named.png"], 32, encoder)
    assert not any("computing" in r.getMessage() for r in caplog.records)
    assert len(list((tmp_path / "cache" / "prepared").iterdir())) == 1


def test_lite0_without_weights_falls_back_to_the_small_cnn(monkeypatch, caplog):
    from attnkit.errors import CheckpointError
    from attnkit.families.captioning import encoders

    def missing():
        raise CheckpointError("not installed")

    monkeypatch.setattr(lite0, "find_weights", missing)
    with caplog.at_level("WARNING", logger="attnkit"):
        assert encoders.effective_encoder("lite0") == "small_cnn"
    assert "training the small CNN from scratch instead" in caplog.text
    assert encoders.effective_encoder("small_cnn") == "small_cnn"
