import math

import torch

from attnkit.attention.masks import causal_mask, combine_masks, masked_softmax, padding_mask


def test_padding_mask_from_lengths_and_from_keep():
    keep = padding_mask(torch.tensor([3, 1]), max_len=4)
    # expected written by hand: position j < length
    expected = torch.tensor([[[True, True, True, False]], [[True, False, False, False]]])
    assert keep.dtype == torch.bool and torch.equal(keep, expected)
    assert padding_mask(torch.tensor([3, 1])).shape == (2, 1, 3)  # S defaults to max length
    assert torch.equal(padding_mask(expected.squeeze(1)), expected)


def test_causal_mask_square_and_offset_for_cached_decoding():
    # by hand: query i sees keys 0..i
    assert torch.equal(causal_mask(3), torch.tensor([[1, 0, 0], [1, 1, 0], [1, 1, 1]], dtype=torch.bool))
    # by hand: 2 new queries at positions 2 and 3 of 4 keys (2 already cached)
    assert torch.equal(causal_mask(2, 4), torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]], dtype=torch.bool))
    # the last row of a full causal mask is what one decoding step uses
    assert torch.equal(causal_mask(1, 5), causal_mask(5)[-1:])


def test_combine_masks_is_broadcast_and_ignores_none():
    keep = padding_mask(torch.tensor([2, 3]), max_len=3)  # (2, 1, 3)
    combined = combine_masks(keep, None, causal_mask(3))
    # by hand: row i of example b keeps j <= i and j < length_b
    expected = torch.tensor([[[1, 0, 0], [1, 1, 0], [1, 1, 0]], [[1, 0, 0], [1, 1, 0], [1, 1, 1]]], dtype=torch.bool)
    assert torch.equal(combined, expected)
    assert combine_masks(None, None) is None


def test_masked_softmax_hand_values():
    scores = torch.tensor([[1.0, 2.0, 3.0], [0.5, -1.0, 4.0]])
    keep = torch.tensor([[True, True, False], [False, False, False]])
    weights = masked_softmax(scores, keep)
    z = math.exp(1) + math.exp(2)  # softmax over the two kept keys, computed with math.exp
    expected = torch.tensor([[math.exp(1) / z, math.exp(2) / z, 0.0], [0.0, 0.0, 0.0]])
    torch.testing.assert_close(weights, expected, atol=1e-7, rtol=0)
    assert weights[0, 2].item() == 0.0 and (weights[1] == 0).all()


def test_masked_softmax_without_mask_is_softmax():
    scores = torch.randn(2, 3, 5)
    torch.testing.assert_close(masked_softmax(scores, None), torch.softmax(scores, -1))


def test_masked_softmax_rule_on_broadcast_masks(assert_mask_rule):
    scores = torch.randn(2, 4, 3, 5) * 10
    keep = combine_masks(padding_mask(torch.tensor([5, 0]), max_len=5).unsqueeze(1), causal_mask(3, 5))
    weights = masked_softmax(scores, keep)
    assert_mask_rule(weights, keep)
    # kept keys: the ordinary softmax over those keys only (example 0, head 1, row 1 sees keys 0..3)
    torch.testing.assert_close(weights[0, 1, 1, :4], torch.softmax(scores[0, 1, 1, :4], -1))


def test_masked_softmax_other_dim():
    scores = torch.randn(4, 3)
    keep = torch.tensor([[True], [False], [True], [True]])  # mask along dim 0
    weights = masked_softmax(scores, keep, dim=0)
    torch.testing.assert_close(weights.sum(0), torch.ones(3))
    assert (weights[1] == 0).all()


def test_masked_softmax_gradients_finite_and_correct():
    scores = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    keep = torch.tensor([[True, True, False, True], [False] * 4, [True, False, False, False]])
    assert torch.autograd.gradcheck(lambda s: masked_softmax(s, keep), (scores,))
    assert torch.autograd.gradgradcheck(lambda s: masked_softmax(s, keep), (scores,))
    (masked_softmax(scores, keep) * torch.randn(3, 4, dtype=torch.float64)).sum().backward()
    assert torch.isfinite(scores.grad).all()
    assert (scores.grad[~keep] == 0).all()  # masked keys and the empty row get no gradient
