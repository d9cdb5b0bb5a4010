import numpy as np
import torch

from attnkit.attention.additive import AdditiveAttention
from attnkit.attention.masks import padding_mask


def _scores_by_hand(attn: AdditiveAttention, s: torch.Tensor, h: torch.Tensor) -> np.ndarray:
    """e_ij = v_a^T tanh(W_a s_i + U_a h_j) (Bahdanau et al. 2015, A.1.2), numpy loops."""
    w, u, v = (p.detach().numpy() for p in (attn.w_a.weight, attn.u_a.weight, attn.v_a.weight[0]))
    s, h = s.detach().numpy(), h.detach().numpy()
    e = np.zeros((s.shape[0], s.shape[1], h.shape[1]))
    for b in range(s.shape[0]):
        for i in range(s.shape[1]):
            for j in range(h.shape[1]):
                e[b, i, j] = v @ np.tanh(w @ s[b, i] + u @ h[b, j])
    return e


def test_scores_weights_and_context_match_the_equations(assert_mask_rule):
    attn = AdditiveAttention(query_dim=5, key_dim=6, attn_dim=7)
    s, h = torch.randn(2, 3, 5), torch.randn(2, 4, 6)
    keep = padding_mask(torch.tensor([4, 2]))  # (B, 1, S)
    context, weights = attn(s, h, h, keep)
    e = _scores_by_hand(attn, s, h)
    e = np.where(keep.numpy(), e, -np.inf)
    alpha = np.exp(e - e.max(-1, keepdims=True))
    alpha /= alpha.sum(-1, keepdims=True)  # eq. 6 over the kept keys
    np.testing.assert_allclose(weights.detach().numpy(), alpha, atol=1e-6)
    np.testing.assert_allclose(context.detach().numpy(), alpha @ h.numpy(), atol=1e-6)  # eq. 5
    assert_mask_rule(weights, keep)


def test_projected_keys_computed_once_give_the_same_result():
    attn = AdditiveAttention(4, 6, 5)
    h = torch.randn(2, 7, 6)
    uh = attn.project_keys(h)  # (B, S, A), once per source sentence
    for _ in range(3):  # decoder steps, Tq = 1
        s = torch.randn(2, 1, 4)
        a = attn(s, h, h)
        b = attn(s, None, h, projected_keys=uh)
        torch.testing.assert_close(a[0], b[0])
        torch.testing.assert_close(a[1], b[1])


def test_all_masked_row_and_gradcheck(assert_mask_rule):
    attn = AdditiveAttention(3, 4, 5).double()
    s = torch.randn(2, 2, 3, dtype=torch.float64, requires_grad=True)
    h = torch.randn(2, 4, 4, dtype=torch.float64, requires_grad=True)
    keep = padding_mask(torch.tensor([3, 0]), max_len=4)  # example 1 has no key
    context, weights = attn(s, h, h, keep)
    assert_mask_rule(weights, keep)
    assert (context[1] == 0).all()
    assert torch.autograd.gradcheck(lambda s, h: attn(s, h, h, keep)[0], (s, h))
