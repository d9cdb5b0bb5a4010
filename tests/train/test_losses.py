"""label_smoothed_nll (given logits or log-probs) against hand-computed cross-entropies with q'(k) = (1-eps)·δ(k,y) + eps/V."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from attnkit.models.losses import label_smoothed_nll

# V = 4, eps = 0.1, so eps/V = 0.025 and the gold class gets 0.9 + 0.025 = 0.925.
PROBS = torch.tensor(
    [
        [0.1, 0.2, 0.3, 0.4],  # gold 2
        [0.5, 0.25, 0.125, 0.125],  # gold 3
        [0.7, 0.1, 0.1, 0.1],  # gold 0 = padding, ignored
    ]
)
TARGET = torch.tensor([2, 3, 0])
# Row 1: -(.025 ln .1 + .025 ln .2 + .925 ln .3 + .025 ln .4) = 1.2343827
LOSS_1 = -(0.025 * math.log(0.1) + 0.025 * math.log(0.2) + 0.925 * math.log(0.3) + 0.025 * math.log(0.4))
# Row 2: all probabilities are powers of 1/2: .025 (1 + 2 + 3) ln 2 + .925 · 3 ln 2 = 2.925 ln 2 = 2.0274555
LOSS_2 = 2.925 * math.log(2)
NLL = -math.log(0.3) + math.log(8)  # -ln p(gold) of rows 1 and 2


def test_hand_computed_smoothing_and_ignore_index() -> None:
    assert LOSS_1 == pytest.approx(1.2343827, abs=1e-7)
    assert LOSS_2 == pytest.approx(2.0274555, abs=1e-7)
    loss, nll = label_smoothed_nll(PROBS.log(), TARGET, epsilon=0.1, ignore_index=0)
    assert loss.item() == pytest.approx(LOSS_1 + LOSS_2, rel=1e-6)
    assert nll.item() == pytest.approx(NLL, rel=1e-6)


def test_ignored_rows_change_nothing_even_if_extreme() -> None:
    log_probs = PROBS.log().clone()
    log_probs[2] = torch.tensor([0.0, -1e30, -1e30, -1e30])  # a padding row with absurd values
    loss, nll = label_smoothed_nll(log_probs, TARGET, epsilon=0.1)
    assert loss.item() == pytest.approx(LOSS_1 + LOSS_2, rel=1e-6)
    assert nll.item() == pytest.approx(NLL, rel=1e-6)


def test_epsilon_zero_is_nll_loss_sum() -> None:
    torch.manual_seed(0)
    log_probs = torch.randn(10, 7).log_softmax(-1)
    target = torch.tensor([0, 1, 2, 3, 4, 5, 6, 0, 3, 1])
    loss, nll = label_smoothed_nll(log_probs, target, epsilon=0.0, ignore_index=0)
    expected = F.nll_loss(log_probs, target, ignore_index=0, reduction="sum")
    torch.testing.assert_close(loss, expected)
    torch.testing.assert_close(nll, expected)


def test_other_ignore_index_and_gradient_of_padding() -> None:
    log_probs = PROBS.log().requires_grad_()
    loss, _ = label_smoothed_nll(log_probs, torch.tensor([2, 3, -100]), epsilon=0.1, ignore_index=-100)
    assert loss.item() == pytest.approx(LOSS_1 + LOSS_2, rel=1e-6)
    loss.backward()
    assert log_probs.grad[2].abs().sum().item() == 0.0  # padding gets no gradient
    # The input is taken as logits: d loss / d z(k) = p(k) - q'(k) on a counted row,
    # p = (.1, .2, .3, .4) and q' = (.025, .025, .925, .025).
    torch.testing.assert_close(log_probs.grad[0], torch.tensor([0.075, 0.175, -0.625, 0.375]))


def test_all_ignored_gives_zero() -> None:
    loss, nll = label_smoothed_nll(PROBS.log(), torch.zeros(3, dtype=torch.long))
    assert (loss.item(), nll.item()) == (0.0, 0.0)


def test_fused_gradient_equals_autograd_reference() -> None:
    # The reference: autograd through log_softmax and the explicit q' sum (module docstring).
    torch.manual_seed(0)
    logits = torch.randn(6, 9, dtype=torch.float64, requires_grad=True)
    target = torch.tensor([1, 0, 4, 8, 0, 2])
    log_p = logits.log_softmax(-1)
    keep = target != 0
    q = torch.full_like(log_p, 0.1 / 9).scatter_add(1, target[:, None], torch.full((6, 1), 0.9, dtype=torch.float64))
    expected = -(q * log_p).sum(-1)[keep].sum()
    expected.backward()
    reference = logits.grad.clone()
    logits.grad = None
    loss, nll = label_smoothed_nll(logits, target, epsilon=0.1)
    (3.0 * loss).backward()
    torch.testing.assert_close(loss.double(), expected, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(logits.grad, 3.0 * reference, rtol=1e-6, atol=1e-6)
    assert not nll.requires_grad


def test_bf16_logits_are_computed_in_float32() -> None:
    logits = PROBS.log().bfloat16().requires_grad_()
    loss, _ = label_smoothed_nll(logits, TARGET, epsilon=0.1)
    assert loss.dtype == torch.float32
    loss.backward()
    assert logits.grad.dtype == torch.bfloat16


@pytest.mark.parametrize("n_rows", [5, 700, 2100])  # one block; several with a short last one; several groups (ROWS_PER_GROUP)
def test_projected_equals_loss_on_materialised_logits(n_rows: int) -> None:
    # logits = x W^T computed block by block must give the loss and both gradients of autograd
    # through the plain formula (float64 reference).
    torch.manual_seed(0)
    x = torch.randn(n_rows, 16, dtype=torch.float64, requires_grad=True)
    weight = torch.randn(11, 16, dtype=torch.float64, requires_grad=True)
    target = torch.randint(0, 11, (n_rows,))
    log_p = (x @ weight.T).log_softmax(-1)
    keep = target != 0
    q = torch.full_like(log_p, 0.1 / 11).scatter_add(1, target[:, None], torch.full((n_rows, 1), 0.9, dtype=torch.float64))
    expected = -(q * log_p).sum(-1)[keep].sum()
    expected.backward()
    ref_x, ref_w = x.grad.clone(), weight.grad.clone()
    x.grad = weight.grad = None
    loss, nll = label_smoothed_nll(x, target, weight=weight, epsilon=0.1)
    (2.0 * loss).backward()
    torch.testing.assert_close(loss.double(), expected, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(nll.double(), F.nll_loss(log_p, target, ignore_index=0, reduction="sum"), rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(x.grad, 2.0 * ref_x, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(weight.grad, 2.0 * ref_w, rtol=1e-5, atol=1e-6)


def test_projected_under_bf16_autocast_matches_float32_closely() -> None:
    torch.manual_seed(0)
    x = torch.randn(300, 32, requires_grad=True)
    weight = torch.randn(50, 32, requires_grad=True)
    target = torch.randint(1, 50, (300,))
    reference, _ = label_smoothed_nll(x, target, weight=weight, epsilon=0.1)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss, _ = label_smoothed_nll(x, target, weight=weight, epsilon=0.1)
    loss.backward()
    assert loss.dtype == torch.float32 and x.grad.dtype == weight.grad.dtype == torch.float32
    assert abs(loss.item() - reference.item()) / reference.item() < 0.02


def test_mismatched_shapes_are_refused() -> None:
    with pytest.raises(ValueError, match="weight \\(5, 4\\)"):
        label_smoothed_nll(torch.randn(4, 3), torch.tensor([1, 2, 3, 4]), weight=torch.randn(5, 4))
