"""Attention rollout on a hand-computed 3-layer case (Abnar & Zuidema 2020), and cross rollout."""

import pytest
import torch

from attnkit.analysis.rollout import cross_rollout, rollout, rollout_per_layer, with_residual
from attnkit.errors import AttnkitError

# Raw head-mean attention of three layers over T = 2 tokens (input layer first), and by hand:
#   A'_1 = 0.5 A_1 + 0.5 I = [[1, 0], [.5, .5]],  A'_2 = [[.5, .5], [0, 1]],  A'_3 = I
#   rollout = A'_3 A'_2 A'_1 = [[.5*1 + .5*.5, .5*.5], [.5, .5]] = [[.75, .25], [.5, .5]]
A1 = torch.tensor([[1.0, 0.0], [1.0, 0.0]])
A2 = torch.tensor([[0.0, 1.0], [0.0, 1.0]])
A3 = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
OTHER = torch.tensor([[0.0, 1.0], [1.0, 0.0]])  # a second head that the head set leaves out


def layers_two_heads():
    """Head 0 holds A_l; head 1 is OTHER: the mean over both heads differs from head 0 alone."""
    return [torch.stack([a, OTHER]) for a in (A1, A2, A3)]  # (H=2, T, T) each


def test_rollout_of_the_hand_case_with_a_head_set():
    got = rollout(layers_two_heads(), heads=[0])
    assert torch.allclose(got, torch.tensor([[0.75, 0.25], [0.5, 0.5]]))


def test_rollout_head_mean_averages_the_heads_first():
    # Head mean of A_l and OTHER, then A' = 0.5 M + 0.5 I: layer 1 [[.75, .25], [.5, .5]], layer 2 [[.5, .5], [.25, .75]],
    # layer 3 [[.75, .25], [.25, .75]]; product computed by hand step by step:
    # A'_2 A'_1 = [[.625, .375], [.5625, .4375]]; A'_3 (.) = [[.609375, .390625], [.578125, .421875]]
    got = rollout(layers_two_heads())
    assert torch.allclose(got, torch.tensor([[0.609375, 0.390625], [0.578125, 0.421875]]))
    per_layer = rollout_per_layer(layers_two_heads())
    assert per_layer.shape == (3, 2, 2)
    assert torch.allclose(per_layer[1], torch.tensor([[0.625, 0.375], [0.5625, 0.4375]]))


def test_residual_rows_are_renormalised():
    # A row that does not sum to 1 (padding left a partial row) is renormalised after adding I.
    a = torch.tensor([[0.5, 0.0], [0.2, 0.2]])
    got = with_residual(a)
    assert torch.allclose(got, torch.tensor([[1.0, 0.0], [0.1 / 0.7, 0.6 / 0.7]]))


def test_rollout_rows_sum_to_one_on_random_attention():
    torch.manual_seed(0)
    layers = [torch.softmax(torch.randn(4, 6, 6), dim=-1) for _ in range(5)]
    got = rollout(layers)
    assert torch.allclose(got.sum(dim=-1), torch.ones(6), atol=1e-6)


def test_cross_rollout_composes_cross_attention_with_the_encoder_rollout():
    # Encoder: the hand case above (S = 2), head 0 only. Cross attention of the chosen (last) decoder layer:
    # target 0 reads source 0, target 1 splits .5/.5, target 2 reads source 1. C R_enc by hand:
    #   [1, 0] R = [.75, .25];  [.5, .5] R = [.625, .375];  [0, 1] R = [.5, .5]
    enc = layers_two_heads()
    c = torch.tensor([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]])
    first = torch.full((2, 3, 2), 0.5)  # an earlier decoder layer, ignored with layer=-1
    cross = [first, torch.stack([c, c.flip(-1)])]  # (H=2, T_tgt=3, S=2)
    got = cross_rollout(enc, cross, heads=[0])
    assert torch.allclose(got, torch.tensor([[0.75, 0.25], [0.625, 0.375], [0.5, 0.5]]))
    # layer=None averages C over the decoder layers: ((C) + (.5 everywhere)) / 2, then times R.
    mean_c = (c + 0.5) / 2
    assert torch.allclose(cross_rollout(enc, cross, heads=[0], layer=None), mean_c @ torch.tensor([[0.75, 0.25], [0.5, 0.5]]))


def test_bad_inputs_are_one_line_errors():
    with pytest.raises(AttnkitError, match="no attention layers"):
        rollout([])
    with pytest.raises(AttnkitError, match="does not fit a layer of 2 heads"):
        rollout(layers_two_heads(), heads=[2])
    with pytest.raises(AttnkitError, match="3 source positions, the encoder 2"):
        cross_rollout(layers_two_heads(), [torch.full((2, 1, 3), 1 / 3)])
