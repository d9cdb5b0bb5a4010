import numpy as np
import torch

from attnkit.attention.spatial import SpatialAttention, flatten_grid, unflatten_weights


def test_grid_and_flat_features_give_the_same_attention():
    attn = SpatialAttention(query_dim=5, feature_dim=4, attn_dim=6)
    grid = torch.randn(2, 3, 2, 4)  # (B, gh, gw, C)
    query = torch.randn(2, 1, 5)
    context, weights = attn(query, grid)
    flat_context, flat_weights = attn(query, grid.reshape(2, 6, 4))
    assert context.shape == (2, 1, 4) and weights.shape == (2, 1, 6)
    torch.testing.assert_close(context, flat_context)
    torch.testing.assert_close(weights, flat_weights)
    again, _ = attn(query, grid, projected_features=attn.project_features(grid))
    torch.testing.assert_close(again, context)


def test_scores_match_soft_attention_by_hand(assert_mask_rule):
    attn = SpatialAttention(3, 4, 5)
    grid, query = torch.randn(1, 2, 3, 4), torch.randn(1, 2, 3)
    keep = torch.tensor([[True, True, False, True, True, True]]).unsqueeze(1)  # (B, 1, P)
    context, weights = attn(query, grid, keep)
    f = attn.f_att
    w_a, w_h, w = (p.detach().numpy() for p in (f.u_a.weight, f.w_a.weight, f.v_a.weight[0]))
    for t in range(2):
        h = query[0, t].numpy()
        cells = [(i, j) for i in range(2) for j in range(3)]  # row-major, P = 6
        e = np.array([w @ np.tanh(w_a @ grid[0, i, j].numpy() + w_h @ h) for i, j in cells])
        e[2] = -np.inf  # cell (0, 2) is masked
        alpha = np.exp(e - e.max())
        alpha /= alpha.sum()
        z = sum(alpha[p] * grid[0, i, j].numpy() for p, (i, j) in enumerate(cells))  # z_t = sum_i alpha_ti a_i
        np.testing.assert_allclose(weights[0, t].detach().numpy(), alpha, atol=1e-6)
        np.testing.assert_allclose(context[0, t].detach().numpy(), z, atol=1e-6)
    assert_mask_rule(weights, keep)


def test_unflatten_round_trip():
    features = torch.randn(2, 3, 4, 5)
    flat = flatten_grid(features)
    assert torch.equal(flat[:, 1 * 4 + 2], features[:, 1, 2])  # cell index = row * gw + col
    weights = torch.softmax(torch.randn(2, 7, 12), -1)
    maps = unflatten_weights(weights, 3, 4)
    assert maps.shape == (2, 7, 3, 4)
    assert torch.equal(maps[:, :, 1, 2], weights[:, :, 6])
    assert torch.equal(flatten_grid(maps.reshape(14, 3, 4, 1)).reshape(2, 7, 12), weights)


def test_all_masked_row_and_gradcheck(assert_mask_rule):
    attn = SpatialAttention(3, 2, 4).double()
    query = torch.randn(2, 1, 3, dtype=torch.float64, requires_grad=True)
    grid = torch.randn(2, 2, 2, 2, dtype=torch.float64, requires_grad=True)
    keep = torch.tensor([[True, False, True, True], [False] * 4]).unsqueeze(1)
    context, weights = attn(query, grid, keep)
    assert_mask_rule(weights, keep)
    assert (context[1] == 0).all()
    assert torch.autograd.gradcheck(lambda q, g: attn(q, g, keep)[0], (query, grid))
