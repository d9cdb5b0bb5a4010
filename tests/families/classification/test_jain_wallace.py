"""families.classification.jain_wallace: Jain & Wallace's released code's three measures recomputed by hand on a
one-hop classifier whose H is the word embeddings (no LSTM), each removal mode, and the taus."""

from __future__ import annotations

import math

import pytest
import torch

from attnkit.data.vocab import PAD, UNK
from attnkit.errors import AttnkitError
from attnkit.families.classification.infer import model_inputs
from attnkit.families.classification.jain_wallace import TextScores, jw_code_scores, jw_code_taus, removed_inputs
from attnkit.sources import open_source

TEXT = "t1 t2 t3 t4"


@pytest.fixture(scope="module")
def loaded(tmp_path_factory, tiny_sase_maker):
    """H = E (encoder none), one hop, one linear layer: p = softmax(W_c (sum_t a_t e_t) + b), a = softmax(w_2 tanh(W_1 e_t))."""
    run = tiny_sase_maker(tmp_path_factory.mktemp("runs") / "jw", encoder="none", r=1, coef=0.0, mlp_hidden=0)
    return open_source(str(run)).loaded


def by_hand(model, ids: list[int]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(a (n,), p (C,), the word embeddings (n, E)) of the word ids, from the weights."""
    e = model.embedding.weight[ids].double()  # (n, E)
    w1, w2 = model.attention.w_s1.weight.double(), model.attention.w_s2.weight.double()[0]  # (d_a, E), (d_a,)
    a = (torch.tanh(e @ w1.T) @ w2).softmax(0)  # (n,)
    linear = model.classifier[-1]
    p = (linear.weight.double() @ (a @ e) + linear.bias.double()).softmax(0)  # (C,)
    return a, p, e


def test_the_three_measures_by_hand(loaded):
    model = loaded.model
    ids = model_inputs(loaded, TEXT)[0][0].tolist()
    with torch.no_grad():
        a, p, e = by_hand(model, ids)
        wc = model.classifier[-1].weight.double()  # (C, E)
        # d p_c / d m = p_c (W_c - sum_k p_k W_k), c the predicted class; with A detached, d p_c / d e_t = a_t d p_c / d m
        c = int(p.argmax())
        dp_dm = p[c] * (wc[c] - p @ wc)  # (E,)
        xxe = (a * (e @ dp_dm)).abs()  # (n,)
        loo = []
        for t in range(len(ids)):  # deleted: the attention renormalised over the other words
            a2, p2, _ = by_hand(model, ids[:t] + ids[t + 1 :])
            loo.append(float((p2 - p).abs().mean()))
    got = jw_code_scores(loaded, TEXT)
    assert got.attention == pytest.approx(a.tolist(), abs=1e-6)
    assert got.gradient == pytest.approx((xxe / xxe.sum()).tolist(), abs=1e-6)
    assert got.loo == pytest.approx(loo, abs=1e-6)


@pytest.mark.parametrize("removal, fill", [("mask", UNK), ("pad", PAD)])
def test_leave_one_out_replacing_the_word(loaded, removal, fill):
    ids = model_inputs(loaded, TEXT)[0][0].tolist()
    with torch.no_grad():
        _, p, _ = by_hand(loaded.model, ids)
        loo = [float((by_hand(loaded.model, ids[:t] + [fill] + ids[t + 1 :])[1] - p).abs().mean()) for t in range(len(ids))]
    assert jw_code_scores(loaded, TEXT, removal).loo == pytest.approx(loo, abs=1e-6)


def test_removed_inputs_per_mode():
    tokens, keep = torch.tensor([[4, 5, 6]]), torch.ones(1, 3, dtype=torch.bool)
    cut, cut_keep = removed_inputs((tokens, keep), "delete")
    assert cut.tolist() == [[5, 6], [4, 6], [4, 5]] and cut_keep.shape == (3, 2)
    masked, masked_keep = removed_inputs((tokens, keep), "mask")
    assert masked.tolist() == [[UNK, 5, 6], [4, UNK, 6], [4, 5, UNK]] and bool(masked_keep.all())
    padded, _ = removed_inputs((tokens, keep), "pad")
    assert padded.tolist() == [[PAD, 5, 6], [4, PAD, 6], [4, 5, PAD]]
    t2 = torch.tensor([[7, 8]])
    assert removed_inputs((tokens, keep, t2, t2 > 0), "delete")[2].tolist() == [[7, 8]] * 3  # a pair's hypothesis, per row
    with pytest.raises(AttnkitError, match="removal 'blank'"):
        removed_inputs((tokens, keep), "blank")


def test_the_taus_and_which_of_their_rows_holds_each():
    s = TextScores(attention=[0.1, 0.5, 0.4], gradient=[0.2, 0.3, 0.5], loo=[0.3, 0.2, 0.1])
    # pairs (0,1), (0,2), (1,2): attention up, up, down; gradient up, up, up; loo down, down, down
    taus = jw_code_taus(s)
    assert taus == pytest.approx({"attention vs gradient": 1 / 3, "attention vs loo": -1 / 3, "gradient vs loo": -1.0})
    assert all(math.isnan(v) for v in jw_code_taus(TextScores([1.0], [1.0], [0.0])).values())


def test_a_model_without_attention_is_refused(tmp_path, tiny_sase_maker):
    loaded = open_source(str(tiny_sase_maker(tmp_path / "mean", pooling="mean"))).loaded
    with pytest.raises(AttnkitError, match="attention pooling"):
        jw_code_scores(loaded, TEXT)
