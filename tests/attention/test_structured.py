import numpy as np
import torch

from attnkit.attention.structured import StructuredSelfAttention, frobenius_penalty


def test_annotation_matrix_and_embedding_match_the_equations(assert_mask_rule):
    attn = StructuredSelfAttention(d_in=6, d_a=5, r=3)
    h = torch.randn(2, 4, 6)
    keep = torch.tensor([[True, True, True, True], [True, True, False, False]])  # (B, S)
    m, a = attn(h, keep)
    assert m.shape == (2, 3, 6) and a.shape == (2, 3, 4)
    w1, w2 = attn.w_s1.weight.detach().numpy(), attn.w_s2.weight.detach().numpy()
    for b in range(2):
        hb = h[b].numpy()[keep[b].numpy()]  # the valid tokens, (n, 2u)
        e = w2 @ np.tanh(w1 @ hb.T)  # W_s2 tanh(W_s1 H^T), (r, n)
        a_ref = np.exp(e - e.max(1, keepdims=True))
        a_ref /= a_ref.sum(1, keepdims=True)  # softmax over the n tokens
        np.testing.assert_allclose(a[b, :, : len(hb)].detach().numpy(), a_ref, atol=1e-6)
        np.testing.assert_allclose(m[b].detach().numpy(), a_ref @ hb, atol=1e-6)  # M = A H
    assert_mask_rule(a, keep.unsqueeze(1))


def test_all_masked_example_and_gradcheck(assert_mask_rule):
    attn = StructuredSelfAttention(4, 3, 2).double()
    h = torch.randn(2, 3, 4, dtype=torch.float64, requires_grad=True)
    keep = torch.tensor([[True, True, False], [False, False, False]])
    m, a = attn(h, keep)
    assert_mask_rule(a, keep.unsqueeze(1))
    assert (m[1] == 0).all()
    assert torch.autograd.gradcheck(lambda h: attn(h, keep)[0], (h,))


def test_penalty_values():
    r, s = 4, 6
    identical = torch.zeros(1, r, s)
    identical[..., 2] = 1.0  # r copies of one one-hot row: A A^T = all ones
    assert frobenius_penalty(identical).item() == r * (r - 1)  # r(r-1) off-diagonal ones
    distinct = torch.eye(s)[:r].unsqueeze(0)  # r different one-hot rows: A A^T = I
    assert frobenius_penalty(distinct).item() == 0.0
    # by hand: A = [[.5, .5], [.5, .5]] -> A A^T - I = [[-.5, .5], [.5, -.5]] -> sum of squares 1
    assert frobenius_penalty(torch.full((1, 2, 2), 0.5)).item() == 1.0
    both = torch.cat([identical, distinct])
    assert frobenius_penalty(both).tolist() == [r * (r - 1), 0.0]  # per example; the mean is the caller's


def test_penalty_ignores_examples_without_tokens():
    a = torch.zeros(2, 3, 4)
    a[0] = torch.eye(4)[:3]
    keep = torch.tensor([[True] * 4, [False] * 4])
    assert frobenius_penalty(a).tolist() == [0.0, 3.0]  # zero A -> ||-I||^2 = r
    assert frobenius_penalty(a, keep).tolist() == [0.0, 0.0]


def test_penalty_gradcheck():
    a = torch.softmax(torch.randn(2, 3, 5, dtype=torch.float64), -1).requires_grad_()
    assert torch.autograd.gradcheck(frobenius_penalty, (a,))
