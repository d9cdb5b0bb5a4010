"""Head importance, pruning order and the pruning curve (Michel et al. 2019)."""

import pytest
import torch
import torch.nn.functional as F

from attnkit.analysis.importance import head_importance, heads_before_drop, mask_first, pruning_curve, pruning_order, random_order
from attnkit.errors import AttnkitError
from attnkit.models.transformer import HeadMask, Transformer

C = torch.tensor([[3.0, -4.0, 0.0], [1.0, 2.0, -2.0]])  # d loss / d mask of a linear loss


def linear_loss(mask, batch):
    return (C * batch * mask).sum()


def test_importance_is_the_summed_absolute_gradient():
    # Batches scale the gradient by +1 and -1: |C| + |-C| = 2|C| (the absolute value is taken per batch).
    raw = head_importance(linear_loss, [1.0, -1.0], (2, 3), normalise=False)
    assert torch.allclose(raw, 2 * C.abs())
    # Normalised per layer by the L2 norm: layer 0 [3, 4, 0] / 5, layer 1 [1, 2, 2] / 3.
    got = head_importance(linear_loss, [1.0, -1.0], (2, 3))
    assert torch.allclose(got, torch.tensor([[0.6, 0.8, 0.0], [1 / 3, 2 / 3, 2 / 3]]))


def test_pruning_order_and_masks():
    imp = torch.tensor([[0.6, 0.8, 0.0], [1 / 3, 2 / 3, 2 / 3]])
    order = pruning_order(imp)
    assert order == [(0, 2), (1, 0), (0, 0), (1, 1), (1, 2), (0, 1)]  # ties: lower index first
    assert torch.equal(mask_first(order, 2, (2, 3)), torch.tensor([[1.0, 1, 0], [0, 1, 1]]))
    shuffled = random_order((2, 3), seed=1)
    assert sorted(shuffled) == sorted(order) and shuffled == random_order((2, 3), seed=1)


def test_pruning_curve_and_heads_before_drop():
    # The metric is 100 minus 10 per masked head of layer 1 (layer 0 heads cost nothing).
    def metric(mask):
        return 100.0 - 10.0 * float((1 - mask[1]).sum())

    order = [(0, 0), (0, 1), (1, 0), (0, 2), (1, 1), (1, 2)]
    curve = pruning_curve(metric, order, (2, 3))
    assert curve == [(0, 100.0), (1, 100.0), (2, 100.0), (3, 90.0), (4, 90.0), (5, 80.0), (6, 70.0)]
    assert heads_before_drop(curve, drop=1.0) == 2
    assert heads_before_drop(curve, drop=10.0) == 4
    assert heads_before_drop([(0, 2.0), (3, 2.5)], drop=1.0, higher_is_better=False) == 3
    with pytest.raises(AttnkitError, match="cannot mask 7 of 6"):
        pruning_curve(metric, order, (2, 3), counts=[7])


def test_importance_through_the_transformer_head_mask():
    # d loss / d mask reaches every encoder head of attnkit's Transformer and differs between heads.
    torch.manual_seed(0)
    V = 19
    model = Transformer(src_vocab_size=V, tgt_vocab_size=V, d_model=16, n_heads=4, d_ff=32, encoder_layers=2, decoder_layers=1, dropout=0.0).eval()
    g = torch.Generator().manual_seed(1)
    src, tgt = torch.randint(4, V, (3, 6), generator=g), torch.randint(4, V, (3, 5), generator=g)
    keep = torch.ones(3, 6, dtype=torch.bool)

    def loss(mask, targets):
        logits = model(src, keep, tgt, HeadMask(encoder=mask))  # (B, T, V)
        return F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1))

    batches = [torch.randint(4, V, (3, 5), generator=g) for _ in range(2)]
    imp = head_importance(loss, batches, (2, 4))
    assert imp.shape == (2, 4) and torch.all(imp > 0)
    assert torch.allclose(imp.norm(dim=-1), torch.ones(2))
    assert len(set(imp.reshape(-1).tolist())) == 8
