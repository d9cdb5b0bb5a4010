import numpy as np
import pytest
import torch

from attnkit.attention.luong import AttentionalLayer, LuongAttention
from attnkit.attention.masks import padding_mask


def _score_by_hand(attn: LuongAttention, h_t: np.ndarray, h_s: np.ndarray) -> float:
    """Luong et al. 2015, eq. 8, for one (target, source) pair."""
    if attn.score == "dot":
        return float(h_t @ h_s)
    w_a = attn.w_a.weight.detach().numpy()
    if attn.score == "general":
        return float(h_t @ (w_a @ h_s))
    v_a = attn.v_a.weight.detach().numpy()[0]
    return float(v_a @ np.tanh(w_a @ np.concatenate([h_t, h_s])))


@pytest.mark.parametrize("score", ["dot", "general", "concat"])
def test_scores_match_equation_8(score, assert_mask_rule):
    key_dim = 5 if score == "dot" else 6
    attn = LuongAttention(5, key_dim, score=score, attn_dim=7)
    h_t, h_s = torch.randn(2, 3, 5), torch.randn(2, 4, key_dim)
    keep = padding_mask(torch.tensor([4, 3]))
    context, weights = attn(h_t, h_s, h_s, keep)
    e = np.zeros((2, 3, 4))
    for b in range(2):
        for i in range(3):
            for j in range(4):
                e[b, i, j] = _score_by_hand(attn, h_t[b, i].numpy(), h_s[b, j].numpy())
    e = np.where(keep.numpy(), e, -np.inf)
    a = np.exp(e - e.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)  # eq. 7
    np.testing.assert_allclose(weights.detach().numpy(), a, atol=1e-5)
    np.testing.assert_allclose(context.detach().numpy(), a @ h_s.numpy(), atol=1e-5)
    assert_mask_rule(weights, keep)
    # the source-only part computed once gives the same result
    again, _ = attn(h_t, None, h_s, keep, projected_keys=attn.project_keys(h_s))
    torch.testing.assert_close(again, context)


@pytest.mark.parametrize("score", ["dot", "general", "concat"])
def test_all_masked_row_and_gradcheck(score, assert_mask_rule):
    attn = LuongAttention(4, 4, score=score).double()
    h_t = torch.randn(2, 2, 4, dtype=torch.float64, requires_grad=True)
    h_s = torch.randn(2, 3, 4, dtype=torch.float64, requires_grad=True)
    keep = padding_mask(torch.tensor([2, 0]), max_len=3)
    context, weights = attn(h_t, h_s, h_s, keep)
    assert_mask_rule(weights, keep)
    assert (context[1] == 0).all()
    assert torch.autograd.gradcheck(lambda q, k: attn(q, k, k, keep)[0], (h_t, h_s))


def test_attentional_layer_is_equation_5():
    layer = AttentionalLayer(context_dim=3, query_dim=4, out_dim=5)
    c, h = torch.randn(2, 1, 3), torch.randn(2, 1, 4)
    w_c = layer.w_c.weight.detach().numpy()
    expected = np.tanh(np.concatenate([c.numpy(), h.numpy()], -1) @ w_c.T)  # tanh(W_c [c_t; h_t])
    np.testing.assert_allclose(layer(c, h).detach().numpy(), expected, atol=1e-6)


def test_invalid_arguments():
    with pytest.raises(ValueError, match="score"):
        LuongAttention(4, 4, score="bilinear")
    with pytest.raises(ValueError, match="dot"):
        LuongAttention(4, 5, score="dot")
