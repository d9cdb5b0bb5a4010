import numpy as np
import torch

from attnkit.attention.conv_block import ConvSelfAttention


def test_gamma_zero_is_identity(assert_mask_rule):
    block = ConvSelfAttention(channels=16)  # gamma starts at 0 (SAGAN eq. 3)
    x = torch.randn(2, 16, 3, 4)
    y, weights = block(x)
    assert block.gamma.item() == 0.0
    assert torch.equal(y, x)
    assert weights.shape == (2, 12, 12)
    assert_mask_rule(weights, None)


def test_output_matches_sagan_equations_by_hand():
    block = ConvSelfAttention(channels=8, reduction=4)
    with torch.no_grad():
        block.gamma.fill_(0.7)
    x = torch.randn(1, 8, 2, 3)
    y, weights = block(x)

    def conv(layer, inp):  # a 1x1 convolution is W x + b at every position
        return layer.weight.detach()[:, :, 0, 0].numpy() @ inp + layer.bias.detach().numpy()[:, None]

    cols = x[0].reshape(8, 6).numpy()  # (C, P), positions in row-major order
    f, g, h = conv(block.k_conv, cols), conv(block.q_conv, cols), conv(block.v_conv, cols)
    s = f.T @ g  # s_ij = f(x_i)^T g(x_j), (P_i, P_j)
    beta = np.exp(s - s.max(0)) / np.exp(s - s.max(0)).sum(0)  # eq. 1: softmax over i, beta[i, j]
    o = conv(block.out_conv, h @ beta)  # eq. 2: o_j = v(sum_i beta_ji h(x_i))
    expected = 0.7 * o + cols  # eq. 3
    np.testing.assert_allclose(weights[0].detach().numpy(), beta.T, atol=1e-6)  # rows: position j
    np.testing.assert_allclose(y[0].reshape(8, 6).detach().numpy(), expected, atol=1e-5)


def test_fused_path_and_gradcheck():
    block = ConvSelfAttention(channels=4, reduction=2).double()
    with torch.no_grad():
        block.gamma.fill_(0.5)
    x = torch.randn(2, 4, 2, 3, dtype=torch.float64, requires_grad=True)
    explicit, _ = block(x)
    fused, none = block(x, need_weights=False)
    assert none is None
    torch.testing.assert_close(fused, explicit)
    assert torch.autograd.gradcheck(lambda x: block(x)[0], (x,))
