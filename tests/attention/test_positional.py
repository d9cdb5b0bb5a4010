import math

import pytest
import torch

from attnkit.attention.positional import LearnedPositionalEmbedding, SinusoidalPositionalEncoding, sinusoidal_encoding


def test_sinusoidal_values_of_section_3_5():
    pe = sinusoidal_encoding(4, 4, dtype=torch.float64)
    # by hand, d_model = 4: omega_0 = 1, omega_1 = 10000^(-2/4) = 0.01
    expected_pos3 = [math.sin(3), math.cos(3), math.sin(0.03), math.cos(0.03)]
    torch.testing.assert_close(pe[3], torch.tensor(expected_pos3, dtype=torch.float64), atol=1e-12, rtol=0)
    torch.testing.assert_close(pe[0], torch.tensor([0.0, 1.0, 0.0, 1.0], dtype=torch.float64))
    assert sinusoidal_encoding(3, 5).shape == (3, 5)  # odd width: last cosine dropped


def test_start_offset_selects_later_positions():
    full = sinusoidal_encoding(10, 8)
    torch.testing.assert_close(sinusoidal_encoding(4, 8, start=6), full[6:])


def test_fixed_offset_is_a_linear_map_equal_to_block_rotations():
    d_model, k = 16, 7
    table = sinusoidal_encoding(100_100, d_model, dtype=torch.float64)  # positions 0 .. 100,099
    g = torch.Generator().manual_seed(0)
    # positions spread over several periods of the slowest frequency (2 pi / omega_7 ~ 2e4) so the
    # least-squares problem is well conditioned (condition number ~2.3 with this seed)
    fit = torch.randint(0, 100_000, (64,), generator=g)
    check = torch.randint(0, 100_000, (1000,), generator=g)
    m_k = torch.linalg.lstsq(table[fit], table[fit + k]).solution.T  # PE(pos + k) = M_k PE(pos)
    torch.testing.assert_close(table[check] @ m_k.T, table[check + k], atol=1e-9, rtol=0)
    # sin(w(p+k)) = cos(wk) sin(wp) + sin(wk) cos(wp);  cos(w(p+k)) = -sin(wk) sin(wp) + cos(wk) cos(wp)
    omegas = [10000 ** (-2 * i / d_model) for i in range(d_model // 2)]
    rotation = torch.block_diag(*[torch.tensor([[math.cos(w * k), math.sin(w * k)], [-math.sin(w * k), math.cos(w * k)]], dtype=torch.float64) for w in omegas])
    torch.testing.assert_close(m_k, rotation, atol=1e-9, rtol=0)


def test_module_add_concat_and_step_by_step():
    x = torch.randn(2, 5, 8)
    add = SinusoidalPositionalEncoding(8)
    full = add(x)
    torch.testing.assert_close(full, x + sinusoidal_encoding(5, 8))
    for t in range(5):  # decoding one token at a time with its position
        torch.testing.assert_close(add(x[:, t : t + 1], start=t), full[:, t : t + 1])
    cat = SinusoidalPositionalEncoding(4, mode="concat")(x)
    assert cat.shape == (2, 5, 12)
    torch.testing.assert_close(cat[..., 8:], sinusoidal_encoding(5, 4).expand(2, 5, 4))
    assert torch.equal(cat[..., :8], x)
    assert len(list(add.parameters())) == 0 and len(add.state_dict()) == 0


def test_learned_positions():
    emb = LearnedPositionalEmbedding(max_len=6, d_model=4)
    x = torch.zeros(2, 3, 4)
    torch.testing.assert_close(emb(x, start=2), emb.embedding.weight[2:5].expand(2, 3, 4))
    assert LearnedPositionalEmbedding(6, 3, mode="concat")(x).shape == (2, 3, 7)
    with pytest.raises(ValueError, match="max_len"):
        emb(x, start=4)
    with pytest.raises(ValueError, match="mode"):
        LearnedPositionalEmbedding(6, 4, mode="sum")
